"""The job-result envelope and the baseline cache keys."""

import pytest

from trialtui.core.baselines import BaselineCache, matching
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


def test_baseline_cache_reuses_only_an_exact_key(tmp_path):
    cache = BaselineCache(tmp_path)
    env = {"gpu": "NVIDIA H200", "torch": "2.11.0"}
    cache.record("abc", {"n": 1}, "bfloat16", env, {"eager": {"median_us": 10.0, "cached": False}})
    found = cache.candidates("abc", {"n": 1}, "bfloat16")
    assert matching(found, "NVIDIA H200", "2.11.0", ["eager"]) == {"eager": {"median_us": 10.0}}
    # every part of the key invalidates
    assert cache.candidates("abd", {"n": 1}, "bfloat16") == []
    assert cache.candidates("abc", {"n": 2}, "bfloat16") == []
    assert cache.candidates("abc", {"n": 1}, "float16") == []
    assert matching(found, "NVIDIA H100", "2.11.0", ["eager"]) == {}
    assert matching(found, "NVIDIA H200", "2.13.0", ["eager"]) == {}
    assert matching(found, "NVIDIA H200", "2.11.0", ["compile"]) == {}


def test_cached_or_given_baselines_are_not_written_back(tmp_path):
    cache = BaselineCache(tmp_path)
    env = {"gpu": "G", "torch": "t"}
    cache.record("h", {}, "float32", env, {"eager": {"median_us": 5.0, "cached": True},
                                           "compile": {"median_us": 4.0, "given": True}})
    assert cache.candidates("h", {}, "float32") == []
