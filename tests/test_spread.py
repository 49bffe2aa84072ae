"""The noise band of a median comes from its percentiles: one slow sample must not turn a real
regression into a tie (RMSNorm v4 on the H200, 2026-12-02: a mean-based rse of 9.2 %)."""

from __future__ import annotations

import random

from conftest import as_result

from trialtui.core.spread import timing_rse


def samples_with_one_outlier(median_us: float) -> list[float]:
    rng = random.Random(4)
    samples = [median_us * (1 + rng.gauss(0, 0.003)) for _ in range(159)]
    return samples + [6000.0]  # one preempted call


def test_one_outlier_leaves_the_medians_error_where_the_other_samples_put_it():
    from trialtui.runner.timing import median_rse, summarize

    clean = summarize(samples_with_one_outlier(218.0)[:-1])
    hit = summarize(samples_with_one_outlier(218.0))
    assert hit["std_us"] > 100 * clean["std_us"]  # the mean's error would be ~10 % of the median
    assert hit["rse"] < 0.001 and abs(hit["rse"] - clean["rse"]) < 0.0002
    assert median_rse(samples_with_one_outlier(218.0)) < 0.001


def test_a_stored_mean_based_rse_is_read_from_its_percentiles_instead():
    stored = {"median_us": 218.416, "p20_us": 217.760, "p80_us": 219.488, "n": 160, "rse": 0.0916}  # the H200's v4
    assert timing_rse(stored) < 0.001
    assert timing_rse({"median_us": 100.0, "rse": 0.02}) == 0.02  # no percentiles: the stored figure
    assert timing_rse({}) is None


def test_a_two_percent_regression_past_an_outlier_is_slower_not_a_tie():
    from trialtui.core.decide_evidence import _compare  # noqa: PLC2701 (the comparison decide makes)
    from trialtui.core.model import Trial
    from trialtui.runner.timing import summarize

    def trial(tid: str, samples: list[float]) -> Trial:
        return Trial(tid, "k.py", tid, 0.0, "correct", result=as_result({"state": "correct", "timing": summarize(samples),
                                                                      "env": {"device": "cuda"}}))

    before = trial("t3", samples_with_one_outlier(213.2)[:-1])
    after = trial("t4", samples_with_one_outlier(218.4))
    change = _compare(after, before, "eager")
    assert change.outcome == "slower", (change.text(), change.noise_text())
