"""Roofline floors: the least time a kernel could take, and how far a measured time is from it.

t_floor = max(FLOPs / peak, bytes_min / bandwidth); the larger term names the bound. The speed-of-
light fraction floor / measured is the one number that says how much headroom is left.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from trialtui.core.gpus import Ceilings


@dataclass(frozen=True)
class Roofline:
    flops: float
    min_bytes: float
    compute_dtype: str
    peak_tflops: float | None
    hbm_gbps: float
    intensity: float | None  # FLOP per byte of the minimum traffic
    ridge: float | None  # FLOP per byte where the two roofs meet
    bound: str  # "memory" | "compute"
    compute_us: float
    memory_us: float
    floor_us: float
    gpu: str
    source: str  # the ceilings' source: "datasheet" | "calibrated"

    def sol(self, measured_us: float | None) -> float | None:
        return sol_fraction(self.floor_us, measured_us)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Roofline:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})


def compute_dtype(dtype: str, allow_tf32: bool = False) -> str:
    """The ceiling an fp32 problem may use: TF32 tensor cores only when the config allows it."""
    return "tf32" if dtype == "float32" and allow_tf32 else dtype


def roofline(flops: float, min_bytes: float, dtype: str, ceilings: Ceilings, allow_tf32: bool = False) -> Roofline:
    """Floors at `ceilings`; a dtype the GPU has no tensor rate for counts as memory-bound only."""
    cdtype = compute_dtype(dtype, allow_tf32)
    peak = ceilings.peak_tflops(cdtype)
    compute_us = flops / (peak * 1e12) * 1e6 if peak and flops else 0.0
    memory_us = min_bytes / (ceilings.hbm_gbps * 1e9) * 1e6
    intensity = flops / min_bytes if min_bytes else None
    ridge = peak * 1e12 / (ceilings.hbm_gbps * 1e9) if peak else None
    return Roofline(
        flops=float(flops),
        min_bytes=float(min_bytes),
        compute_dtype=cdtype,
        peak_tflops=peak,
        hbm_gbps=ceilings.hbm_gbps,
        intensity=intensity,
        ridge=ridge,
        bound="compute" if compute_us > memory_us else "memory",
        compute_us=compute_us,
        memory_us=memory_us,
        floor_us=max(compute_us, memory_us),
        gpu=ceilings.gpu,
        source=ceilings.source,
    )


def sol_fraction(floor_us: float | None, measured_us: float | None) -> float | None:
    """floor / measured; None when either is unknown or the measurement is not positive."""
    if not floor_us or not measured_us or measured_us <= 0:
        return None
    return floor_us / measured_us
