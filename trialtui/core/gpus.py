"""What a GPU can do at best: datasheet ceilings until `trialtui calibrate` measures them.

Every number carries its source ("datasheet" or "calibrated") so a floor time or a speed-of-light
fraction never passes a vendor's peak off as a measurement. Calibrated ceilings live in a small
JSON cache keyed by GPU name and driver, since a new driver can change what the card reaches.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

DATASHEET = "datasheet"
CALIBRATED = "calibrated"
_MIB = 1024 * 1024


@dataclass(frozen=True)
class Ceilings:
    """Peak DRAM bandwidth and dense matrix throughput per dtype (None: the GPU lacks it)."""

    gpu: str
    hbm_gbps: float
    tflops: dict[str, float | None]
    l2_bytes: int | None
    sm_count: int | None
    source: str
    driver: str | None = None
    measured_at: float | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def peak_tflops(self, dtype: str) -> float | None:
        return self.tflops.get(dtype)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Ceilings:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def _sheet(name, hbm, bf16, fp16, tf32, fp32, l2_mib, sms):
    tflops = {"bfloat16": bf16, "float16": fp16, "tf32": tf32, "float32": fp32}
    return Ceilings(name, float(hbm), tflops, int(l2_mib * _MIB), sms, DATASHEET)


# Dense (no sparsity) tensor-core TFLOP/s with fp32 accumulation; fp32 is the CUDA-core rate.
# Patterns are tried in order, so the specific variants come before the family's fallback.
_DATASHEETS: list[tuple[str, Ceilings]] = [
    (r"H200 NVL", _sheet("NVIDIA H200 NVL", 4800, 835.5, 835.5, 417.5, 60.0, 60, 132)),
    (r"H200", _sheet("NVIDIA H200", 4800, 989.4, 989.4, 494.7, 66.9, 60, 132)),
    (r"H100 NVL", _sheet("NVIDIA H100 NVL", 3900, 835.5, 835.5, 417.5, 60.0, 50, 132)),
    (r"H100.*PCIe", _sheet("NVIDIA H100 PCIe", 2039, 756.5, 756.5, 378.0, 51.2, 50, 114)),
    (r"H100", _sheet("NVIDIA H100 SXM", 3350, 989.4, 989.4, 494.7, 66.9, 50, 132)),
    (r"A100.*80GB.*PCIe|A100.*PCIe.*80GB", _sheet("NVIDIA A100 80GB PCIe", 1935, 312, 312, 156, 19.5, 40, 108)),
    (r"A100.*80GB", _sheet("NVIDIA A100 SXM 80GB", 2039, 312, 312, 156, 19.5, 40, 108)),
    (r"A100", _sheet("NVIDIA A100 40GB", 1555, 312, 312, 156, 19.5, 40, 108)),
    (r"L40S", _sheet("NVIDIA L40S", 864, 362.1, 362.1, 183.2, 91.6, 96, 142)),
    (r"(?<![A-Za-z0-9])L4(?![A-Za-z0-9])", _sheet("NVIDIA L4", 300, 121.0, 121.0, 60.0, 30.3, 48, 58)),
    (r"T4(?![0-9])", _sheet("Tesla T4", 320, None, 65.0, None, 8.1, 4, 40)),
    # GeForce halves the tensor rate with fp32 accumulation: 165 TFLOP/s, not the 330 advertised.
    (r"RTX 4090", _sheet("NVIDIA GeForce RTX 4090", 1008, 165.2, 165.2, 82.6, 82.6, 72, 128)),
]

# Per-SM occupancy limits by compute capability: max warps, registers, shared bytes, blocks.
SM_LIMITS: dict[int, tuple[int, int, int, int]] = {
    75: (32, 65536, 65536, 16),
    80: (64, 65536, 167936, 32),
    86: (48, 65536, 102400, 16),
    89: (48, 65536, 102400, 24),
    90: (64, 65536, 233472, 32),
}


def datasheet(gpu_name: str) -> Ceilings | None:
    """The datasheet entry whose pattern matches the device name (torch or ncu spelling)."""
    for pattern, sheet in _DATASHEETS:
        if re.search(pattern, gpu_name, re.IGNORECASE):
            return sheet
    return None


def known_names(path: Path | None = None) -> list[str]:
    """Every GPU with ceilings here: the datasheets' and those `trialtui calibrate` measured."""
    measured = {e.get("gpu") for e in _read_cache(path or cache_path()).values() if isinstance(e, dict)}
    sheets = [sheet.gpu for _, sheet in _DATASHEETS]
    return sheets + sorted(name for name in measured if isinstance(name, str) and name not in sheets)


def sm_limits(capability: int) -> tuple[int, int, int, int] | None:
    """Occupancy limits for e.g. 90 (sm_90), or the nearest older architecture we know."""
    older = [cc for cc in SM_LIMITS if cc <= capability]
    return SM_LIMITS[max(older)] if older else None


def cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "trialtui" / "ceilings.json"


def _key(gpu: str, driver: str | None) -> str:
    return f"{gpu}|{driver or 'unknown'}"


def _read_cache(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def calibrated(gpu_name: str, driver: str | None = None, path: Path | None = None) -> Ceilings | None:
    """Measured ceilings for this GPU and driver; without a driver, the newest for the GPU."""
    entries = _read_cache(path or cache_path())
    if driver is not None:
        entry = entries.get(_key(gpu_name, driver))
        return Ceilings.from_dict(entry) if isinstance(entry, dict) else None
    mine = [e for e in entries.values() if isinstance(e, dict) and e.get("gpu") == gpu_name]
    if not mine:
        return None
    return Ceilings.from_dict(max(mine, key=lambda e: e.get("measured_at") or 0))


def ceilings_for(gpu_name: str, driver: str | None = None, path: Path | None = None) -> Ceilings | None:
    """Calibrated ceilings when this GPU was measured, else the datasheet, else None."""
    return calibrated(gpu_name, driver, path) or datasheet(gpu_name)


def save_calibrated(ceilings: Ceilings, path: Path | None = None) -> Path:
    """Store measured ceilings (atomically) so every later analysis uses them."""
    path = path or cache_path()
    measured = replace(ceilings, source=CALIBRATED, measured_at=ceilings.measured_at or time.time())
    entries = _read_cache(path)
    entries[_key(measured.gpu, measured.driver)] = measured.to_dict()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(entries, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
    return path
