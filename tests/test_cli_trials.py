"""`trialtui trials …` through click's runner, finalize's report card, and the trial_manager round trip."""

from __future__ import annotations

import copy
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import as_profile, as_result, write_problem

from trialtui.cli.trials import trials
from trialtui.core.problem_dir import load_problem
from trialtui.core.report import build_report
from trialtui.core.result import CPU_TIMING_LABEL
from trialtui.core.store import Store

GPU_RESULT = {
    "version": 1,
    "state": "correct",
    "correctness": {"seeds": 5, "cases": 1, "passed": True, "max_abs_err": 3.1e-6, "max_rel_err": 2.0e-5,
                    "mismatch_frac": 0.0, "first_mismatch": None, "message": "", "launches": 5},
    "timing": {"median_us": 41.2, "min_us": 40.1, "p20_us": 40.8, "p80_us": 41.9, "mean_us": 41.4, "std_us": 0.6,
               "n": 200, "rse": 0.0011, "kernel_us": 39.8, "host_wall_us": 45.0, "cuda_graph": False,
               "label": "GPU, CUDA events, L2 flushed, median"},
    "baselines": {
        "eager": {"median_us": 98.1, "min_us": 97.0, "p20_us": 97.5, "p80_us": 99.0, "mean_us": 98.2,
                  "std_us": 0.7, "n": 200, "rse": 0.001, "cached": False},
        "compile": {"median_us": 60.3, "min_us": 59.8, "p20_us": 60.0, "p80_us": 60.9, "mean_us": 60.4,
                    "std_us": 0.4, "n": 200, "rse": 0.001, "cached": False},
    },
    "speedup": {"eager": 98.1 / 41.2, "compile": 60.3 / 41.2},
    "flags": [{"code": "tie", "message": "vs compile: inside the noise band"}],
    "env": {"device": "cuda", "torch": "2.11.0", "triton": "3.6.0", "python": "3.11.9", "gpu": "NVIDIA H200",
            "sm_count": 132, "l2_bytes": 62914560, "capability": "9.0", "cuda": "12.8", "driver": "570.86.15"},
    "sizes": [{"batch_size": 4096, "dim": 8192}],
    "dtype": "float16",
    "message": "",
}
CPU_RESULT = {
    **GPU_RESULT,
    "timing": {"median_us": 6476.3, "min_us": 1949.2, "p20_us": 1949.2, "p80_us": 7402.5, "mean_us": 5276.0,
               "std_us": 2918.1, "n": 3, "rse": 0.32, "kernel_us": None, "label": CPU_TIMING_LABEL},
    "baselines": {},
    "speedup": None,
    "flags": [],
    "env": {"device": "cpu", "torch": "2.13.0+cpu", "triton": "3.9.0", "gpu": None, "interpreted": True},
    "sizes": [{"batch_size": 8, "dim": 32}],
    "dtype": "float32",
}
CONFIG = 'baselines = ["eager", "compile"]\nmax_trials = 3\n'


def result_with(speedup: float) -> dict:
    result = copy.deepcopy(GPU_RESULT)
    result["speedup"] = {"eager": speedup, "compile": speedup / 1.6}
    result["timing"]["median_us"] = 98.1 / speedup
    return result


@pytest.fixture
def problem(kb_problem: Path) -> Path:
    """kernel.py saved three times: t1 correct 1.2x, t2 incorrect, t3 (from t1) correct 2.4x and head."""
    (kb_problem / "trialtui.toml").write_text(CONFIG)
    with Store.open(kb_problem) as store:
        store.record("kernel.py", (kb_problem / "kernel.py").read_bytes())
        store.update("t1", state="correct", result=as_result(result_with(1.2)))
        store.record("kernel.py", "# strategy: unrolled\nbroken = True\n")
        store.update("t2", state="incorrect", result=as_result({**GPU_RESULT, "state": "incorrect", "speedup": None}))
        store.set_head("kernel.py", "t1")
        store.record("kernel.py", "# strategy: tile 64\nfast = True\n")
        store.update("t3", state="correct", result=as_result(result_with(2.4)), sol=0.71, profile=as_profile({"bound": "bandwidth"}))
    (kb_problem / "kernel.py").write_text("# strategy: tile 64\nfast = True\n")
    return kb_problem


def run(*args: str, ok: bool = True):
    result = CliRunner().invoke(trials, list(args), catch_exceptions=False)
    assert (result.exit_code == 0) == ok, result.output
    return result


def test_status_draws_the_tree_with_best_head_and_budget(problem):
    out = run("status", "--dir", str(problem)).output
    assert "Budget: 3/3 GPU trials (spent)" in out
    assert "Best: t3, 2.40x" in out
    assert "[+] t1 kernel.py: 1.20x (bl=98us, tr=82us) | fused bias relu" in out
    assert "├── [X] t2: incorrect | unrolled" in out
    assert "[+] t3: 2.40x (bl=98us, tr=41us) SoL 71% | tile 64 ▸ head <<< BEST" in out


def test_status_best_and_doctor_take_the_directory_as_their_argument_like_the_other_commands(problem):
    assert run("status", str(problem)).output == run("status", "--dir", str(problem)).output
    assert "best_trial: t3" in run("best", str(problem)).output
    assert run("doctor", str(problem)).output == run("doctor", "--dir", str(problem)).output


def test_status_json_lists_every_trial_with_budget_heads_and_best(problem):
    data = json.loads(run("status", "--json", "--dir", str(problem)).output)
    assert data["best"] == "t3" and data["baseline"] == "eager"
    assert data["budget"] == {"used": 3, "max": 3, "left": 0, "spent": True}
    assert data["heads"] == {"kernel.py": "t3"}
    assert [(t["id"], t["parent"], t["state"]) for t in data["trials"]] == [
        ("t1", None, "correct"), ("t2", "t1", "incorrect"), ("t3", "t1", "correct")]
    assert data["trials"][1]["speedup"] is None and data["trials"][2]["best"] is True


def test_reading_commands_work_while_a_writer_holds_the_problem(problem):
    with Store.open(problem):
        assert "<<< BEST" in run("status", "--dir", str(problem)).output
        assert run("show", "t2", "--dir", str(problem)).output.startswith("t2  kernel.py  incorrect")


def test_writing_commands_are_refused_naming_the_holder_while_another_writer_runs(problem):
    with Store.open(problem):
        out = run("note", "t1", "first", "--dir", str(problem), ok=False).output
    assert f"pid {os.getpid()}" in out


def test_best_prints_trial_managers_fields_and_exits_1_without_a_correct_trial(problem, tmp_path):
    out = run("best", "--dir", str(problem)).output
    assert "best_trial: t3" in out and "speedup: 2.4" in out and "strategy: tile 64" in out
    assert json.loads(run("best", "--json", "--dir", str(problem)).output)["baseline_us"] == 98.1
    empty = write_problem(tmp_path / "empty")
    assert "No best: no correct trial yet." in run("best", "--dir", str(empty), ok=False).output


def test_show_gives_the_whole_record_and_refuses_unknown_ids(problem):
    data = json.loads(run("show", "t3", "--json", "--dir", str(problem)).output)
    assert data["sol"] == 0.71 and data["result"]["env"]["gpu"] == "NVIDIA H200"
    assert Path(data["snapshot"]).read_text() == "# strategy: tile 64\nfast = True\n"
    assert "no trial 't9'" in run("show", "t9", "--dir", str(problem), ok=False).output


def test_show_says_the_trials_state_on_its_line_and_the_baselines_own_time_on_the_baselines(problem):
    with Store.open(problem) as store:
        store.record("other.py", "# strategy: crashes\n")
        store.update("t4", state="error", result=as_result({**GPU_RESULT, "state": "error", "timing": None,
                                                           "baselines": {}, "speedup": None, "message": "boom"}))
    lines = {t: run("show", t, "--dir", str(problem)).output.splitlines() for t in ("t2", "t3", "t4")}
    assert lines["t2"][0] == "t2  kernel.py  incorrect" and "  eager: 98.10 µs" in lines["t2"]
    assert lines["t3"][0] == "t3  kernel.py  correct: 40.88 µs, 2.40x vs eager, SoL 71%"
    assert "  eager: 98.10 µs" in lines["t3"]
    assert lines["t4"][0] == "t4  other.py  error"
    assert not any(line.startswith("  eager:") for line in lines["t4"])  # no baseline was timed


def test_diff_shows_what_a_trial_changed_from_its_parent_or_between_two(problem):
    out = run("diff", "t3", "--dir", str(problem)).output
    assert out.startswith("--- t1/kernel.py\n+++ t3/kernel.py")
    assert "+fast = True" in out
    out = run("diff", "t2", "t3", "--dir", str(problem)).output
    assert "-broken = True" in out and "+fast = True" in out


def test_note_labels_a_trial_everywhere_and_an_empty_note_clears_it(problem):
    run("note", "t2", "unroll", "by", "4", "--dir", str(problem))
    assert "| unroll by 4" in run("status", "--dir", str(problem)).output
    run("note", "t2", "", "--dir", str(problem))
    assert "| unrolled" in run("status", "--dir", str(problem)).output


def test_branch_command_puts_the_trial_back_and_keeps_unrecorded_work(problem):
    (problem / "kernel.py").write_text("half-done idea\n")
    out = run("branch", "t2", "--dir", str(problem)).output
    assert "kept as t4" in out and "next save grows from t2" in out
    assert (problem / "kernel.py").read_text() == "# strategy: unrolled\nbroken = True\n"
    with Store.open(problem, writer=False) as store:
        assert store.heads == {"kernel.py": "t2"}
        assert store.read_source(store.get("t4")) == "half-done idea\n"
    data = json.loads(run("branch", "t1", "--json", "--dir", str(problem)).output)
    assert data == {"head": "t1", "file": "kernel.py", "recorded": None}


@pytest.fixture
def bench(monkeypatch):
    calls = []

    def fake(problem, path, *, device=None, use_cache=True, heldout=None, **kw):
        if heldout is not None:  # finalize's held-out check: every case passes here
            bench.heldout.append(heldout)
            return as_result({"state": "correct", "correctness": {"heldout": [{"outcome": "passed"} for _ in heldout]}})
        calls.append({"path": Path(path), "device": device, "use_cache": use_cache, "source": Path(path).read_text()})
        return as_result(copy.deepcopy(bench.result))

    def profiled(problem, path, *, name, env=None, handle=None, device="cuda"):
        bench.profiled.append(name)
        return as_profile({"source": "ncu", "label": "Nsight Compute counters", "available": True,
                           "kernels": bench.kernels})

    bench.result = GPU_RESULT
    monkeypatch.setattr("trialtui.engine.bench.bench_file", fake)
    monkeypatch.setattr("trialtui.engine.profile.profile_file", profiled)
    bench.calls = calls
    bench.heldout = []
    bench.profiled, bench.kernels = [], [{"name": "bias_relu", "duration_ns": 40000.0}]
    return bench


def test_finalize_rebenchmarks_the_best_without_cache_and_writes_final(problem, bench):
    run("finalize", "--dir", str(problem))
    (call,) = bench.calls
    assert call["use_cache"] is False and call["path"] == problem / "final" / "kernel.py"
    assert call["source"] == "# strategy: tile 64\nfast = True\n"
    report = json.loads((problem / "final" / "report.json").read_text())
    assert report["trial"] == "t3" and report["file"] == "final/kernel.py"
    assert report["gpu"] == "NVIDIA H200" and report["dtype"] == "float16"
    assert report["sizes"] == [{"batch_size": 4096, "dim": 8192}]
    assert report["baselines"]["eager"]["speedup"] == pytest.approx(2.381, abs=1e-3)
    assert report["baselines"]["compile"]["median_us"] == 60.3
    assert report["time_us"]["median_us"] == 41.2 and report["spread_pct"] == pytest.approx(2.67, abs=0.01)
    assert report["sol"] == 0.71 and report["bound"] == "bandwidth"
    text = (problem / "final" / "REPORT.md").read_text()
    assert "NVIDIA H200" in text and "**2.38× faster than eager**" in text and "71% of the ceiling" in text
    assert "n=200, kernel time 39.80 µs" in text
    (cases,) = bench.heldout  # held out at the bench sizes of the clean run's GPU
    assert cases[0]["sizes"] == {"batch_size": 8, "dim": 32} and {"dim": 37} in [c["changed"] for c in cases]
    line = f"generalizes: {len(cases)} of {len(cases)} held-out cases"
    assert report["generalizes"] == line and f"- {line}" in text


NVJET = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"  # cuBLAS's bf16 GEMM on the H200 (h200-2026-12-02)


def test_finalize_weighs_library_work_from_kernel_records_whatever_profile_when_says(problem, bench):
    """t1 was never profiled (`[profile] when = "never"`, or it never was a first correct or new best): the final
    number is weighed on kernel records taken now; its own kernels doing the work, the card says so."""
    (problem / "trialtui.toml").write_text(CONFIG + '[profile]\nwhen = "never"\n')
    data = json.loads(run("finalize", "t1", "--json", "--dir", str(problem)).output)
    assert bench.profiled == ["finalize-t1"]
    with Store.open(problem, writer=False) as store:
        assert store.get("t1").profile["kernels"] == bench.kernels  # kept with the trial, as the loop's would be
    assert data["library"]["own_share"] == 1.0 and data["library"]["source"] == "Nsight Compute counters"
    text = (problem / "final" / "REPORT.md").read_text()
    assert "- Library work: own kernels 100% of GPU time (40.0 µs a call), library 0% (0.0 µs), from Nsight" in text


def test_finalize_refuses_a_kernel_whose_records_show_a_library_doing_the_work(problem, bench):
    """A decoy that reaches cuBLAS around the bench's recorder (ctypes, DisableTorchFunction) and was never profiled:
    its records show the library's GEMM doing 97 % of the work, and nothing is finalized."""
    bench.kernels = [{"name": "bias_relu", "duration_ns": 3000.0}, {"name": NVJET, "duration_ns": 97000.0}]
    out = run("finalize", "t1", "--dir", str(problem), ok=False).output
    assert "t1 is not finalized" in out and "library kernels did 97%" in out and NVJET in out
    assert list((problem / "final").iterdir()) == []
    with Store.open(problem, writer=False) as store:  # flagged and its records kept: never best, not profiled again
        t1 = store.get("t1")
    assert [f["code"] for f in t1.result.flags].count("fallback") == 1 and t1.profile["kernels"]
    run("finalize", "t1", "--dir", str(problem), ok=False)
    assert bench.profiled == ["finalize-t1"]


def test_finalize_reuses_a_stored_profile_s_records_and_takes_none_off_a_gpu(problem, bench):
    with Store.open(problem) as store:
        store.update("t1", profile=as_profile({"source": "ncu", "label": "Nsight Compute counters", "available": True,
                                               "kernels": [{"name": "bias_relu", "duration_ns": 30000.0},
                                                           {"name": NVJET, "duration_ns": 10000.0}]}))
    data = json.loads(run("finalize", "t1", "--json", "--dir", str(problem)).output)
    assert bench.profiled == [] and data["library"]["own_share"] == 0.75
    bench.result = CPU_RESULT
    data = json.loads(run("finalize", "t3", "--json", "--dir", str(problem)).output)
    assert bench.profiled == [] and data["library"] is None
    assert "Library work" not in (problem / "final" / "REPORT.md").read_text()


def test_finalize_a_named_trial_on_a_cpu_run_says_so_and_claims_no_speedup(problem, bench):
    bench.result = CPU_RESULT
    data = json.loads(run("finalize", "t1", "--device", "cpu", "--json", "--dir", str(problem)).output)
    assert bench.calls[0]["device"] == "cpu"
    assert data["trial"] == "t1" and data["gpu_timing"] is False
    assert data["timing_label"] == CPU_TIMING_LABEL and data["speedup"] is None and data["baselines"] == {}
    assert data["bound"] == "unknown" and data["sol"] is None
    text = (problem / "final" / "REPORT.md").read_text()
    assert CPU_TIMING_LABEL in text and "×" not in text and "No speedup" in text
    assert "n=3\n" in text and "kernel time" not in text  # none taken: no dash standing for it
    assert "unknown (a CPU run: no GPU time to place on a roofline (trialtui analyze" in text


def test_a_cpu_report_drops_the_gpu_speed_of_light_but_keeps_the_profiles_bound(problem, bench):
    bench.result = CPU_RESULT
    data = json.loads(run("finalize", "t3", "--json", "--dir", str(problem)).output)
    assert data["sol"] is None and data["bound"] == "bandwidth"
    text = (problem / "final" / "REPORT.md").read_text()
    assert "not applicable to a CPU run" in text and "bandwidth (from t3's profile)" in text


def test_finalize_writes_nothing_when_the_clean_run_is_not_correct(problem, bench):
    bench.result = {**GPU_RESULT, "state": "incorrect", "speedup": None, "message": "seed 3: max abs err 0.5"}
    out = run("finalize", "--dir", str(problem), ok=False).output
    assert "t3 is incorrect" in out and "seed 3" in out
    assert list((problem / "final").iterdir()) == []


def test_finalize_without_a_correct_trial_refuses(kb_problem, bench):
    assert "nothing to finalize: no correct trial yet" in run("finalize", "--dir", str(kb_problem), ok=False).output
    assert bench.calls == []


def test_report_says_unknown_when_no_profile_or_roofline_and_refuses_wrong_results(problem):
    prob = load_problem(problem)
    with Store.open(problem, writer=False) as store:
        t1 = store.get("t1")
    text, data = build_report(prob, t1, as_result(GPU_RESULT))
    assert data["bound"] == "unknown" and data["sol"] is None and data["primary_baseline"] == "eager"
    assert "unknown (no profile or roofline classified this kernel)" in text and "unknown (no roofline" in text
    assert data["tolerance"] == {"atol": 1e-4, "rtol": 1e-4} and data["flags"][0]["code"] == "tie"
    with pytest.raises(ValueError):
        build_report(prob, t1, as_result({**GPU_RESULT, "state": "error", "speedup": None}))


def test_report_never_shows_a_speedup_for_a_cpu_run_even_if_the_result_has_one(problem):
    cpu = {**CPU_RESULT, "speedup": {"eager": 3.0}, "baselines": {"eager": {"median_us": 9000.0, "cached": False}}}
    with Store.open(problem, writer=False) as store:
        text, data = build_report(load_problem(problem), store.get("t1"), as_result(cpu))
    assert data["speedup"] is None and data["baselines"]["eager"]["speedup"] is None
    assert "3.00" not in text and "No speedup" in text


@pytest.mark.slow
def test_finalize_end_to_end_on_the_cpu(problem):
    run("finalize", "t1", "--device", "cpu", "--dir", str(problem))
    report = json.loads((problem / "final" / "report.json").read_text())
    assert report["device"] == "cpu" and report["timing_label"] == CPU_TIMING_LABEL
    assert report["speedup"] is None and report["correctness"]["passed"] is True
    assert report["time_us"]["median_us"] > 0
    failed = [c for c in report["generalization"]["cases"] if c["outcome"] == "failed"]  # kernel.py indexes flat
    assert [c["label"] for c in failed] == ["non-contiguous inputs at the checked sizes"]
    assert report["generalizes"].startswith(f"generalizes: {len(report['generalization']['cases']) - 1} of ")
    assert (problem / "final" / "REPORT.md").read_text().splitlines()[2] == f"**{report['generalizes']}**"


def test_export_jsonl_is_one_full_record_per_line(problem):
    lines = run("export", "--format", "jsonl", "--dir", str(problem)).output.splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["t1", "t2", "t3"]
    assert json.loads(lines[2])["result"]["env"]["gpu"] == "NVIDIA H200"


def test_export_md_is_a_table_headed_by_what_was_measured(problem, tmp_path):
    out = tmp_path / "trials.md"
    run("export", "--format", "md", "--out", str(out), "--dir", str(problem))
    text = out.read_text()
    assert "Best: **t3**, 2.40× vs eager (NVIDIA H200, float16" in text
    assert "| **t3** | t1 | kernel.py | correct | 2.40× | 40.88 µs | tile 64 |" in text
    assert "| t2 | t1 | kernel.py | incorrect | — | — | unrolled |" in text


def test_hf_export_then_import_round_trips_the_tree(problem, tmp_path):
    with Store.open(problem) as store:
        store.record("kernel.py", "still running\n")  # t4: in flight, comes back interrupted
        store.update("t3", note="the keeper")
    out = tmp_path / "trials"
    run("export", "--format", "hf", "--out", str(out), "--dir", str(problem))
    kernel_dir = out / problem.name
    state = json.loads((kernel_dir / "state.json").read_text())
    assert state["best_trial"] == "t3" and state["next_id"] == 5 and state["baseline_us"] == [98.1]
    assert state["trials"]["t2"]["status"] == "failed" and state["trials"]["t3"]["status"] == "completed"
    assert state["trials"]["t3"]["strategy"] == "the keeper" and (kernel_dir / "t3.py").exists()

    other = write_problem(tmp_path / "other")  # a problem directory: `trials` refuses any other
    data = json.loads(run("import", "--format", "hf", str(kernel_dir), "--json", "--dir", str(other)).output)
    assert data["imported"] == {"t1": "t1", "t2": "t2", "t3": "t3", "t4": "t4"}
    with Store.open(problem, writer=False) as a, Store.open(other, writer=False) as b:
        for x, y in zip(a.trials(), b.trials(), strict=True):
            same = ("id", "parent", "file", "sha256", "strategy", "note")
            assert [getattr(x, k) for k in same] == [getattr(y, k) for k in same]
            assert x.speedup() == pytest.approx(y.speedup()) if x.speedup() else y.speedup() is None
            assert y.state == (x.state if x.id != "t4" else "interrupted")
        assert b.heads == {}
    again = json.loads(run("import", "--format", "hf", str(kernel_dir), "--json", "--dir", str(other)).output)
    assert again["added"] == []


def test_import_reads_a_state_json_written_by_trial_manager_itself(tmp_path):
    kernel_dir = tmp_path / "trials" / "softmax"
    kernel_dir.mkdir(parents=True)
    records = {
        "t0": {"parent": None, "file": "t0.py", "strategy": "baseline port", "validation": "pass",
               "correctness": "pass", "speedup": 1.1, "baseline_us": 50.0, "triton_us": 45.4, "status": "completed"},
        "t1": {"parent": "t0", "file": "t1.py", "strategy": "bad mask", "validation": "pass",
               "correctness": "fail", "speedup": None, "baseline_us": None, "triton_us": None, "status": "failed"},
        "t2": {"parent": "t0", "file": "t2.py", "strategy": "", "validation": "fail",
               "correctness": None, "speedup": None, "baseline_us": None, "triton_us": None, "status": "failed"},
        "t3": {"parent": "t0", "file": "t3.py", "strategy": "never run", "validation": None,
               "correctness": None, "speedup": None, "baseline_us": None, "triton_us": None, "status": "saved"},
    }
    for tid in records:
        (kernel_dir / f"{tid}.py").write_text(f"# {tid}\n")
    (kernel_dir / "state.json").write_text(json.dumps(
        {"kernel_name": "softmax", "pytorch_file": "softmax.py", "trials": records, "best_trial": "t0", "next_id": 4,
         "baseline_us": [50.0]}))
    problem = write_problem(tmp_path / "prob")
    out = run("import", "--format", "hf", str(tmp_path / "trials"), "--dir", str(problem), ok=False).output
    assert str(kernel_dir) in out  # the parent folder is not it, but it names the kernel folder to pass
    run("import", "--format", "hf", str(kernel_dir), "--dir", str(problem))
    with Store.open(problem, writer=False) as store:
        found = store.trials()
    assert [(t.id, t.parent, t.file, t.state) for t in found] == [
        ("t1", None, "softmax.py", "correct"), ("t2", "t1", "softmax.py", "incorrect"),
        ("t3", "t1", "softmax.py", "invalid"), ("t4", "t1", "softmax.py", "interrupted")]
    assert found[0].speedup() == 1.1 and found[0].median_us == 45.4 and found[0].strategy == "baseline port"
    assert found[2].strategy is None


def test_report_takes_the_bound_from_the_roofline_when_there_is_no_profile(problem):
    prob = load_problem(problem)
    roof = {"bound": "memory", "intensity": 0.4, "ridge": 206.1, "gpu": "NVIDIA H200", "source": "calibrated"}
    with Store.open(problem, writer=False) as store:
        t1 = store.get("t1")
    t1.result = replace(t1.result, roofline=roof)
    text, data = build_report(prob, t1, as_result(GPU_RESULT))
    assert data["bound"] == "bandwidth"
    assert "bandwidth (roofline: 0.4 FLOP/B against a ridge of 206.1 on NVIDIA H200" in text


def test_show_of_an_unmeasured_trial_prints_no_none(problem):
    """A timed-out trial's result knows only where it ran: `measured on: cpu, None, sizes None` was printed."""
    with Store.open(problem) as store:
        store.record("slow.py", "# strategy: spins\n")
        store.update("t4", state="timeout", result=as_result({"version": 1, "state": "timeout",
                                                             "message": "timed out after 60 s", "env": {"device": "cpu"}}))
    out = run("show", "t4", "--dir", str(problem)).output
    assert "  measured on: cpu\n" in out and "None" not in out
    assert "  measured on: NVIDIA H200, float16, sizes [{'batch_size': 4096, 'dim': 8192}]\n" in run(
        "show", "t3", "--dir", str(problem)).output


@pytest.mark.parametrize("command", ["status", "best", "doctor"])
def test_a_directory_given_twice_and_different_is_refused(problem, tmp_path, command):
    """`trials best DIR --dir OTHER` used DIR and dropped OTHER without a word."""
    other = write_problem(tmp_path / "other")
    out = run(command, str(problem), "--dir", str(other), ok=False)
    assert out.exit_code == 2 and f"two problem directories given, {problem} and --dir {other}: give one" in out.output
    assert run(command, str(problem), "--dir", str(problem)).output == run(command, str(problem)).output


def test_status_marks_no_head_for_a_deleted_file_and_says_it_is_gone(problem):
    """A head is the trial its file holds: a deleted file's trial was still drawn `▸ head`."""
    (problem / "kernel.py").unlink()
    out = run("status", "--dir", str(problem)).output
    assert "▸ head" not in out and "[+] t3: 2.40x (bl=98us, tr=41us) SoL 71% | tile 64 <<< BEST" in out
    assert "  kernel.py is deleted (its head was t3: saved again, it continues from there)" in out
    assert json.loads(run("status", "--json", "--dir", str(problem)).output)["heads"] == {"kernel.py": "t3"}


def test_status_and_show_say_which_trials_another_reference_judged_with_no_engine_running(problem):
    """reference.py edited while no engine ran: t3's result names the hash it was judged against, so status and show
    say it is stale (the stored mark is an engine's, and none ran); t1's names the current one."""
    from trialtui.core.baselines import reference_hash

    ref = problem / "reference.py"
    with Store.open(problem) as store:
        for trial_id in ("t1", "t3"):
            result = store.get(trial_id).result
            store.update(trial_id, result=replace(result, reference_sha=reference_hash(ref)))
    assert "Stale" not in run("status", str(problem)).output
    ref.write_text(ref.read_text() + "\n# edited\n")
    with Store.open(problem) as store:
        store.update("t1", result=replace(store.get("t1").result, reference_sha=reference_hash(ref)))
    assert "Stale: t3, measured against another reference.py than the one here" in run("status", str(problem)).output
    assert "stale: measured against another reference.py" in run("show", "t3", "--dir", str(problem)).output
    assert "stale" not in run("show", "t1", "--dir", str(problem)).output
