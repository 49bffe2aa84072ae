"""The job-result envelope and the baseline cache keys."""

import json

import pytest

from trialtui.core.baselines import BaselineCache
from trialtui.core.result import ResultError, check_result


def test_well_formed_result_is_accepted():
    check_result({"version": 1, "state": "correct", "speedup": {"eager": 1.2}, "flags": []})


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"state": "correct"},
        {"version": 2, "state": "correct"},
        {"version": 1, "state": "exploded"},
        {"version": 1, "state": "error", "timing": [1, 2]},
        {"version": 1, "state": "correct", "flags": "none"},
        {"version": 1, "state": "incorrect", "speedup": {"eager": 3.0}},
    ],
)
def test_malformed_results_are_rejected(bad):
    with pytest.raises(ResultError):
        check_result(bad)


KEY = {"ref_hash": "abc", "sizes": {"n": 1}, "dtype": "bfloat16", "allow_tf32": False, "cuda_graph": False}
ENV = {"gpu": "NVIDIA H200", "torch": "2.11.0", "triton": "3.6.0"}


@pytest.mark.parametrize("field,other", [
    ("ref_hash", "abd"), ("sizes", {"n": 2}), ("dtype", "float16"), ("allow_tf32", True), ("cuda_graph", True),
])
def test_baseline_cache_key_holds_everything_that_changes_a_baseline(tmp_path, field, other):
    cache = BaselineCache(tmp_path)
    cache.record(KEY, ENV, {"eager": {"median_us": 10.0, "cached": False}})
    found = cache.lookup(KEY)
    assert found["eager"]["median_us"] == 10.0 and found["eager"]["cached"] is True
    assert found["eager"]["env"] == ENV
    assert cache.lookup({**KEY, field: other}) == {}


@pytest.mark.parametrize("env_field", ["gpu", "torch", "triton"])
def test_baseline_cache_keeps_one_entry_per_environment(tmp_path, env_field):
    cache = BaselineCache(tmp_path)
    cache.record(KEY, ENV, {"eager": {"median_us": 10.0}})
    cache.record(KEY, {**ENV, env_field: "other"}, {"eager": {"median_us": 20.0}})
    assert len(json.loads((tmp_path / "baselines.json").read_text())) == 2
    assert cache.lookup(KEY)["eager"]["median_us"] == 20.0  # the newest, labelled with its env
    assert cache.lookup(KEY)["eager"]["env"][env_field] == "other"


def test_cached_or_given_baselines_are_not_written_back(tmp_path):
    cache = BaselineCache(tmp_path)
    cache.record(KEY, ENV, {"eager": {"median_us": 5.0, "cached": True}, "compile": {"median_us": 4.0, "given": True}})
    assert cache.lookup(KEY) == {}
