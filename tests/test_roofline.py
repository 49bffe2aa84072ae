"""Ceilings (datasheet until calibrated) and roofline floors."""

from __future__ import annotations

import pytest

from trialtui.core import gpus
from trialtui.core.gpus import CALIBRATED, DATASHEET, Ceilings, calibrated, ceilings_for, datasheet, save_calibrated
from trialtui.core.roofline import roofline, sol_fraction


@pytest.mark.parametrize("device_name, sheet", [
    ("NVIDIA H200", "NVIDIA H200"),
    ("NVIDIA H200 NVL", "NVIDIA H200 NVL"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
    ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
    ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB"),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM 80GB"),
    ("NVIDIA A100 80GB PCIe", "NVIDIA A100 80GB PCIe"),
    ("NVIDIA L40S", "NVIDIA L40S"),
    ("NVIDIA L4", "NVIDIA L4"),
    ("Tesla T4", "Tesla T4"),
    ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"),
])
def test_device_names_match_their_datasheet(device_name, sheet):
    found = datasheet(device_name)
    assert found is not None and found.gpu == sheet and found.source == DATASHEET


def test_unknown_gpu_has_no_datasheet():
    assert datasheet("Some Future GPU") is None and ceilings_for("Some Future GPU") is None


def test_datasheet_numbers_are_dense_and_per_dtype():
    h200 = datasheet("NVIDIA H200")
    assert h200.hbm_gbps == 4800 and h200.peak_tflops("bfloat16") == pytest.approx(989.4)
    assert h200.peak_tflops("float32") == pytest.approx(66.9) and h200.sm_count == 132
    assert datasheet("Tesla T4").peak_tflops("bfloat16") is None  # no bf16 tensor cores on Turing


def measured(driver: str = "580.159.04", hbm: float = 4300.0, at: float = 1.0) -> Ceilings:
    return Ceilings("NVIDIA H200", hbm, {"bfloat16": 790.0, "float16": 790.0, "tf32": 400.0, "float32": 51.0},
                    62914560, 132, CALIBRATED, driver, measured_at=at)


def test_calibrated_ceilings_override_the_datasheet_for_the_same_driver(tmp_path):
    cache = tmp_path / "ceilings.json"
    save_calibrated(measured(), cache)
    found = ceilings_for("NVIDIA H200", "580.159.04", cache)
    assert found.source == CALIBRATED and found.hbm_gbps == 4300.0
    assert ceilings_for("NVIDIA H200", "590.1", cache).source == DATASHEET  # a new driver: measure again
    assert ceilings_for("NVIDIA H100 PCIe", "580.159.04", cache).source == DATASHEET


def test_without_a_driver_the_newest_calibration_serves(tmp_path):
    cache = tmp_path / "ceilings.json"
    save_calibrated(measured("570.1", hbm=4100.0, at=1.0), cache)
    save_calibrated(measured("580.159.04", hbm=4300.0, at=2.0), cache)
    assert calibrated("NVIDIA H200", None, cache).hbm_gbps == 4300.0


def test_cache_lives_under_the_user_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert gpus.cache_path() == tmp_path / "trialtui" / "ceilings.json"
    save_calibrated(measured())
    assert calibrated("NVIDIA H200", "580.159.04").source == CALIBRATED


def test_a_corrupt_cache_falls_back_to_the_datasheet(tmp_path):
    cache = tmp_path / "ceilings.json"
    cache.write_text("{not json")
    assert ceilings_for("NVIDIA H200", "580.159.04", cache).source == DATASHEET


def test_elementwise_add_is_memory_bound_with_a_bytes_floor():
    n = 2**28
    roof = roofline(n, 3 * n * 4, "float32", measured())
    assert roof.bound == "memory" and roof.intensity == pytest.approx(1 / 12)
    assert roof.floor_us == pytest.approx(3 * n * 4 / 4300e9 * 1e6)
    assert roof.ridge == pytest.approx(51e12 / 4300e9) and roof.source == CALIBRATED


def test_bf16_matmul_is_compute_bound_at_the_tensor_peak():
    n = 8192
    roof = roofline(2 * n**3, 3 * n * n * 2, "bfloat16", measured())
    assert roof.bound == "compute" and roof.ridge == pytest.approx(790e12 / 4300e9)
    assert roof.floor_us == pytest.approx(2 * n**3 / 790e12 * 1e6)
    assert roof.sol(roof.floor_us * 1.25) == pytest.approx(0.8)


def test_fp32_uses_tf32_peak_only_when_allowed():
    n = 8192
    assert roofline(2 * n**3, 3 * n * n * 4, "float32", measured()).peak_tflops == 51.0
    assert roofline(2 * n**3, 3 * n * n * 4, "float32", measured(), allow_tf32=True).compute_dtype == "tf32"


def test_a_dtype_without_a_rate_leaves_only_the_memory_floor():
    roof = roofline(1e12, 1e9, "bfloat16", datasheet("Tesla T4"))
    assert roof.bound == "memory" and roof.compute_us == 0 and roof.ridge is None


def test_sol_fraction_needs_both_numbers():
    assert sol_fraction(80.0, 100.0) == pytest.approx(0.8)
    assert sol_fraction(None, 100.0) is None and sol_fraction(80.0, None) is None and sol_fraction(80.0, 0) is None


def test_roofline_round_trips_through_json_dicts():
    roof = roofline(2 * 1024**3, 3 * 1024 * 1024 * 2, "float16", measured())
    assert type(roof).from_dict(roof.to_dict()) == roof
