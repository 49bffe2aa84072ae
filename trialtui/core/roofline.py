"""Roofline floors: the least time a kernel could take, and how far a measured time is from it.

t_floor = max(FLOPs / peak, bytes_min / bandwidth); the larger term names the bound. The speed-of-
light fraction floor / measured is the one number that says how much headroom is left.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
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


def physical_floor(flops: float, min_bytes: float, dtype: str, gpu_name: str, allow_tf32: bool = False,
                   written_bytes: float = 0.0) -> Roofline | None:
    """The floor no honest headline can beat: the work at the GPU's datasheet ceilings (its peak DRAM
    bandwidth and its fastest dense tensor rate). Not the calibrated ones: a measured copy bandwidth is no
    ceiling (an honest bias + GELU kernel reached 101 % of it on the H200), and the calibration file
    lives where a candidate can write. The output's writes (`written_bytes`) up to L2's size may reach DRAM
    after the kernel's end event: only the rest is the call's traffic (an honest fp32 softmax 8192 × 1024 read
    20.06 µs on an H100, 32 MB in and out, against 20.03 µs for all 64 MB at its 3.35 TB/s). None for a GPU
    without a datasheet entry."""
    from trialtui.core.gpus import datasheet

    sheet = datasheet(gpu_name)
    if sheet is None or min_bytes <= 0:
        return None
    # the fastest dense math of the chip, whatever the dtype: an fp32 problem may be solved correctly with
    # split tensor-core products (3xTF32), so its floor is not the CUDA cores' fp32 rate
    rates = [r for r in sheet.tflops.values() if r]
    peak = max(rates) * (2 if dtype.startswith("float8") else 1) if rates else None
    fastest = replace(sheet, tflops={compute_dtype(dtype, allow_tf32): peak})
    in_l2 = min(max(written_bytes, 0.0), float(sheet.l2_bytes or 0))
    return roofline(flops, min_bytes - in_l2, dtype, fastest, allow_tf32)


def impossible_message(floor: Roofline, median_us: float) -> str | None:
    """Why a headline below the physical floor cannot be the work done, naming both numbers; None above it."""
    if median_us >= floor.floor_us:
        return None
    memory = (f"{floor.min_bytes / 1e6:.1f} MB that must cross DRAM within the call at {floor.hbm_gbps / 1000:.2f} TB/s = "
              f"{floor.memory_us:.1f} µs")
    compute = (f"{floor.flops / 1e9:.1f} GFLOP at {floor.peak_tflops:g} TFLOP/s ({floor.compute_dtype}) = "
               f"{floor.compute_us:.1f} µs" if floor.peak_tflops and floor.flops else "no FLOPs counted")
    return (f"{median_us:.1f} µs is below the physical floor of {floor.floor_us:.1f} µs on {floor.gpu} "
            f"({memory}; {compute}; {floor.source} ceilings): the timing misses work")
