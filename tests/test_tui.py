"""The TUI driven by keys: every binding against a scripted engine, the tree's layout and follow mode,
and live updates and branch-to-best against the real engine on a CPU problem."""

from __future__ import annotations

import asyncio
import textwrap

import pytest
from textual.command import CommandPalette

from trialtui.core.decide import decide
from trialtui.core.model import TrialState
from trialtui.core.problem_dir import load_problem
from trialtui.core.store import Store
from trialtui.engine import events as ev
from trialtui.tui import app as app_module
from trialtui.tui.app import TrialApp, make_app
from trialtui.tui.describe import CPU_CORRECT
from trialtui.tui.screens.confirm import ConfirmScreen
from trialtui.tui.screens.find import FindScreen
from trialtui.tui.screens.help import HelpScreen
from trialtui.tui.widgets.detail import TrialDetail
from trialtui.tui.widgets.trial_tree import BLANK, BRANCH, LAST, layout

from conftest import KB_GOOD, as_result, as_validation, write_problem
from test_tui_scenarios import STORY, FakeEngine, add_running, gpu_result, running_events, scenario, utc, version  # noqa: F401

SIZE = (120, 36)


def run(coro):
    return asyncio.run(coro)


def screen_text(app: TrialApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def wait_for(pilot, predicate, timeout: float = 60.0, step: float = 0.1) -> None:
    waited = 0.0
    while not predicate():
        assert waited < timeout, "timed out waiting for the app"
        await pilot.pause(step)
        waited += step


@pytest.fixture
def story(tmp_path, utc):
    problem, store, engine = scenario(tmp_path, len(STORY))
    yield problem, store, engine
    store.close()


def test_layout_keeps_a_run_of_saves_flat_and_hangs_several_children_as_branches(story):
    problem, store, _ = story
    rows = layout(store.trials())
    assert [r.trial_id for r in rows] == ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"]
    prefixes = {r.trial_id: r.prefix for r in rows}
    assert prefixes["t4"] == BRANCH and prefixes["t5"] == LAST  # t3's children; t5 branched back to t3
    assert all(prefixes[t] == "" for t in ("t1", "t2", "t3"))
    assert all(prefixes[t] == BLANK for t in ("t6", "t7", "t8"))  # t5's line, drawn under t3


def test_tree_shows_glyph_id_strategy_outcome_best_and_head(story):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE):
            lines = app.tree.plain_lines()
            assert lines[0].startswith("● t1 one program per row")  # no room for the file name too
            assert lines[0].endswith("1.00×")
            assert lines[1].startswith("✗ t2 four rows per program") and lines[1].endswith(" wrong")
            assert lines[7].startswith(BLANK + "★ t8 ▸ rows per program") and lines[7].endswith("2.10×")
            assert app.tree.cursor_id == "t8"  # opens on the newest trial

    run(body())


def test_a_wrong_shape_reads_both_shapes_in_the_tree_and_the_next_panel(story):
    problem, store, engine = story
    shapes = "case 1 (defaults) seed 0: output: shape expected (16384, 8192), got (16384, 4096)"
    store.update("t2", result=as_result(gpu_result(None, "incorrect", shapes, max_abs_err=0.0, max_rel_err=0.0)))
    trial = store.get("t2")
    store.update("t2", decision=decide(store.trials(), trial, [], problem.config))

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            assert app.tree.plain_lines()[1].endswith(" wrong shape")
            app.go_to("t2")
            await pilot.pause()
            text = screen_text(app)
            assert "wrong shape: expected (16384, 8192), got (16384, 4096)" in text  # the detail's header
            reason = store.get("t2").decision.reason
            assert "shape expected (16384, 8192), got (16384, 4096)" in reason
            assert "0.0e+00" not in text and "e+00" not in " ".join(store.get("t2").decision.evidence)

    run(body())


def test_arrows_and_vim_keys_move_the_cursor_and_enter_opens_the_detail(story):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("k", "up")
            assert app.tree.cursor_id == "t6"
            await pilot.press("j")
            assert app.tree.cursor_id == "t7"
            await pilot.press("down")
            assert app.tree.cursor_id == "t8"
            await pilot.press("g")
            assert app.tree.cursor_id == "t1"
            await pilot.press("G", "h")
            assert app.tree.cursor_id == "t7"  # h: to the parent
            await pilot.pause()
            assert "row in registers" in screen_text(app)
            await pilot.press("enter")
            assert app.focused is not None and app.focused.id == "metrics-scroll"
            await pilot.press("escape")
            assert app.focused is app.tree

    run(body())


def test_b_branches_to_best_writing_its_source_and_moving_the_head(story):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("g")
            await pilot.press("b")
            await pilot.pause()
            assert ("branch", "t8") in engine.calls
            assert (problem.root / "kernel.py").read_text() == store.read_source(store.get("t8"))
            assert store.heads["kernel.py"] == "t8"
            assert app.tree.cursor_id == "t8"
            assert "now holds t8's source" in " ".join(n.message for n in app._notifications)

    run(body())


def test_an_old_trials_next_panel_names_the_best_that_b_goes_to(story):
    """Issue 36, point 9: t4 was decided when t3 was best ("go back to t3 [b]"); t8 is best now."""
    problem, store, engine = story
    then = store.trials()[:4]
    store.update("t4", decision=decide(then, then[-1], [], problem.config))
    assert "go back to t3 [b]" in store.get("t4").decision.reason

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            app.go_to("t4")
            await pilot.pause()
            panel = " ".join(screen_text(app).split("Next · t4", 1)[1].split())
            assert "go back to best t8 [b] (t3" in panel and "was best then)" in panel, panel
            assert "go back to t3" not in panel
            await pilot.press("b")
            assert engine.calls[-1] == ("branch", "t8")

    run(body())


def test_B_branches_from_the_cursor_trial(story):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            app.go_to("t3")
            await pilot.press("B")
            await pilot.pause()
            assert ("branch", "t3") in engine.calls
            assert (problem.root / "kernel.py").read_text() == store.read_source(store.get("t3"))
            assert "▸" in app.tree.plain_lines()[2]

    run(body())


def test_r_reruns_and_p_profiles_the_cursor_trial(story):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            app.go_to("t5")
            await pilot.press("r", "p")
            assert ("rerun", "t5") in engine.calls
            assert ("profile", "t5") in engine.calls

    run(body())


def test_x_cancels_the_running_job_and_is_hidden_when_idle(story):
    problem, store, engine = story
    add_running(store, problem, engine)

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            for event in running_events(store):
                engine.emit(event)
            await pilot.pause()
            assert app.check_action("cancel", ()) is True
            app.go_to("t1")
            await pilot.press("x")
            assert ("cancel", "t9") in engine.calls  # the running job, not the cursor's finished trial
            app.go_to("t10")
            await pilot.press("x")
            assert ("cancel", "t10") in engine.calls  # the cursor's queued trial
            for trial_id in ("t9", "t10"):
                store.update(trial_id, state=TrialState.CANCELLED)
                engine.emit(ev.StateChanged(trial_id, "cancelled", "cancelled"))
            engine.emit(ev.QueueChanged(lanes={"gpu0": None}, queued=[]))
            await pilot.pause()
            assert app.check_action("cancel", ()) is False  # idle: nothing left to cancel

    run(body())


def test_x_cancels_a_trial_still_compiling_says_so_and_the_status_bar_agrees_with_the_tree(story):
    """Issue 36, point 3: the cpu lane waits for t9's compile stage (its CPU preview): the status bar and
    the tree both say validating, x cancels it with a message, and says so when the engine had no job."""
    problem, store, engine = story
    add_running(store, problem, engine)
    store.update("t9", state=TrialState.VALIDATING)
    answers = iter([True, False])
    engine.cancel = lambda trial_id: engine.calls.append(("cancel", trial_id)) or next(answers)

    async def body():
        app = TrialApp(problem, engine, clock=lambda: 1000.0)
        async with app.run_test(size=SIZE) as pilot:
            engine.emit(ev.QueueChanged(lanes={"gpu0": "t9"}, queued=[]))
            engine.emit(ev.StateChanged("t9", "validating", "compiling and checking on the CPU first"))
            await pilot.pause()
            status = screen_text(app).splitlines()[1]
            assert "▶ t9 validating" in status, status
            row = next(line for line in app.tree.plain_lines() if " t9 " in line)
            assert row.endswith("validating"), row
            app.go_to("t9")
            await pilot.press("x")
            assert engine.calls[-1] == ("cancel", "t9")
            assert any("cancelling t9 (validating)" in n.message for n in app._notifications)
            await pilot.press("x")  # the engine has nothing left to cancel for it
            assert any("t9 has no job to cancel any more" in n.message for n in app._notifications)
            engine.emit(ev.QueueChanged(lanes={"gpu0": None}, queued=[]))  # validating off the lanes (a rerun's)
            await pilot.pause()
            assert app.check_action("cancel", ()) is True  # x stays while a trial is unfinished

    run(body())


def test_running_job_shows_elapsed_time_and_progress_in_the_status_bar(story):
    problem, store, engine = story
    add_running(store, problem, engine)
    now = [100.0]

    async def body():
        app = TrialApp(problem, engine, clock=lambda: now[0])
        async with app.run_test(size=SIZE) as pilot:
            for event in running_events(store):
                engine.emit(event)
            await wait_for(pilot, lambda: "t9" in app.status.activity.started)
            now[0] = 104.0
            for i in range(1, 5):  # a burst: the unhandled ones coalesce
                engine.emit(ev.Progress("t9", "timing", None, None, i * 40))
            await wait_for(pilot, lambda: getattr(app.status.activity.progress.get("t9"), "runs", 0) == 160)
            app.status.refresh()
            await pilot.pause()
            text = screen_text(app)
            assert "▶ t9 benchmarking 0:04" in text
            assert "timing 160 runs" in text
            assert "1 queued" in text
            assert "2 saves since last result" in text

    run(body())


def test_a_burst_of_progress_events_coalesces_into_few_repaints(story):
    problem, store, engine = story
    handled = []

    class Counting(TrialApp):
        def on_job_progress(self, message) -> None:
            handled.append(message.event.runs)
            super().on_job_progress(message)

    async def body():
        app = Counting(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            for runs in range(1, 201):
                engine.emit(ev.Progress("t8", "timing", None, None, runs))
            await wait_for(pilot, lambda: handled and handled[-1] == 200)
            assert len(handled) < 20  # the rest were replaced before they were handled

    run(body())


def test_follow_mode_jumps_to_new_trials_until_the_user_moves(story):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            new = store.add_trial("kernel.py", version(9, "wider rows"), parent="t8")
            engine.emit(ev.TrialCreated(new.id, new.file, new.parent, new.strategy))
            await pilot.pause()
            assert app.tree.cursor_id == "t9"  # following
            await pilot.press("k")
            assert not app.follow
            newer = store.add_trial("kernel.py", version(10, "narrower rows"), parent="t9")
            engine.emit(ev.TrialCreated(newer.id, newer.file, newer.parent, newer.strategy))
            await pilot.pause()
            assert app.tree.cursor_id == "t8"
            assert "1 new trial — f to follow" in screen_text(app)
            await pilot.press("f")
            await pilot.pause()
            assert app.follow and app.tree.cursor_id == "t10"
            assert "new trial" not in screen_text(app)

    run(body())


def test_state_changes_update_one_line_in_place(story):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            tree_widget = app.tree
            new = store.add_trial("kernel.py", version(9, "wider rows"), parent="t8")
            engine.emit(ev.TrialCreated(new.id, new.file, new.parent, new.strategy))
            await pilot.pause()
            rows_before = tree_widget.rows
            store.update("t9", state="queued")
            engine.emit(ev.StateChanged("t9", "queued"))
            await pilot.pause()
            assert tree_widget.rows is rows_before  # no re-layout for a state change
            assert app.tree.plain_lines()[-1].endswith("queued")

    run(body())


def test_F_asks_before_finalizing_and_runs_it_off_the_ui_thread(story, monkeypatch):
    problem, store, engine = story
    calls = []

    def fake_finalize(problem_, store_, trial, device, executor=None):
        calls.append((trial.id, device))
        return True, f"wrote final/{trial.file}"

    monkeypatch.setattr(app_module, "finalize_trial", fake_finalize)

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("F")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            assert "Finalize t8?" in screen_text(app)
            await pilot.press("n")
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen) and calls == []
            await pilot.press("F")
            await pilot.pause()
            await pilot.press("y")
            await wait_for(pilot, lambda: calls)
            await pilot.pause(0.3)
            assert calls == [("t8", "cuda")]
            assert not engine.paused  # watching resumes afterwards
            assert ("pause", None) in engine.calls and ("resume", None) in engine.calls
            assert any("wrote final/kernel.py" in n.message for n in app._notifications)

    run(body())


def test_d_toggles_diff_against_the_parent_and_s_toggles_raw_profile(story):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            app.go_to("t3")
            await pilot.press("d")
            await pilot.pause()
            detail = app.query_one(TrialDetail)
            assert detail.active == "source" and detail.diff
            assert "diff t2 → t3" in screen_text(app)
            await pilot.press("d")
            await pilot.pause()
            assert not detail.diff and "kernel.py @ t3" in screen_text(app)
            await pilot.press("s")
            await pilot.pause()
            assert detail.active == "profile" and not detail.raw
            assert "Memory-bound at low bandwidth" in screen_text(app)
            await pilot.press("s")
            await pilot.pause()
            assert detail.raw and "raw profile of t3" in screen_text(app)
            assert "SOLBottleneck" in screen_text(app)

    run(body())


def test_the_raw_profile_shows_the_librarys_share_of_its_kernel_records(story):
    """The split the `fallback` flag reads (core/kernel_split.py), beside the records it comes from: t3's profile
    ran `rmsnorm_fwd`, which its validation does not name as a kernel of its own."""
    problem, store, engine = story
    store.update("t3", validation=as_validation({"ok": True, "errors": [], "warnings": [], "preview": None,
                                                 "kernels": [{"name": "token_kernel"}]}))

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            app.go_to("t3")
            for _ in range(2):
                await pilot.press("s")
                await pilot.pause()
            assert "own kernels 0% of GPU time (0.0 µs a call), library 100% (312.0 µs)" in screen_text(app)

    run(body())


def test_the_metrics_show_the_benchs_split_of_gpu_work(story):
    """Issue 33: the view shows how much of the timed calls' GPU time was the candidate's own kernels."""
    import dataclasses

    problem, store, engine = story
    t3 = store.get("t3")
    timing = {**t3.result.timing, "kernels": {"own_us": 10.0, "library_us": 90.0, "own_share": 0.1,
                                             "library_top": [["torch.matmul", 90.0]]}}
    store.update("t3", result=dataclasses.replace(t3.result, timing=timing))

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            app.go_to("t3")
            await pilot.press("1")
            await pilot.pause()
            assert "own kernels 10% of the GPU time, library 90% (torch.matmul" in screen_text(app)

    run(body())


def test_number_keys_pick_tabs_and_the_tab_stays_chosen_across_trials(story):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("4")
            await pilot.pause()
            assert app.detail.active == "log" and "logs/t8.log" in screen_text(app)
            await pilot.press("k")
            await pilot.pause()
            assert app.detail.active == "log" and "logs/t7.log" in screen_text(app)
            await pilot.press("1")
            assert app.detail.active == "metrics"

    run(body())


def test_space_pauses_and_resumes_watching(story):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("space")
            await pilot.pause()
            assert engine.paused and "⏸ paused" in screen_text(app)
            await pilot.press("space")
            await pilot.pause()
            assert not engine.paused and "● watching" in screen_text(app)

    run(body())


def test_slash_finds_a_trial_by_id_or_words_and_escape_goes_back(story):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("slash")
            await pilot.pause()
            assert isinstance(app.screen, FindScreen)
            await pilot.press(*"registers")
            await pilot.pause()
            assert app.tree.cursor_id == "t7"
            await pilot.press("enter")
            await pilot.pause()
            assert not isinstance(app.screen, FindScreen) and app.tree.cursor_id == "t7"
            await pilot.press("slash", "3")
            await pilot.pause()
            assert app.tree.cursor_id == "t3"
            await pilot.press("escape")
            await pilot.pause()
            assert app.tree.cursor_id == "t7"

    run(body())


@pytest.mark.parametrize("key", ["question_mark", "f1"])
def test_help_opens_on_question_mark_and_f1(story, key):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            text = screen_text(app)
            assert "branch to best" in text and "Glyphs" in text
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, HelpScreen)

    run(body())


def test_q_stops_the_engine_and_quits(story):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("q")
            await pilot.pause()
            assert engine._stop is not None and engine._stop.is_set()
        assert app.return_code == 0

    run(body())


def test_command_palette_goes_to_a_trial(story):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("ctrl+p")
            await pilot.pause()
            assert isinstance(app.screen, CommandPalette)
            await pilot.press(*"go to trial t3")
            await wait_for(pilot, lambda: "Go to trial t3" in screen_text(app))
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.tree.cursor_id == "t3")

    run(body())


def test_command_palette_offers_branch_export_finalize_and_themes_built_in_and_the_users(story, tmp_path,
                                                                                        monkeypatch):
    problem, store, engine = story
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "config" / "trialtui" / "themes").mkdir(parents=True)
    (tmp_path / "config" / "trialtui" / "themes" / "mine.toml").write_text('name = "mine"\nprimary = "#ff00ff"\n')

    async def body():
        app = TrialApp(problem, engine, theme="mine")  # what `trialtui --theme mine` opens
        async with app.run_test(size=SIZE) as pilot:
            from trialtui.tui.commands import TrialCommands

            assert app.theme == "mine" and app.theme_problems == []
            names = [name for name, _, _ in TrialCommands(app.screen)._commands()]
            assert "Branch from trial t3" in names and "Finalize best t8" in names
            assert "Export trials as markdown" in names
            assert {"Switch theme: trialtui-light", "Switch theme: trialtui-contrast", "Switch theme: mine"} <= set(names)
            app.export("md")
            assert "| **t8** |" in (problem.root / "trials.md").read_text()
            app.switch_theme("trialtui-light")
            await pilot.pause()
            assert app.theme == "trialtui-light"

    run(body())


def test_footer_shows_only_the_keys_that_work_now(tmp_path, utc):
    empty = write_problem(tmp_path / "empty", files={})
    problem = load_problem(empty)
    store = Store.open(empty, writer=True)
    engine = FakeEngine(problem, store)

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            for _ in range(200):  # the footer's first paint can lag a pause on a busy machine
                await pilot.pause(0.05)
                footer = screen_text(app).splitlines()[-1]
                if footer.strip():
                    break
            assert "Quit" in footer and "Best" not in footer and "Finalize" not in footer
            assert "Cancel" not in footer and "Re-run" not in footer
            assert "Save a candidate file" in screen_text(app)

    run(body())
    store.close()


def test_unknown_theme_falls_back_with_a_notice(story):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine, theme="nope")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert app.theme == "trialtui"
            assert any("no theme 'nope'" in n.message for n in app._notifications)

    run(body())


def test_new_best_event_raises_a_toast_with_the_gain(story):
    problem, store, engine = story

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            engine.emit(ev.NewBest("t8", 2.10, "t7", 1.80))
            await pilot.pause()
            assert any("t8 beats t7: 1.80× → 2.10× (+0.30)" in n.message for n in app._notifications)

    run(body())


def test_demo_plays_against_the_running_engine(story):
    problem, store, engine = story
    played = []

    class Demo:
        async def play(self, target) -> None:
            played.append(target)
            target.emit(ev.Notice("demo: saving version 2"))

    async def body():
        app = make_app(problem, engine=engine, demo=Demo())
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: played)
            await pilot.pause()
            assert played == [engine]
            assert any("demo: saving version 2" in n.message for n in app._notifications)

    run(body())


# The real engine, on a CPU problem: validation, Triton's interpreter, the decision.

BAD = KB_GOOD.replace("tl.maximum(x + b, 0.0)", "tl.maximum(x - b, 0.0)")


@pytest.mark.slow
def test_live_updates_from_the_real_engine_on_the_cpu(tmp_path):
    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})

    async def body():
        app = make_app(load_problem(root), device="cpu")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: "t1" in app.trials)
            await wait_for(pilot, lambda: app.trials["t1"].decision is not None, timeout=300)
            await pilot.pause(0.2)
            text = screen_text(app)
            assert "correct (CPU)" in app.tree.plain_lines()[0]
            assert CPU_CORRECT in text
            assert "CPU · Triton interpreter" in text
            assert "×" not in app.tree.plain_lines()[0]  # a CPU run is never a speed
            (root / "kernel.py").write_text(textwrap.dedent(BAD))
            await wait_for(pilot, lambda: "t2" in app.trials and app.trials["t2"].decision is not None, timeout=300)
            await pilot.pause(0.2)
            assert app.trials["t2"].parent == "t1"
            assert app.tree.cursor_id == "t2"  # followed
            assert "wrong" in app.tree.plain_lines()[1]
            assert "Incorrect: t2 fails the correctness check" in screen_text(app)
            await pilot.press("q")

    run(body())


@pytest.mark.slow
def test_branch_to_best_with_the_real_engine_then_the_next_save_is_a_child_of_best(tmp_path, utc):
    problem, store, _ = scenario(tmp_path, len(STORY))
    store.close()
    (problem.root / "kernel.py").write_text(version(4, STORY[3][0]))  # the file holds t4 (a regression)

    async def body():
        app = make_app(problem, device="cpu")
        engine = app.engine
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: engine.store.heads.get("kernel.py") == "t4")
            await pilot.pause(0.5)  # the watcher is up
            await pilot.press("b")
            await pilot.pause()
            assert (problem.root / "kernel.py").read_text() == version(8, STORY[7][0])
            assert engine.store.heads["kernel.py"] == "t8"
            (problem.root / "kernel.py").write_text(version(9, "wider rows per program"))
            await wait_for(pilot, lambda: "t9" in app.trials, timeout=300)
            assert app.trials["t9"].parent == "t8"
            await wait_for(pilot, lambda: app.trials["t9"].state_enum.is_final, timeout=300)
            await pilot.press("q")

    run(body())


def test_status_bar_shows_every_lane_when_there_are_several_gpus(story):
    problem, store, engine = story
    add_running(store, problem, engine)

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            engine.emit(ev.QueueChanged(lanes={"gpu0": "t9", "gpu1": None}, queued=["t10"]))
            await wait_for(pilot, lambda: "gpu1" in app.status.activity.lanes)
            app.status.refresh()
            await pilot.pause()
            text = screen_text(app)
            assert "on gpu0" in text and "gpu1 idle" in text

    run(body())
