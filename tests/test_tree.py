"""The tree rules: save, best, budget, strategy labels and the drawing, on hand-built trials."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import as_result

from trialtui.core import tree
from trialtui.core.flags import DISQUALIFYING
from trialtui.core.model import Trial, TrialState


def trial(tid, *, sha="s", file="k.py", parent=None, state="detected", speedup=None, note=None, strategy=None,
          device=None, flags=(), sol=None):
    result = None
    if speedup is not None:
        result = {"speedup": {"eager": speedup}, "timing": {"median_us": 100 / speedup},
                  "baselines": {"eager": {"median_us": 100.0}}, "env": {"device": "cuda"}}
    if device is not None:
        result = {**(result or {}), "env": {"device": device}}
    if flags:
        result = {**(result or {}), "flags": [{"code": code, "message": f"{code} seen"} for code in flags]}
    return Trial(id=tid, file=file, sha256=sha, created=0.0, parent=parent, state=state,
                 result=as_result({"state": "correct", **result}) if result is not None else None,  # measured correct
                 note=note, strategy=strategy, sol=sol)


FIXTURES = Path(__file__).parent / "fixtures" / "gpu"
CHAIN = [trial("t1", sha="a"), trial("t2", sha="b", parent="t1"), trial("t3", sha="c", parent="t2")]


def test_save_equal_to_head_creates_nothing():
    assert tree.on_save(CHAIN, {"k.py": "t3"}, "k.py", "c") == tree.Save(tree.UNCHANGED, head="t3")


def test_save_equal_to_another_trial_of_the_file_checks_it_out():
    assert tree.on_save(CHAIN, {"k.py": "t3"}, "k.py", "a") == tree.Save(tree.CHECKOUT, head="t1")


def test_checkout_goes_to_the_first_trial_with_that_content():
    trials = [*CHAIN, trial("t4", sha="a", parent="t3")]
    assert tree.on_save(trials, {"k.py": "t3"}, "k.py", "a").head == "t1"


def test_new_content_is_a_child_of_the_head_not_of_the_latest_trial():
    assert tree.on_save(CHAIN, {"k.py": "t2"}, "k.py", "new") == tree.Save(tree.NEW, parent="t2")


def test_content_of_another_files_trial_is_still_a_child_of_this_files_head():
    trials = [*CHAIN, trial("t4", sha="x", file="other.py")]
    assert tree.on_save(trials, {"k.py": "t3", "other.py": "t4"}, "k.py", "x") == tree.Save(tree.NEW, parent="t3")


def test_new_file_copied_from_a_trial_descends_from_it():
    assert tree.on_save(CHAIN, {"k.py": "t3"}, "copy.py", "b") == tree.Save(tree.NEW, parent="t2")


def test_new_file_with_new_content_is_a_root():
    assert tree.on_save(CHAIN, {"k.py": "t3"}, "fresh.py", "zzz") == tree.Save(tree.NEW, parent=None)


def test_first_save_of_all_is_a_root():
    assert tree.on_save([], {}, "k.py", "a") == tree.Save(tree.NEW, parent=None)


def test_head_naming_a_missing_trial_is_no_head():
    assert tree.on_save(CHAIN, {"k.py": "t99"}, "k.py", "new") == tree.Save(tree.NEW, parent=None)


def test_best_is_the_highest_speedup_among_correct_trials():
    trials = [trial("t1", state="correct", speedup=1.2), trial("t2", state="correct", speedup=2.5),
              trial("t3", state="correct", speedup=1.9)]
    assert tree.best(trials).id == "t2"


@pytest.mark.parametrize("state", ["incorrect", "invalid", "error", "timeout", "interrupted", "benchmarking"])
def test_a_trial_that_is_not_correct_is_never_best_whatever_its_numbers(state):
    trials = [trial("t1", state="correct", speedup=1.1), trial("t2", state=state, speedup=9.0)]
    assert tree.best(trials).id == "t1"


def test_speedup_tie_goes_to_the_earlier_trial_by_number_not_by_text():
    trials = [trial("t10", state="correct", speedup=2.0), trial("t9", state="correct", speedup=2.0)]
    assert tree.best(trials).id == "t9"


def test_best_is_against_the_given_baseline():
    t1 = trial("t1", state="correct", speedup=3.0)
    t2 = trial("t2", state="correct", speedup=1.0)
    t2.result.speedup["compile"] = 1.5
    assert tree.best([t1, t2], "compile").id == "t2"


def test_correct_trial_without_speedup_such_as_a_cpu_run_is_not_best():
    assert tree.best([trial("t1", state="correct")]) is None


def test_no_correct_trial_means_no_best():
    assert tree.best([trial("t1", state="incorrect", speedup=2.0)]) is None


@pytest.mark.parametrize("code", sorted(DISQUALIFYING))
def test_a_disqualifying_flag_keeps_a_trial_from_best_whatever_its_speedup(code):
    trials = [trial("t1", state="correct", speedup=1.1), trial("t2", state="correct", speedup=40.0, flags=[code])]
    assert tree.best(trials).id == "t1"
    assert tree.disqualified(trials[1])[0].startswith(f"{code}: {code} seen")
    assert f"FLAGGED, never best: {code}" in tree.summary(trials[1])


@pytest.mark.parametrize("code", ["tie", "bf16-emulated", "trivial-reference", "some-future-note"])
def test_an_informative_flag_does_not_keep_a_trial_from_best(code):
    trials = [trial("t1", state="correct", speedup=1.1), trial("t2", state="correct", speedup=2.0, flags=[code])]
    assert tree.best(trials).id == "t2" and tree.disqualified(trials[1]) == []


def test_the_disqualifying_set_names_every_cheating_and_implausibility_code():
    assert DISQUALIFYING == {"side-stream", "suspicious", "no-custom-kernel", "no-kernel", "timing-patched",
                             "timing-mismatch", "fallback", "sol-implausible", "impossible", "noisy"}
    assert not DISQUALIFYING & {"tie", "bf16-emulated", "trivial-reference"}


def test_speed_of_light_above_100_percent_disqualifies_on_its_own():
    trials = [trial("t1", state="correct", speedup=1.1), trial("t2", state="correct", speedup=2.0, sol=1.3)]
    assert tree.best(trials).id == "t1"
    assert "speed-of-light 130%" in tree.disqualified(trials[1])[0]
    trials[1].sol = 1.0
    assert tree.best(trials).id == "t2"


def test_a_suspicious_speedup_stands_only_when_a_speed_of_light_under_100_percent_confirms_it():
    t2 = trial("t2", state="correct", speedup=12.9, flags=["suspicious"])
    assert tree.best([trial("t1", state="correct", speedup=1.1), t2]).id == "t1"
    t2.sol = 0.83  # the RMSNorm story's v7: 12.9x eager at 83% of copy bandwidth is real
    assert tree.best([trial("t1", state="correct", speedup=1.1), t2]).id == "t2"


def test_the_repos_side_stream_fixture_is_never_best():
    bad = json.loads((FIXTURES / "bad_side_stream.json").read_text())
    flagged = Trial(id="t2", file="k.py", sha256="x", created=0.0, state="correct", result=as_result(bad))
    good = trial("t1", state="correct", speedup=1.2)
    assert tree.best([good, flagged]).id == "t1"
    assert tree.best([flagged]) is None
    assert "t2 is flagged (side-stream" in tree.no_best_reason([flagged])


def test_no_best_on_a_cpu_only_tree_says_a_gpu_timing_is_needed_and_names_the_correct_trials():
    trials = [trial("t1", state="correct", device="cpu"), trial("t2", state="incorrect", device="cpu"),
              trial("t3", state="correct", device="cpu", parent="t1")]
    assert tree.best(trials) is None
    assert tree.correct_on_cpu(trials[0]) and not tree.correct_on_cpu(trials[1])
    reason = tree.no_best_reason(trials)
    assert "t1, t3 are correct on CPU, not timed" in reason and "GPU timing" in reason
    assert tree.summary(trials[0]) == "correct on CPU, not timed"
    assert tree.no_best_reason([trial("t1", state="incorrect")]) == "no correct trial yet"


@pytest.mark.parametrize(
    "state, counts",
    [(s.value, s in {TrialState.BENCHMARKING, TrialState.PROFILING, TrialState.CORRECT, TrialState.INCORRECT,
                     TrialState.ERROR, TrialState.TIMEOUT}) for s in TrialState],
)
def test_budget_counts_only_trials_that_reached_the_gpu(state, counts):
    assert tree.budget_used([trial("t1", state=state, device="cuda")]) == int(counts)


@pytest.mark.parametrize("state", ["correct", "incorrect", "error", "timeout"])
def test_cpu_runs_and_jobs_without_a_result_spend_no_gpu_budget(state):
    assert tree.budget_used([trial("t1", state=state, device="cpu"), trial("t2", state=state)]) == 0
    assert tree.budget_used([trial("t1", state=state, device="cpu"), trial("t2", state=state, device="cuda")]) == 1


def test_invalid_and_interrupted_trials_are_free():
    trials = [trial("t1", state="invalid"), trial("t2", state="interrupted"), trial("t3", state="correct", device="cuda")]
    assert tree.budget(trials, 2) == tree.Budget(used=1, limit=2)


def test_budget_is_spent_at_the_limit():
    trials = [trial(f"t{i}", state="incorrect", device="cuda") for i in range(1, 4)]
    assert tree.budget(trials, 3).spent and tree.budget(trials, 3).left == 0
    assert not tree.budget(trials, 4).spent and tree.budget(trials, 4).left == 1


def test_strategy_comes_from_a_strategy_comment_line():
    source = "import triton\n\n  #  Strategy:  tile 128, 8 warps  \nx = 1\n"
    assert tree.parse_strategy(source) == "tile 128, 8 warps"
    assert tree.parse_strategy(source.encode()) == "tile 128, 8 warps"


@pytest.mark.parametrize("source", ["x = 1\n", 'msg = "# strategy: in a string"\n', "# strategy:\n"])
def test_no_strategy_comment_means_no_label(source):
    assert tree.parse_strategy(source) is None


def test_a_note_labels_a_trial_over_its_strategy_comment():
    assert tree.label(trial("t1", strategy="tile")) == "tile"
    assert tree.label(trial("t1", strategy="tile", note="the fast one")) == "the fast one"


def test_drawing_marks_best_head_icons_and_speedups():
    trials = [trial("t1", sha="a", state="correct", speedup=1.0, strategy="naive"),
              trial("t2", sha="b", parent="t1", state="incorrect", strategy="tile"),
              trial("t3", sha="c", parent="t1", state="correct", speedup=1.42)]
    text = tree.render_tree(trials, best_id="t3", heads={"k.py": "t3"})
    assert text.splitlines() == [
        "[+] t1 k.py: 1.00x (bl=100us, tr=100us) | naive",
        "├── [X] t2: incorrect | tile",
        "└── [+] t3: 1.42x (bl=100us, tr=70us) ▸ head <<< BEST",
    ]


def test_several_children_hang_under_their_parent_as_branches_with_their_own_subtrees():
    trials = [trial("t1"), trial("t2", parent="t1"), trial("t3", parent="t2"), trial("t4", parent="t2"),
              trial("t5", parent="t1")]
    assert tree.render_tree(trials).splitlines() == [
        "[~] t1 k.py: detected",
        "├── [~] t2: detected",
        "│   ├── [~] t3: detected",
        "│   └── [~] t4: detected",
        "└── [~] t5: detected",
    ]


def test_a_line_restarted_from_an_older_trial_is_drawn_under_it_not_after_the_newest():
    """t8 (child of t3) must not read as following t7 (issue 18.6)."""
    trials = [trial("t1"), trial("t2", parent="t1"), trial("t3", parent="t2")]
    trials += [trial("t4", parent="t3")] + [trial(f"t{i}", parent=f"t{i - 1}") for i in (5, 6, 7)]
    trials += [trial("t8", parent="t3"), trial("t9", parent="t8")]
    assert tree.render_tree(trials).splitlines() == [
        "[~] t1 k.py: detected",
        "[~] t2: detected",
        "[~] t3: detected",
        "├── [~] t4: detected",
        "│   [~] t5: detected",
        "│   [~] t6: detected",
        "│   [~] t7: detected",
        "└── [~] t8: detected",
        "    [~] t9: detected",
    ]


def test_roots_are_apart_and_a_file_is_named_where_it_changes():
    trials = [trial("t1"), trial("t2", file="b.py", parent="t1"), trial("t3", file="c.py"),
              trial("t4", state="cancelled", file="c.py", parent="t3")]
    assert tree.render_tree(trials).splitlines() == [
        "[~] t1 k.py: detected",
        "[~] t2 b.py: detected",
        "",
        "[~] t3 c.py: detected",
        "[-] t4: cancelled",
    ]


def test_a_long_run_of_saves_stays_in_one_column():
    trials = [trial("t1")] + [trial(f"t{i}", parent=f"t{i - 1}") for i in range(2, 5001)]
    lines = tree.render_tree(trials).splitlines()
    assert len(lines) == 5000
    assert all(line.startswith("[~] t") for line in lines)


def test_long_strategy_is_cut_to_trial_managers_width():
    text = tree.render_tree([trial("t1", strategy="x" * 100)])
    assert text.endswith("| " + "x" * tree.LABEL_WIDTH)
