"""Real H200 profiles of five planted kernels (benches/gpu_profile_check.py, 2026-11-29, ncu 2025.3.1):
each verdict must name the problem that was planted, from the CSVs alone."""

from pathlib import Path


from conftest import as_profile
from trialtui.core import ncu
from trialtui.core.gpus import Ceilings
from trialtui.core.roofline import roofline
from trialtui.core.profilers import verdicts_for_profile
from trialtui.core.verdicts import Context
from trialtui.runner.profile_job import _kernel

HERE = Path(__file__).parent / "fixtures" / "ncu-h200" / "planted"
# measured on the H200 in the same run: calibrated ceilings and each kernel's event-timed median
H200 = Ceilings.from_dict(__import__("json").loads((HERE / "ceilings.json").read_text())["NVIDIA H200|580.159.04"])
MM, COPY_N, ROWS = 4096, 2**28, 16384
PLANTED = {  # kind: (flops, min bytes, dtype, matmul-like, measured µs)
    "copy": (0, 8 * COPY_N, "float32", False, 529.94),
    "strided": (0, 8 * ROWS * ROWS, "float32", False, 1981.7),
    "mm_nodot": (2 * MM**3, 3 * MM * MM * 2, "bfloat16", True, 16295.0),
    "mm_dot": (2 * MM**3, 3 * MM * MM * 2, "bfloat16", True, 228.7),
    "reg_heavy": (0, 0, "float32", False, 232.2),
}


def verdict_ids(kind: str) -> tuple[list[str], dict]:
    raw = ncu.parse_raw((HERE / f"{kind}_raw.csv").read_text())
    details = ncu.parse_details((HERE / f"{kind}_details.csv").read_text())
    kernels = [_kernel(k) for k in ncu.merge(raw, details)]
    body = {"available": True, "kernels": kernels}
    flops, min_bytes, dtype, matmul, measured = PLANTED[kind]
    roof = roofline(flops, min_bytes, dtype, H200) if min_bytes else None
    ctx = Context(roofline=roof, measured_us=measured, matmul_like=matmul)
    return [v.id for v in verdicts_for_profile(as_profile(body), ctx)], ncu.dominant(kernels)["metrics"]


def test_bandwidth_bound_copy_near_peak_is_at_speed_of_light():
    ids, _ = verdict_ids("copy")
    assert "at_sol" in ids
    assert "memory_low_bw" not in ids and "uncoalesced" not in ids


def test_strided_loads_are_called_uncoalesced_and_low_bandwidth():
    ids, _ = verdict_ids("strided")
    assert {"uncoalesced", "memory_low_bw"} <= set(ids)
    assert "at_sol" not in ids


def test_matmul_without_dot_has_tensor_cores_idle():
    ids, _ = verdict_ids("mm_nodot")
    assert "tensor_cores_idle" in ids


def test_matmul_with_dot_uses_wgmma_and_is_not_blamed():
    ids, metrics = verdict_ids("mm_dot")
    assert "tensor_cores_idle" not in ids
    gmma = [v for k, v in metrics.items() if "gmma" in k and isinstance(v, (int, float))]
    assert gmma and max(gmma) > 0


def test_register_heavy_kernel_has_low_occupancy_limited_by_registers():
    ids, metrics = verdict_ids("reg_heavy")
    assert "low_occupancy" in ids
    assert metrics.get("launch__registers_per_thread", 0) > 128
