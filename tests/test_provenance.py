"""Provenance travels with every number (issue 24.6).

A replayed demo tree exported to trial_manager's layout and imported elsewhere still says
"replayed" in `trials status`, best, the TUI and the report; another tool's numbers say "imported
from hf"; neither ever beats a number measured here. The replay runs through the real engine and
demo player (fake CPU check, the hand-made fixture recordings of tests/test_demo.py).
"""

from __future__ import annotations

import asyncio
import copy
import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import as_result, as_validation, play_story
from test_demo import SAMPLES, cpu_result, fixture_recordings
from test_tui_scenarios import FakeEngine, gpu_result
from trialtui.agent import views
from trialtui.cli.trials import trials
from trialtui.core import provenance, tree
from trialtui.core.model import Trial
from trialtui.core.problem_dir import load_problem
from trialtui.core.provenance import Origin, Provenance
from trialtui.core.report import build_report
from trialtui.core.store import Store, sha256_of
from trialtui.demo import play as d
from trialtui.demo import printer as dp
from trialtui.demo import replay as dr
from trialtui.demo import story as ds
from trialtui.engine import events as ev
from trialtui.engine.headless import HeadlessPrinter

FIXTURE_LABEL = "replayed from a recording on FIXTURE-GPU (test data, not a measurement), 2000-01-01"


def run(*args: str, ok: bool = True):
    result = CliRunner().invoke(trials, list(args), catch_exceptions=False)
    assert (result.exit_code == 0) == ok, result.output
    return result


def status_json(root: Path) -> dict:
    return json.loads(run("status", "--json", "--dir", str(root)).output)


def best_row(data: dict) -> dict:
    return next(row for row in data["trials"] if row["id"] == data["best"])


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """The bias + GELU + residual story played in replay mode: (problem dir, the engine's events)."""
    from trialtui.engine.lanes import Lane, Lanes
    from trialtui.engine.loop import Engine

    base = tmp_path_factory.mktemp("replay")
    story = ds.load_story(SAMPLES / "bias_gelu_residual")
    root = ds.prepare(story.sample, base / "play", story, profile="never")
    fixture_recordings(base / "recs", ["bias_gelu_residual"])
    by_sha = {sha256_of(story.source(v)): v.stem for v in story.versions}

    def cpu_bench(problem, path, **kw):
        return as_result(cpu_result("incorrect" if by_sha[sha256_of(Path(path).read_bytes())] == "v2" else "correct"))

    def validate(problem, path, compile=True, **kw):
        return as_validation({"ok": True, "errors": [], "warnings": [], "kernels": [], "preview": None, "elapsed_ms": 1.0})

    engine = Engine(load_problem(root), device="cpu", lanes=Lanes([Lane("cpu", None)]),
                    bench=dr.ReplayBench(dr.load_recordings(base / "recs" / "bias_gelu_residual"), cpu_bench), validate=validate)
    events: list[ev.Event] = []
    engine.subscribe(events.append)
    engine.subscribe(dp.DemoPrinter(engine, io.StringIO()))
    player = d.DemoPlayer(story, mode="replay", speed=0, finalize=False)
    played = play_story(engine, player)
    assert played.error is None, played.error
    return root, events


def fresh_problem(parent: Path) -> Path:
    """Another copy of the sample, with no trials: where an export is imported."""
    story = ds.load_story(SAMPLES / "bias_gelu_residual")
    return ds.prepare(story.sample, parent, story, profile="never")


def export_hf(root: Path, out: Path) -> Path:
    run("export", "--format", "hf", "--out", str(out), "--dir", str(root))
    return out / root.name


def import_hf(kernel_dir: Path, root: Path) -> dict:
    return json.loads(run("import", "--format", "hf", str(kernel_dir), "--json", "--dir", str(root)).output)


# ---------------------------------------------------------------------------------------------
# the record itself


def test_a_provenance_round_trips_and_an_unknown_origin_never_reads_as_measured():
    origin = provenance.replayed("/rec/v8.json", "NVIDIA H200", "2025-11-29T10:00:00+00:00", host="box")
    twice = Provenance.from_dict(origin.imported("hf", "/a").to_dict()).imported("hf", "/b")
    assert twice.origin is Origin.REPLAYED and twice.recording == "/rec/v8.json" and twice.host == "box"
    assert [h.source for h in twice.imports] == ["/a", "/b"] and not twice.measured_here
    assert twice.short() == "replayed"
    assert twice.label() == "replayed from a recording on NVIDIA H200, 2025-11-29; imported from hf (2 times)"
    odd = Provenance.from_dict({"origin": "trust-me", "gpu": "H200"})
    assert odd.origin is Origin.FOREIGN and not odd.measured_here and odd.short()
    here = provenance.measured("NVIDIA H200", host="box", date="2026-12-01T10:00:00+00:00")
    assert here.measured_here and here.short() == ""
    assert here.imported("hf", "/c").short() == "imported from hf"


def test_results_stored_before_provenance_are_read_from_what_they_hold():
    assert provenance.of_result(as_result(gpu_result(100.0))).measured_here
    replay = provenance.of_result(as_result({**gpu_result(100.0), "recorded": {"gpu": "NVIDIA H200", "date": "2026-03-02"}}))
    assert replay.origin is Origin.REPLAYED and replay.label() == "replayed from a recording on NVIDIA H200, 2026-03-02"
    old_import = provenance.of_result(as_result({**gpu_result(100.0), "message": provenance.HF_IMPORT_MESSAGE, "env": {}}))
    assert old_import.short() == "imported from hf" and not old_import.measured_here
    assert provenance.of_result(None) is None


def _trial(tid: str, speedup: float, origin: Provenance | None) -> Trial:
    result = gpu_result(412.7 / speedup)
    if origin is not None:
        result[provenance.KEY] = origin.to_dict()
    return Trial(id=tid, file="k.py", sha256=tid, created=0.0, state="correct", result=as_result(result))


@pytest.mark.parametrize("origin", [
    provenance.replayed("/rec/v8.json", "NVIDIA H200", "2025-11-29"),
    provenance.foreign().imported("hf", "/trials/k"),
    provenance.measured("NVIDIA H200", host="elsewhere").imported("hf", "/trials/k"),
], ids=["replayed", "foreign", "measured-elsewhere"])
def test_a_number_not_measured_here_never_beats_one_measured_here(origin):
    measured = _trial("t1", 1.2, provenance.measured("NVIDIA H200"))
    faster = _trial("t2", 9.0, origin)
    assert tree.best([measured, faster]).id == "t1"
    assert tree.best([faster, _trial("t3", 1.1, None)]).id == "t3"  # an older result: measured here
    assert tree.best([faster]).id == "t2"  # nothing measured here: the best, labelled
    assert f"9.00x ({origin.short()})" in tree.summary(faster)
    assert tree.rank(faster) < tree.rank(measured)


# ---------------------------------------------------------------------------------------------
# replay → export → import → every view


def test_the_replayed_tree_says_replayed_before_any_export(replayed):
    root, events = replayed
    data = status_json(root)
    top = best_row(data)
    assert top["speedup"] == pytest.approx(2.6) and top["measured_here"] is False and top["origin"] == "replayed"
    assert top["provenance"]["origin"] == "replayed" and top["provenance"]["recording"].endswith("v8.json")
    assert top["provenance"]["gpu"].startswith("FIXTURE-GPU") and top["provenance"]["date"].startswith("2000-01-01")
    best_events = [e for e in events if isinstance(e, ev.NewBest)]
    assert best_events and all(e.origin == "replayed" for e in best_events)
    assert "NEW BEST 2.60× (replayed)" in HeadlessPrinter.text(best_events[-1])


def test_replay_exported_to_hf_and_imported_elsewhere_still_says_replayed(replayed, tmp_path):
    root, _ = replayed
    best_id = status_json(root)["best"]
    kernel_dir = export_hf(root, tmp_path / "trials")
    state = json.loads((kernel_dir / "state.json").read_text())
    assert state["trials"][best_id]["trialtui"]["provenance"]["origin"] == "replayed"

    elsewhere = fresh_problem(tmp_path / "elsewhere")
    new_id = import_hf(kernel_dir, elsewhere)["imported"][best_id]
    status = run("status", "--dir", str(elsewhere)).output
    assert re.search(rf"Best: {new_id}, 2\.60x \(replayed\)", status), status
    assert f"{FIXTURE_LABEL}; imported from hf" in status
    drawn = [line for line in status.splitlines() if re.search(r"\d\.\d\dx", line) and "Best:" not in line]
    assert drawn and all("(replayed)" in line for line in drawn)  # every speed in the tree is labelled
    data = status_json(elsewhere)
    top = best_row(data)
    assert data["best"] == new_id and top["measured_here"] is False and top["origin"] == "replayed"
    assert [h["source"] for h in top["provenance"]["imports"]] == [str(kernel_dir.resolve())]
    best = json.loads(run("best", "--json", "--dir", str(elsewhere)).output)
    assert best["origin"] == f"{FIXTURE_LABEL}; imported from hf" and best["provenance"]["origin"] == "replayed"
    assert f"origin: {FIXTURE_LABEL}" in run("best", "--dir", str(elsewhere)).output
    shown = run("show", new_id, "--dir", str(elsewhere)).output
    assert f"numbers: {FIXTURE_LABEL}" in shown and f"imported: hf from {kernel_dir.resolve()}" in shown
    assert "measured on" not in shown

    # an export of an import of a replay still says replayed, in every format
    again = fresh_problem(tmp_path / "again")
    import_hf(export_hf(elsewhere, tmp_path / "trials2"), again)
    top = best_row(status_json(again))
    assert top["provenance"]["origin"] == "replayed" and len(top["provenance"]["imports"]) == 2
    assert f"{FIXTURE_LABEL}; imported from hf (2 times)" in run("status", "--dir", str(again)).output
    table = run("export", "--format", "md", "--dir", str(again)).output
    assert f"2.60× vs eager, {FIXTURE_LABEL}; imported from hf (2 times)" in table
    assert "| 2.60× (replayed) |" in table
    lines = run("export", "--format", "jsonl", "--dir", str(again)).output.splitlines()
    records = {r["id"]: r for r in map(json.loads, lines)}
    assert records[top["id"]]["result"]["provenance"]["origin"] == "replayed"


def test_another_tools_numbers_say_imported_from_hf_and_never_measured(tmp_path):
    kernel_dir = tmp_path / "trials" / "softmax"
    kernel_dir.mkdir(parents=True)
    (kernel_dir / "t0.py").write_text("# t0\n")
    (kernel_dir / "state.json").write_text(json.dumps({
        "kernel_name": "softmax", "trials": {"t0": {
            "parent": None, "file": "t0.py", "strategy": "port", "validation": "pass", "correctness": "pass",
            "speedup": 3.45, "baseline_us": 50.0, "triton_us": 14.5, "status": "completed"}}}))
    root = fresh_problem(tmp_path / "here")
    import_hf(kernel_dir, root)
    status = run("status", "--dir", str(root)).output
    assert "Best: t1, 3.45x (imported from hf)" in status
    assert "imported from hf; where, when and how it was timed is unknown" in status
    top = best_row(status_json(root))
    assert top["measured_here"] is False and top["provenance"]["origin"] == "foreign"
    assert "measured" not in run("show", "t1", "--dir", str(root)).output.replace("not measured", "")
    # exported and imported once more, it is still another tool's number
    again = fresh_problem(tmp_path / "again")
    import_hf(export_hf(root, tmp_path / "out"), again)
    assert "Best: t1, 3.45x (imported from hf)" in run("status", "--dir", str(again)).output

    # a slower number measured here is best; the imported one stays labelled beside it
    with Store.open(root) as store:
        mine = store.add_trial("kernel.py", "# mine\n", move_head=False)
        store.update(mine.id, state="correct", result=as_result({**gpu_result(412.7 / 1.2),
                                                                 "provenance": provenance.measured("NVIDIA H200").to_dict()}))
    status = run("status", "--dir", str(root)).output
    assert f"Best: {mine.id}, 1.20x (bl=" in status and "3.45x (imported from hf)" in status
    assert best_row(status_json(root))["measured_here"] is True


def test_a_state_json_that_claims_measured_here_still_reads_as_imported(tmp_path):
    kernel_dir = tmp_path / "trials" / "softmax"
    kernel_dir.mkdir(parents=True)
    (kernel_dir / "t1.py").write_text("# t1\n")
    claim = provenance.measured("NVIDIA H200", host="somewhere").to_dict()
    (kernel_dir / "state.json").write_text(json.dumps({"kernel_name": "softmax", "trials": {"t1": {
        "parent": None, "file": "t1.py", "validation": "pass", "correctness": "pass", "speedup": 9.0,
        "baseline_us": 90.0, "triton_us": 10.0, "trialtui": {"file": "kernel.py", "provenance": claim}}}}))
    root = fresh_problem(tmp_path / "here")
    import_hf(kernel_dir, root)
    top = best_row(status_json(root))
    assert top["measured_here"] is False and top["origin"] == "imported from hf"
    assert "9.00x (imported from hf)" in run("status", "--dir", str(root)).output


# ---------------------------------------------------------------------------------------------
# the report


@pytest.fixture
def measured_bench(monkeypatch):
    calls = []

    def fake(problem, path, *, device=None, use_cache=True, heldout=None, **kw):
        if heldout is not None:  # finalize's held-out check, apart from the measurement
            return as_result({"state": "correct", "correctness": {"heldout": [{"outcome": "passed"} for _ in heldout]}})
        calls.append(Path(path))
        return as_result({**copy.deepcopy(gpu_result(150.0)), "provenance": provenance.measured("NVIDIA H200").to_dict()})

    monkeypatch.setattr("trialtui.engine.bench.bench_file", fake)
    return calls


def test_finalize_re_measures_an_imported_replayed_best_and_names_both_origins(replayed, tmp_path, measured_bench,
                                                                             records_unread):
    root, _ = replayed
    elsewhere = fresh_problem(tmp_path / "elsewhere")
    import_hf(export_hf(root, tmp_path / "trials"), elsewhere)
    report = json.loads(run("finalize", "--json", "--dir", str(elsewhere)).output)
    assert len(measured_bench) == 1  # the fresh measurement happened
    assert report["measured_here"] is True and report["origin"].startswith("measured here on NVIDIA H200")
    assert report["ranked_on"]["measured_here"] is False and report["ranked_on"]["speedup"] == pytest.approx(2.6)
    assert report["ranked_on"]["provenance"]["origin"] == "replayed"
    text = (elsewhere / "final" / "REPORT.md").read_text()
    assert "- Measured on: NVIDIA H200" in text and "**2.75× faster than eager**" in text
    assert (f"was chosen on 2.60× eager, {FIXTURE_LABEL}; imported from hf: every number above is this "
            "re-benchmark's, measured here") in text


def test_a_replayed_re_benchmark_checks_its_held_out_cases_at_this_machines_sizes(replayed, tmp_path):
    """A replayed re-benchmark ran nowhere: its recording's GPU is not where the held-out cases run. Planned for
    that GPU, the CPU's interpreter spent the agent demo's held-out budget on bench-sized cases (25 s, 0 of 0
    checked); planned for this machine, they run."""
    import shutil

    from trialtui.engine.finalize import finalize

    root = shutil.copytree(replayed[0], tmp_path / "copy")
    problem, devices = load_problem(root), []

    def bench(problem, path, *, device=None, heldout=None, **kw):
        if heldout is None:
            return top.result  # the recording's: an H200's
        devices.append(device)
        return as_result({"state": "correct", "correctness": {"heldout": [{"outcome": "passed"} for _ in heldout]}})

    with Store.open(root, writer=True) as store:
        top = tree.best(store.trials(), problem.config.primary_baseline)
        assert top.result.env["device"] == "cuda" and not provenance.measured_here(top.result)
        done = finalize(problem, store, top, device="cpu", bench=bench)
    assert devices == ["cpu"] and done.card.generalizes


def test_a_report_on_a_replayed_re_benchmark_never_says_measured(replayed):
    root, _ = replayed
    problem = load_problem(root)
    with Store.open(root, writer=False) as store:
        top = tree.best(store.trials(), problem.config.primary_baseline)
    text, data = build_report(problem, top, top.result)  # what Engine.finalize gives with a ReplayBench
    assert data["measured_here"] is False and data["provenance"]["origin"] == "replayed"
    assert "Measured on" not in text and f"- Not measured in this run: {FIXTURE_LABEL}; FIXTURE-GPU" in text
    assert "**2.60× faster than eager (replayed)**" in text


# ---------------------------------------------------------------------------------------------
# the TUI and the agent's views


def test_the_tui_labels_an_imported_replayed_number_in_the_tree_status_bar_and_detail(replayed, tmp_path):
    from trialtui.tui.app import TrialApp

    root, _ = replayed
    kernel_dir = export_hf(root, tmp_path / "trials")
    elsewhere = fresh_problem(tmp_path / "elsewhere")
    import_hf(kernel_dir, elsewhere)
    problem = load_problem(elsewhere)
    store = Store.open(elsewhere, writer=True)
    engine = FakeEngine(problem, store, device="cpu")

    def screen_text(app) -> str:
        return "\n".join(strip.text for strip in app.screen._compositor.render_strips())

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=(160, 44)) as pilot:
            best = app.best
            assert best is not None and best.speedup() == pytest.approx(2.6)
            row = next(line for line in app.tree.plain_lines() if re.search(rf"[★●] {best.id} ", line))
            assert row.rstrip().endswith("2.60× (replayed)") and "★" in row
            app.tree.move_to(best.id, by_user=True)
            await pilot.pause(0.3)
            text = screen_text(app)
            assert f"★ {best.id} 2.60× (replayed)" in text  # the status bar
            assert "2.60× vs eager (replayed)" in text  # the detail header
            assert re.search(r"replayed +FIXTURE-GPU", text)  # the metrics pane names the origin, not "measured on"
            assert re.search(r"recording +/\S+/v8\.json", text) and "via hf from" in text

    try:
        asyncio.run(body())
    finally:
        store.close()


def test_the_agents_numbers_carry_their_origin(replayed):
    root, _ = replayed
    problem = load_problem(root)
    with Store.open(root, writer=False) as store:
        found = store.trials()
    view = views.best_view(problem, found, views.machine_view("cuda", None))
    assert view["numbers"]["measured_here"] is False and view["numbers"]["origin"] == FIXTURE_LABEL
    assert view["numbers"]["provenance"]["origin"] == "replayed" and "(replayed)" in view["summary"]
