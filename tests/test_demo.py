"""`trialtui demo`: samples found, copies clean, replay honest, stories played through the real loop.

The fast tests use fake benches; the slow one plays every sample headless on the CPU (real
validation, real interpreter correctness) with replayed numbers from a hand-made fixture
(tests/fixtures/demo/recordings.json, labelled as such), and checks the story in the store and in
the printed lines.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from trialtui.core.config import load_config
from trialtui.core.problem_dir import load_problem
from trialtui.core.store import Store, sha256_of
from trialtui.demo import play as d
from trialtui.demo import printer as dp
from trialtui.demo import replay as dr
from trialtui.demo import story as ds

from conftest import as_profile, as_result, as_validation, play_story

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_kernels"
FIXTURE = ROOT / "tests" / "fixtures" / "demo" / "recordings.json"
PROBLEMS = ("bias_gelu_residual", "softmax", "rmsnorm", "matmul_epilogue")


def fixture_recordings(dest: Path, problems=PROBLEMS) -> dict:
    """Per-version recording files for the sample stories, from the hand-made fixture's numbers."""
    spec = json.loads(FIXTURE.read_text())
    for name in problems:
        story = ds.load_story(SAMPLES / name)
        (dest / name).mkdir(parents=True, exist_ok=True)
        for version in story.versions:
            stem = version.stem
            if stem in spec["missing"] or stem not in spec["speedups"]:
                continue
            s = {**spec["speedups"], **spec["speedups_by_problem"].get(name, {})}[stem]
            result = json.loads(json.dumps(spec["result"]))
            eager, compile_ = spec["eager_us"], spec["compile_us"]
            mine = eager / s
            result["timing"] = {"median_us": mine, "p20_us": mine, "p80_us": mine, "n": 10, "rse": 0.001,
                                "kernel_us": mine, "label": "GPU, CUDA events, L2 flushed, median"}
            result["baselines"] = {"eager": {"median_us": eager, "cached": False},
                                   "compile": {"median_us": compile_, "cached": False}}
            result["speedup"] = {"eager": s, "compile": compile_ / mine}
            sha = sha256_of(story.source(version))
            if stem in spec["stale"]:
                sha = "0" * 64  # a recording of some older source: must never be used
            (dest / name / f"{stem}.json").write_text(json.dumps({
                "problem": name, "version": stem, "file": version.file, "sha256": sha,
                "recorded_at": spec["recorded_at"], "trial": "t0", "state": "correct", "result": result,
            }))
    return spec


# ---------------------------------------------------------------------------------------------
# samples, stories, copies


def test_samples_found_beside_the_package():
    root = ds.samples_root()
    assert root == SAMPLES
    assert ds.sample_names(root)[:4] == list(PROBLEMS)


def test_missing_samples_say_where_and_what_to_do(tmp_path):
    with pytest.raises(ds.DemoError, match="no sample problems at .*pip install -e|--samples"):
        ds.samples_root(tmp_path / "nowhere")


def test_bad_problem_name_lists_the_samples():
    result = CliRunner().invoke(__import__("trialtui.cli.demo", fromlist=["demo"]).demo,
                                ["no_such_problem", "--headless", "--replay"])
    assert result.exit_code == 2
    for name in PROBLEMS:
        assert name in result.output


def test_default_problems_one_story_unless_all():
    assert ds.resolve_names(SAMPLES, [], every=True, tui=False)[:4] == list(PROBLEMS)
    assert ds.resolve_names(SAMPLES, [], every=False, tui=False) == ["bias_gelu_residual"]
    assert ds.resolve_names(SAMPLES, [], every=False, tui=True) == ["bias_gelu_residual"]
    assert ds.resolve_names(SAMPLES, ["softmax", "rmsnorm"], every=False, tui=False) == ["softmax", "rmsnorm"]
    with pytest.raises(ds.DemoError, match="one problem"):
        ds.resolve_names(SAMPLES, ["softmax", "rmsnorm"], every=False, tui=True)
    with pytest.raises(ds.DemoError, match="not both"):
        ds.resolve_names(SAMPLES, ["softmax"], every=True, tui=False)


def test_demo_plays_under_the_current_directory_and_never_reuses_a_played_copy(tmp_path):
    assert ds.fresh_parent(tmp_path, ["softmax"]) == tmp_path / "trialtui-demo"
    (tmp_path / "trialtui-demo" / "softmax").mkdir(parents=True)
    assert ds.fresh_parent(tmp_path, ["softmax"]) == tmp_path / "trialtui-demo"  # empty: still usable
    (tmp_path / "trialtui-demo" / "softmax" / "kernel.py").write_text("x")
    assert ds.fresh_parent(tmp_path, ["softmax"]) == tmp_path / "trialtui-demo-2"
    assert ds.fresh_parent(tmp_path, ["rmsnorm"]) == tmp_path / "trialtui-demo"


def test_next_steps_name_the_played_directory():
    lines = dp.next_steps([Path("trialtui-demo/softmax")], played_all=False)
    assert lines[0].startswith("next: trialtui trials status --dir trialtui-demo/softmax")
    assert any("trialtui trialtui-demo/softmax" in line for line in lines)
    assert any("--all" in line for line in lines)
    assert not any("--all" in line for line in dp.next_steps([Path("a"), Path("b")], played_all=True))


def test_live_without_a_gpu_is_refused(monkeypatch):
    from trialtui.cli.demo import demo

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    for args in (["--live"], ["--record", "x"]):
        result = CliRunner().invoke(demo, ["softmax", "--headless", *args])
        assert result.exit_code == 2, result.output
        assert "GPU" in result.output


def test_prepare_copies_clean_and_starts_at_v1(tmp_path):
    sample = tmp_path / "samples" / "softmax"
    import shutil

    shutil.copytree(SAMPLES / "softmax", sample)
    for leftover in (".trialtui", "recorded", "final", "__pycache__"):
        (sample / leftover).mkdir(exist_ok=True)
        (sample / leftover / "x.json").write_text("{}")
    story = ds.load_story(sample)
    (sample / story.candidate).write_text("# edited by someone\n")
    dest = ds.prepare(sample, tmp_path / "play", story, baselines=["eager"], profile="never")
    assert dest == tmp_path / "play" / "softmax"
    for leftover in (".trialtui", "recorded", "final", "__pycache__"):
        assert not (dest / leftover).exists()
    assert (dest / "demo" / story.versions[-1].file).exists()  # versions ride along, in a subdirectory: never candidates
    assert (dest / story.candidate).read_bytes() == story.source(story.versions[0])
    assert load_config(dest).baselines == ["eager"]
    assert load_config(dest).profile_when == "never"
    problem = load_problem(dest)
    assert [p.name for p in problem.candidates()] == [story.candidate]
    assert problem.config.seeds == load_config(SAMPLES / "softmax").seeds  # the rest of the toml intact
    with pytest.raises(ds.DemoError, match="not empty"):
        ds.prepare(sample, tmp_path / "play", story)


def test_toml_overrides_land_in_the_right_table(tmp_path):
    import tomllib

    text = 'seeds = 3\nbaselines = ["eager", "compile"]\n[test_sizes]\nn = 4\n[profile]\nwhen = "auto"\n'
    out = ds.set_toml_key(ds.set_toml_key(text, "baselines", '["eager"]'), "when", '"never"', table="profile")
    assert tomllib.loads(out) == {"seeds": 3, "baselines": ["eager"], "test_sizes": {"n": 4}, "profile": {"when": "never"}}
    out = ds.set_toml_key(ds.set_toml_key("[test_sizes]\nn = 4\n", "baselines", '["eager"]'), "when", '"never"', table="profile")
    assert tomllib.loads(out) == {"baselines": ["eager"], "test_sizes": {"n": 4}, "profile": {"when": "never"}}


def test_editor_save_renames_and_keeps_the_mode(tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text("old\n")
    path.chmod(0o640)
    inode = path.stat().st_ino
    ds.editor_save(path, b"new\n")
    assert path.read_bytes() == b"new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert path.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kernel.py"]


def test_demo_modules_import_without_textual():
    code = ("import sys, trialtui.cli.demo, trialtui.demo.play; "
            "bad = [m for m in ('textual', 'torch', 'triton') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# ---------------------------------------------------------------------------------------------
# replay


def cpu_result(state="correct"):
    return {"version": 1, "state": state, "correctness": {"passed": state == "correct", "seeds": 3},
            "timing": {"median_us": 5e4, "label": "CPU, interpreted — not a GPU timing"} if state == "correct" else None,
            "baselines": {}, "speedup": None, "flags": [], "env": {"device": "cpu", "gpu": None},
            "sizes": [{"n": 3}], "dtype": "float32", "message": ""}


def test_replay_merges_only_a_recording_of_the_same_source(tmp_path):
    fixture_recordings(tmp_path / "recs", ["bias_gelu_residual"])
    recordings = dr.load_recordings(tmp_path / "recs" / "bias_gelu_residual")
    story = ds.load_story(SAMPLES / "bias_gelu_residual")
    calls = []

    def inner(problem, path, **kw):
        calls.append((kw["device"], kw.get("correctness_only", False)))
        return as_result(cpu_result())

    bench = dr.ReplayBench(recordings, inner)
    for stem, speed in (("v3", 1.4), ("v6", None), ("v7", None)):  # recorded, missing, stale
        path = tmp_path / f"{stem}.py"
        path.write_bytes(story.source(story.by_file(f"{stem}.py")))
        result = bench(None, path, device="cuda")
        if speed is None:
            assert result.speedup is None and result.recorded is None
            assert result.env["device"] == "cpu"
            assert any(f["code"] == "no-recording" for f in result.flags)
            assert dr.numbers_label(result) == "no GPU recording for this source: no speed"
        else:
            assert result.speedup["eager"] == pytest.approx(speed)
            assert result.recorded["source"] == "replay"
            assert result.recorded["date"] == "2000-01-01"
            assert result.recorded["gpu"].startswith("FIXTURE-GPU")
            assert result.correctness["seeds"] == 3  # the live CPU check, not the recording's
            assert result.recorded["cpu"]["env"]["device"] == "cpu"
            assert dr.recorded_label(result) == ("replayed from a recording on FIXTURE-GPU (test data, not a "
                                                 "measurement), 2000-01-01")
            assert "replayed from a recording on FIXTURE-GPU" in dr.numbers_label(result)
            assert "CPU" in dr.numbers_label(result) and "measured" not in dr.numbers_label(result)
    # the real check always runs on the CPU; where a recording gives the numbers, it times nothing
    assert calls == [("cpu", True), ("cpu", False), ("cpu", False)]


def test_replay_never_speeds_up_an_incorrect_or_unrecorded_failure(tmp_path):
    fixture_recordings(tmp_path / "recs", ["softmax"])
    recordings = dr.load_recordings(tmp_path / "recs" / "softmax")
    story = ds.load_story(SAMPLES / "softmax")
    path = tmp_path / "v3.py"
    path.write_bytes(story.source(story.by_file("v3.py")))
    result = dr.ReplayBench(recordings, lambda *a, **k: as_result(cpu_result("incorrect")))(None, path, device="cpu")
    assert result.state == "incorrect" and result.speedup is None and result.recorded is None
    # a recording whose GPU run was not correct adds nothing either
    sha = sha256_of(path.read_bytes())
    recordings[sha]["result"] = replace(recordings[sha]["result"], state="error", speedup=None, message="boom")
    result = dr.ReplayBench(recordings, lambda *a, **k: as_result(cpu_result()))(None, path, device="cpu")
    assert result.speedup is None and result.recorded is None
    assert any(f["code"] == "recording-not-correct" for f in result.flags)


def test_record_files_round_trip_into_replay(tmp_path):
    from trialtui.core.model import Trial

    story = ds.load_story(SAMPLES / "rmsnorm")
    version = story.by_file("v3.py")
    source = story.source(version)
    gpu_result = {**cpu_result(), "timing": {"median_us": 100.0, "label": "GPU"}, "speedup": {"eager": 3.0},
                  "baselines": {"eager": {"median_us": 300.0}}, "env": {"device": "cuda", "gpu": "NVIDIA H200"}}
    trial = Trial("t3", "kernel.py", sha256_of(source), 0.0, state="correct", result=as_result(gpu_result))
    player = d.DemoPlayer(story, mode="live", record_dir=tmp_path / "rec")
    player._record(version, trial)
    written = json.loads((tmp_path / "rec" / "rmsnorm" / "v3.json").read_text())
    assert written["sha256"] == sha256_of(source) and written["version"] == "v3"
    assert written["recorded_at"][:4].isdigit() and written["result"]["speedup"] == {"eager": 3.0}
    path = tmp_path / "v3.py"
    path.write_bytes(source)
    result = dr.ReplayBench(dr.load_recordings(tmp_path / "rec" / "rmsnorm"), lambda *a, **k: as_result(cpu_result()))(None, path)
    assert result.speedup == {"eager": 3.0}
    assert dr.recorded_label(result) == f"replayed from a recording on NVIDIA H200, {written['recorded_at'][:10]}"


@pytest.mark.parametrize("name", PROBLEMS)
def test_shipped_recordings_match_the_current_versions(name):
    """A recording replays only for identical source: one that matches no version is stale."""
    recorded = SAMPLES / name / ds.RECORDED_DIR
    files = sorted(recorded.glob("*.json")) if recorded.is_dir() else []
    if not files:
        pytest.skip(f"no recordings in {recorded} yet")
    story = ds.load_story(SAMPLES / name)
    shas = {sha256_of(story.source(v)): v.stem for v in story.versions}
    for path in files:
        data = json.loads(path.read_text())
        assert shas.get(data["sha256"]) == path.stem, f"{path} is stale: re-record it (trialtui demo --record)"
        assert data["result"]["env"]["device"] == "cuda" and data["result"]["env"]["gpu"], path
        assert "FIXTURE" not in json.dumps(data), f"{path}: test fixtures never go into sample_kernels"


def test_the_first_commands_story_holds_on_its_recordings():
    """Issue 36, point 11: the story README's first command plays (`trialtui demo --headless`) holds,
    beat by beat, on the recorded H200 numbers: what each beat claims is what decide says (a plateau
    that ends in a regression after a tie is a plateau, not a branch back; a tweak 0.3 % slower than its
    parent is a tie, whatever the two runs' own standard errors say: decide_evidence.RUN_TO_RUN)."""
    from trialtui.core.decide import decide
    from trialtui.core.model import Trial, Verdict

    name, = ds.resolve_names(SAMPLES, [], every=False, tui=False)
    story = ds.load_story(SAMPLES / name)
    recorded = SAMPLES / name / ds.RECORDED_DIR
    recordings = {p.stem: json.loads(p.read_text()) for p in recorded.glob("*.json")} if recorded.is_dir() else {}
    if any(v.stem not in recordings for v in story.versions):
        pytest.skip(f"not every version of {name} is recorded")
    config = load_config(SAMPLES / name)
    trials: list[Trial] = []
    ids: dict[str, str] = {}
    for n, version in enumerate(story.versions, start=1):
        rec = recordings[version.stem]
        parent = ids.get(version.parent) if version.parent else None
        trial = Trial(f"t{n}", story.candidate, rec["sha256"], float(n), state=rec["state"], parent=parent,
                      result=as_result(rec["result"]), sol=rec.get("sol"),
                      verdicts=[Verdict.from_dict(v) for v in rec.get("verdicts") or []],
                      profile=as_profile(rec.get("profile")))
        trials.append(trial)
        ids[version.file] = trial.id
        trial.decision = decide(trials, trial, trial.verdicts, config, source=story.source(version).decode())
        judged = ds.judge(version, trial, trials, config)
        assert trial.state == version.expected and judged.held, (version.file, version.beat, judged.text,
                                                                 trial.decision.reason)


def test_the_first_commands_story_holds_on_the_live_h200_numbers_that_broke_it():
    """The live H200 run of the same story (demo --agent, 2026-12-02, kept in
    tests/fixtures/gpu/h200-2026-12-02b/demo_agent_live_v6_mismatch.json) measured v5 0.33 % slower than v3
    and v6 4.9 % slower than v5: decide said branch back at v6 where the beat is a plateau. With the
    run-to-run floor the same numbers hold every beat: v5 ties v3, v6's regression after that tie is a
    plateau, and a change of approach is next."""
    import copy

    from trialtui.core.decide import decide
    from trialtui.core.model import Trial, Verdict

    live = json.loads((ROOT / "tests" / "fixtures" / "gpu" / "h200-2026-12-02b" / "demo_agent_live_v6_mismatch.json").read_text())
    measured = {b["version"]: b for b in live["agent"]["beats"]}
    name = live["agent_problem"]
    story = ds.load_story(SAMPLES / name)
    recorded = SAMPLES / name / ds.RECORDED_DIR
    config = load_config(SAMPLES / name)
    trials: list[Trial] = []
    ids: dict[str, str] = {}
    for n, version in enumerate(story.versions, start=1):
        rec = json.loads((recorded / f"{version.stem}.json").read_text())
        result = copy.deepcopy(rec["result"])
        beat = measured[version.file]
        if beat["median_us"] is not None:  # the live run's numbers and spread (its log: "noise ±0.1%" for v5, v6)
            result["timing"].update(median_us=beat["median_us"], rse=0.00035)
            result["speedup"] = {**(result.get("speedup") or {}), "eager": beat["speedup"]}
        parent = ids.get(version.parent) if version.parent else None
        trial = Trial(f"t{n}", story.candidate, rec["sha256"], float(n), state=rec["state"], parent=parent,
                      result=as_result(result), sol=rec.get("sol"),
                      verdicts=[Verdict.from_dict(v) for v in rec.get("verdicts") or []],
                      profile=as_profile(rec.get("profile")))
        trials.append(trial)
        ids[version.file] = trial.id
        trial.decision = decide(trials, trial, trial.verdicts, config, source=story.source(version).decode())
        if version.stem in ("v5", "v6"):
            judged = ds.judge(version, trial, trials, config)
            assert judged.held, (version.file, version.beat, judged.text, trial.decision.reason)


def test_final_table_labels_every_number():
    replayed = {**cpu_result(), "speedup": {"eager": 2.5, "compile": 1.5}, "env": {"gpu": "NVIDIA H200"},
                "sizes": [{"rows": 8}], "dtype": "float16",
                "recorded": {"gpu": "NVIDIA H200", "date": "2025-11-29", "source": "replay"}}
    runs = [ds.ProblemRun("a", Path("."), "replay", best="t8", best_version="v8.py", best_result=as_result(replayed)),
            ds.ProblemRun("b", Path("."), "replay")]
    table = dp.final_table(runs)
    row_a, row_b = table.splitlines()[1:]
    assert "2.50×" in row_a and "1.50×" in row_a and "replayed from a recording on NVIDIA H200, 2025-11-29" in row_a
    assert "float16" in row_a and "rows=8" in row_a
    assert "CPU: no GPU timing" in row_b and "×" not in row_b


# ---------------------------------------------------------------------------------------------
# the player on a real engine with fake jobs (fast)


def test_branch_back_goes_to_the_real_best(tmp_path):
    """Numbers that disagree with the story: the demo branches to the real best and says so."""
    from trialtui.engine.lanes import Lane, Lanes
    from trialtui.engine.loop import Engine

    story = ds.load_story(SAMPLES / "bias_gelu_residual")
    root = ds.prepare(story.sample, tmp_path, story, profile="never")
    speed = {"v1": 2.0, "v3": 1.5, "v4": 1.0, "v5": 1.2, "v6": 1.2, "v7": 3.0, "v8": 4.0}
    by_sha = {sha256_of(story.source(v)): v.stem for v in story.versions}

    def bench(problem, path, **kw):
        stem = by_sha[sha256_of(Path(path).read_bytes())]
        if stem == "v2":
            return as_result(cpu_result("incorrect"))
        return as_result({**cpu_result(), "timing": {"median_us": 100 / speed[stem], "rse": 0.001},
                          "baselines": {"eager": {"median_us": 100.0}}, "speedup": {"eager": speed[stem]},
                          "env": {"device": "cuda", "gpu": "fake"}})

    def validate(problem, path, compile=True, **kw):
        return as_validation({"ok": True, "errors": [], "warnings": [], "kernels": [], "preview": None, "elapsed_ms": 1.0})

    problem = load_problem(root)
    engine = Engine(problem, device="cuda", lanes=Lanes([Lane("gpu0", "0")]), bench=bench, validate=validate)
    out = io.StringIO()
    engine.subscribe(dp.DemoPrinter(engine, out))
    player = d.DemoPlayer(story, mode="live", speed=0, finalize=False)
    run = play_story(engine, player)
    assert run.error is None, run.error
    ids = {o.version.stem: o.trial_id for o in run.outcomes}
    assert [o.state for o in run.outcomes] == [v.expected for v in story.versions]
    assert run.branched_to == ids["v1"]  # the best at that point, not the story's v3
    assert {o.version.stem: o.parent for o in run.outcomes}["v5"] == ids["v1"]
    text = out.getvalue()
    assert f"branch back to {ids['v1']} — the best so far (2.00× vs eager); the story expected v3.py" in text
    assert run.best == ids["v8"] and run.best_version == "v8.py"
    assert "measured live on fake" in text
    # grown from v1 where the story grows v5 from v3: a mismatch, said, and not "8/8 as expected";
    # v8 at 4.00× with no speed-of-light is no decisive win: decide continues, and the beat says so
    assert [o.version.stem for o in run.mismatches] == ["v5", "v8"]
    assert f"the story grows it from {ids['v3']} (v3.py)!" in text
    v8_line = next(line for line in text.splitlines() if f"beat: decisive_win — v8.py is {ids['v8']}" in line)
    assert v8_line.endswith("— expected a decisive win; decide says continue: 4.00× eager (target 2.00×)!"), v8_line
    assert "as the story expects" not in v8_line
    assert run.outcomes[-1].judgement.held is False
    assert "6/8 as expected" in dp.final_table([run])


def test_replay_with_one_recording_ranks_no_best_and_says_what_it_could_not_replay(tmp_path):
    """matmul on a CPU with only v1 recorded: branch back and finalize follow the story, not v1's lone number."""
    from trialtui.engine.lanes import Lane, Lanes
    from trialtui.engine.loop import Engine

    story = ds.load_story(SAMPLES / "bias_gelu_residual")
    root = ds.prepare(story.sample, tmp_path / "play", story, profile="never")
    fixture_recordings(tmp_path / "recs", ["bias_gelu_residual"])
    recordings = {sha: rec for sha, rec in dr.load_recordings(tmp_path / "recs" / "bias_gelu_residual").items()
                  if rec["version"] == "v1"}
    by_sha = {sha256_of(story.source(v)): v.stem for v in story.versions}

    def cpu_bench(problem, path, **kw):
        return as_result(cpu_result("incorrect" if by_sha[sha256_of(Path(path).read_bytes())] == "v2" else "correct"))

    def validate(problem, path, compile=True, **kw):
        return as_validation({"ok": True, "errors": [], "warnings": [], "kernels": [], "preview": None, "elapsed_ms": 1.0})

    engine = Engine(load_problem(root), device="cpu", lanes=Lanes([Lane("cpu", None)]),
                    bench=dr.ReplayBench(recordings, cpu_bench), validate=validate)
    out = io.StringIO()
    engine.subscribe(dp.DemoPrinter(engine, out))
    player = d.DemoPlayer(story, mode="replay", speed=0, finalize=False)
    run = play_story(engine, player)
    assert run.error is None, run.error
    ids = {o.version.stem: o.trial_id for o in run.outcomes}
    assert run.branched_to == ids["v3"] and not run.mismatches  # v1's lone number ranks nothing
    text = out.getvalue()
    assert f"branch back to {ids['v3']} — v3.py, the story's choice: no recording of v3.py, v4.py to rank by" in text
    assert run.best is None and run.best_version == "v8.py"
    assert run.unreplayed == ["v3.py", "v4.py", "v5.py", "v6.py", "v7.py", "v8.py"]
    assert "could not replay v3.py, v4.py" in run.report_note and ids["v8"] in run.report_note
    row = dp.final_table([run]).splitlines()[1]
    # the beats that claim something of the numbers (regressed, plateau, the new approach's gain, the
    # win) cannot be judged without them: said so, never "as the story expects"
    assert "none ranked (ends at v8.py)" in row and "4/8 as expected, 4 not judged" in row and "×" not in row
    assert [o.version.beat for o in run.unjudged] == ["regressed", "plateau", "different_approach", "decisive_win"]
    win = next(line for line in text.splitlines() if f"beat: decisive_win — v8.py is {ids['v8']}" in line)
    assert "a decisive win is not judged: no GPU speed for it here; decide says continue" in win, win
    assert "as the story expects" not in win
    assert "not replayed, so no best ranked: v3.py" in row
    # v1's replayed numbers: where they come from is said once a line, what else there is to say still said
    v1 = next(line for line in text.splitlines() if f"{ids['v1']} result correct" in line)
    assert v1.endswith("2000-01-01] — correctness checked live on this CPU"), v1
    assert all(line.count("replayed from a recording on") <= 1 for line in text.splitlines()), text


# ---------------------------------------------------------------------------------------------
# every sample, headless, on the CPU (slow)


def beat_lines(text: str, problem: str) -> list[str]:
    return [line.split(f"[{problem}] ", 1)[1] for line in text.splitlines() if f"[{problem}] beat: " in line]


# Every story is played, in three groups that pytest-xdist can run at once (the matmul story alone
# takes minutes on a 2-core CPU); two stories share a run to cover playing several at once.
STORY_GROUPS = [("bias_gelu_residual", "softmax"), ("rmsnorm",), ("matmul_epilogue",)]
assert sorted(n for g in STORY_GROUPS for n in g) == sorted(PROBLEMS)


@pytest.mark.slow
@pytest.mark.parametrize("names", STORY_GROUPS, ids="+".join)
def test_demo_headless_plays_every_story_on_the_cpu(tmp_path, names):
    recs = tmp_path / "recs"
    spec = fixture_recordings(recs, names)
    play = tmp_path / "play"
    args = [*names, "--headless", "--replay", "--speed", "0", "--jobs", str(len(names)), "--recordings", str(recs),
            "--into", str(play)]
    # run the command in a fresh interpreter that then reports whether Textual was ever imported
    code = ("import sys\nfrom trialtui.cli.demo import demo\n"
            "try:\n    demo.main(sys.argv[1:], prog_name='trialtui demo')\n"
            "finally:\n    print('TEXTUAL_IMPORTED', 'textual' in sys.modules)\n")
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    try:
        proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT,
                              env=env, timeout=600)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the demo did not finish in {exc.timeout} s; it had printed:\n{(exc.stdout or b'')[-4000:].decode()}")
    out = proc.stdout
    assert proc.returncode == 0, out[-4000:] + proc.stderr[-4000:]
    assert "TEXTUAL_IMPORTED False" in out
    assert f"next: trialtui trials status --dir {play / names[0]}" in out
    label = f"replayed from a recording on {spec['gpu']}, 2000-01-01"
    table = out[out.index("problem  "):]
    for name in names:
        story = ds.load_story(SAMPLES / name)
        root = play / name
        with Store.open(root, writer=False) as store:
            trials = store.trials()
        by_sha = {t.sha256: t for t in trials}
        got = {v.stem: by_sha[sha256_of(story.source(v))] for v in story.versions}
        # every version became a trial with the state the story expects
        assert [got[v.stem].state for v in story.versions] == [v.expected for v in story.versions], name
        # each grows from the version the story names: the branch-back one from the best (v3; RMSNorm's v1)
        for v in story.versions:
            assert got[v.stem].parent == (got[Path(v.parent).stem].id if v.parent else None), (name, v.file)
        back = next(v for v in story.versions if v.beat == "branch_back")
        best = Path(back.parent).stem
        assert got[back.stem].parent == got[best].id != got["v4"].id
        # replayed numbers: from the recording of the same source, labelled; never anything else
        v3 = got["v3"].result
        assert v3.recorded["source"] == "replay" and v3.speedup["eager"] == pytest.approx(1.4)
        assert v3.correctness["passed"] and v3.recorded["cpu"]["env"]["device"] == "cpu"
        for stem in [s for s in ("v6", "v7") if s in got]:  # missing, stale (softmax ends at v6)
            assert got[stem].speedup("eager") is None and got[stem].result.recorded is None, (name, stem)
        assert got["v2"].result.speedup is None
        # the printed story, in order
        lines = beat_lines(out, name)
        done = [line for line in lines if re.match(r"beat: \w+ — v\d+\.py is t\d+ \(", line)]
        assert [line.split(" — ")[0] for line in done] == [f"beat: {v.beat}" for v in story.versions], name
        config = load_config(root)
        judged = {v.stem: ds.judge(v, got[v.stem], trials, config) for v in story.versions}
        for v, line in zip(story.versions, done):
            assert f"{v.file} is {got[v.stem].id}" in line and f": {v.expected}" in line, line
            j = judged[v.stem]
            ending = {True: f", as the story expects ({j.text})", None: f" — {j.text}", False: f" — {j.text}!"}[j.held]
            assert line.endswith(ending), (line, ending)
        beats = {v.beat: v.stem for v in story.versions}
        # claims without a claim on the numbers hold; the regression is borne out by decide (0.9× < 1.4×)
        for beat in ("first", "fails_correctness", "fixed", "branch_back"):
            assert judged[beats[beat]].held is True, (name, beat)
        assert judged["v4"].held is True and "decide says branch_back: 0.90× eager" in judged["v4"].text
        # v6 (missing) and v7 (stale) have no GPU speed: their claims are not judged, never "as expected"
        for stem in [s for s in ("v6", "v7") if s in got]:
            assert judged[stem].held is None and "not judged" in judged[stem].text, (name, stem)
        last = story.versions[-1]
        last_replayed = last.stem in spec["speedups"]
        if last_replayed:  # 2.60× with no speed-of-light: decide does not finalize, so no decisive win
            assert judged[last.stem].held is False
            assert judged[last.stem].text.startswith("expected a decisive win; decide says ")
        else:  # matmul's v9: no recording at all
            assert judged[last.stem].held is None
        branch = next(line for line in lines if "branch back to" in line)
        speed = {**spec["speedups"], **spec["speedups_by_problem"].get(name, {})}[best]
        assert f"branch back to {got[best].id} — the best so far ({speed:.2f}× vs eager)" in branch
        events = [line for line in out.splitlines() if line.startswith(tuple("0123456789")) and f"[{name}]" in line]
        v3_line = next(line for line in events if f"{got['v3'].id} result correct" in line)
        assert "1.40× vs eager" in v3_line and label in v3_line
        v6_line = next(line for line in events if f"{got['v6'].id} result correct" in line)
        assert "no GPU recording for this source: no speed" in v6_line and "×" not in v6_line
        v2_line = next(line for line in events if f"{got['v2'].id} result incorrect" in line)
        assert "×" not in v2_line
        # the final table and the report card (a CPU one, with the recorded numbers apart)
        row = next(line for line in table.splitlines() if line.startswith(name + " "))
        # v6 and v7 have no usable recording: no best is ranked, the story ends at its last version
        unreplayed = [f"{v.stem}.py" for v in story.versions
                      if v.expected == "correct" and (v.stem in ("v6", "v7") or v.stem not in spec["speedups"])]
        assert f"none ranked (ends at {last.file})" in row, row
        assert f"not replayed, so no best ranked: {', '.join(unreplayed)}" in row
        held = sum(j.held is True for j in judged.values())
        unjudged = sum(j.held is None for j in judged.values())
        assert f"{held}/{len(story.versions)} as expected, {unjudged} not judged" in row, row
        report = (root / "final" / "REPORT.md").read_text()
        assert "CPU, interpreted — not a GPU timing" in report
        if last_replayed:
            assert "2.60×" in row and label in row, row
            assert f"GPU numbers {label} (not measured in this run)" in report
            assert re.search(r"\| eager \| 1000\.00 µs \| 2\.60× \|", report)
        else:
            assert "×" not in row.split("as expected")[0] and "GPU numbers" not in report
        assert f"report card ({name}): {root / 'final' / 'REPORT.md'}" in out


@pytest.mark.slow
def test_record_mode_writes_what_replay_reads(tmp_path, monkeypatch):
    """--record on a (pretend) GPU: per-version recordings, report card, summary; replay reads them back.

    Validation is the static stage only: its CPU interpreter run is checked by the headless play
    below, and is not what --record writes (it cost a minute of this test)."""
    import trialtui.engine.bench as bench_mod
    import trialtui.engine.lanes as lanes_mod
    import trialtui.engine.loop as loop_mod
    from trialtui.cli.demo import demo
    from trialtui.engine.validate import validate_file

    def static_only(problem, path, compile=True, **kw):
        return validate_file(problem, path, compile=False, **kw)

    class StaticEngine(loop_mod.Engine):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{"validate": static_only, **kwargs})

    monkeypatch.setattr(loop_mod, "Engine", StaticEngine)

    story = ds.load_story(SAMPLES / "bias_gelu_residual")
    by_sha = {sha256_of(story.source(v)): v.stem for v in story.versions}
    calls = []

    def fake_gpu_bench(problem, path, *, device=None, use_cache=True, env=None, **kw):
        stem = by_sha[sha256_of(Path(path).read_bytes())]
        calls.append((stem, device, (env or {}).get("CUDA_VISIBLE_DEVICES"), use_cache))
        if stem == "v2":
            return as_result(cpu_result("incorrect"))
        s = int(stem[1:])
        return as_result({**cpu_result(), "timing": {"median_us": 100.0 / s, "rse": 0.001, "label": "GPU"},
                          "baselines": {"eager": {"median_us": 100.0}, "compile": {"median_us": 80.0}},
                          "speedup": {"eager": float(s), "compile": 0.8 * s}, "sizes": [{"rows": 1}],
                          "env": {"device": "cuda", "gpu": "PRETEND-H200"}})

    monkeypatch.setattr(bench_mod, "detect_device", lambda: "cuda")
    monkeypatch.setattr(lanes_mod, "visible_gpus", lambda: ["0"])
    monkeypatch.setattr(d, "bench_file", fake_gpu_bench)
    rec = tmp_path / "rec"
    result = CliRunner().invoke(demo, ["bias_gelu_residual", "--record", str(rec), "--profile", "never",
                                       "--into", str(tmp_path / "play")])
    assert result.exit_code == 0, result.output
    assert "live: every number is measured" in result.output
    assert all(device == "cuda" and gpu == "0" for _, device, gpu, _ in calls)
    assert calls[-1] == ("v8", "cuda", "0", False)  # the finalize: no cached baselines
    for v in story.versions:
        data = json.loads((rec / "bias_gelu_residual" / f"{v.stem}.json").read_text())
        assert data["sha256"] == sha256_of(story.source(v)) and data["version"] == v.stem
        assert data["state"] == v.expected and data["result"]["state"] == v.expected
    assert (rec / "bias_gelu_residual" / "final" / "REPORT.md").exists()
    summary = json.loads((rec / "summary.json").read_text())["bias_gelu_residual"]
    assert summary["best_version"] == "v8.py" and summary["speedup"]["eager"] == 8.0 and summary["error"] is None
    row = next(line for line in result.output.splitlines() if line.startswith("bias_gelu_residual "))
    assert "8.00×" in row and "measured live on PRETEND-H200" in row
    # what was recorded replays, labelled with its GPU and date
    path = tmp_path / "v8.py"
    path.write_bytes(story.source(story.by_file("v8.py")))
    replayed = dr.ReplayBench(dr.load_recordings(rec / "bias_gelu_residual"), lambda *a, **k: as_result(cpu_result()))(None, path)
    assert replayed.speedup["eager"] == 8.0
    assert dr.recorded_label(replayed).startswith("replayed from a recording on PRETEND-H200, 20")


def test_a_story_mismatch_says_what_differs_the_state_the_parent_or_the_beat():
    from types import SimpleNamespace

    from trialtui.cli.demo import mismatch_text

    version = SimpleNamespace(expected="correct", file="v6.py")
    beat = ds.Judgement(False, "expected a plateau; decide says branch_back: 1.86× eager")
    assert mismatch_text(SimpleNamespace(version=version, state="incorrect", parent="t5", expected_parent="t5",
                                         judgement=beat)) == "was incorrect, the story expects correct"
    assert mismatch_text(SimpleNamespace(version=version, state="correct", parent="t3", expected_parent="t5",
                                         judgement=beat)) == "grew from t3, the story expects t5"
    assert mismatch_text(SimpleNamespace(version=version, state="correct", parent="t5", expected_parent="t5",
                                         judgement=beat)) == ("correct as expected, but expected a plateau; "
                                                              "decide says branch_back: 1.86× eager")
