"""The confirmation band (issue 33): the candidate's events stand as the headline only within it of the checker's
clock less the harness's cost; narrow where the checker measured that cost beside the candidate's batches on
the reference's own call (runner/timed_batch.Yardstick), and that only for short calls."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from trialtui.runner import timed_phase, timing
from trialtui.runner.timed_batch import CheckerLoop, Yardstick

HARNESS_US = 60.0


def walls(per_call_us: float, fixed_us: float = 1200.0) -> list[tuple[float, int, list[float]]]:
    return [(fixed_us + per_call_us * n, n, []) for n in (25, 100) * 4]


@pytest.mark.parametrize("band", [timing.WIDE, timing.NARROW])
def test_the_band_confirms_down_to_its_edge_and_no_further(band):
    per_call = HARNESS_US + 11.2  # a latency-bound 11.2 µs GEMM, as the clock sees it
    edge = (11.2 - band.slack_us) * (1 - band.tol)
    assert band.edge(11.2) == pytest.approx(edge)
    for claim, confirmed in ((11.2, True), (edge * 1.001, True), (edge * 0.99, False)):
        assert timing.confirm(claim, per_call, HARNESS_US, band)[1] is confirmed, claim
        stats = timing.confirmed_stats(timing.summarize([claim] * 40), walls(per_call), HARNESS_US, band)
        assert stats["confirmed"] is confirmed
        if not confirmed:  # the headline is the clock's, the claim kept beside it
            assert stats["median_us"] == pytest.approx(11.2, abs=0.01) and stats["claimed"]["median_us"] == claim


def test_the_narrow_band_holds_a_forged_report_on_a_short_call_the_wide_one_let_through():
    # what a forger that does the whole work of an 11.2 µs call can have confirmed: the wide band's edge is a
    # 1.65 µs claim (6.8x, held only by the physical floor), the narrow band's 6.8 µs (1.65x)
    wide, narrow = timing.WIDE.edge(11.2), timing.NARROW.edge(11.2)
    assert 11.2 / wide > 6 and 11.2 / narrow < 1.7
    # above YARDSTICK_BELOW_US the wide band alone holds it under 1.25x
    above = timing.YARDSTICK_BELOW_US
    assert above / timing.WIDE.edge(above) < 1.25


def checker_loop(walls, events, landings=(), rhythms=None):
    """A CheckerLoop holding batches as a GPU run would have left them (no rhythm read: the CPU's events)."""
    loop = CheckerLoop.__new__(CheckerLoop)
    loop.walls, loop.events, loop.captured, loop.landings = walls, events, object(), list(landings)
    loop.rhythms = [None] * len(walls) if rhythms is None else rhythms
    return loop


def test_the_yardstick_reads_the_harness_as_its_clock_less_the_references_own_events():
    yardstick = Yardstick.__new__(Yardstick)
    yardstick.loop, yardstick.usable, yardstick.pair_us = checker_loop(walls(HARNESS_US + 8.0), [9.3] * 40), True, 1.3
    yardstick.landed = False
    assert yardstick.harness_us() == pytest.approx(HARNESS_US)  # 68 µs a call less the reference's 9.3 - 1.3
    assert yardstick.figures() == {**pytest.approx({"reference_events_us": 8.0, "reference_clock_us": HARNESS_US + 8.0,
                                                    "harness_us": HARNESS_US}).expected,
                                   "reference_landing_us": None, "reference_rhythm_us": None, "landing_harness_us": None}
    yardstick.restart()
    assert yardstick.harness_us() is None and yardstick.figures() is None  # a loop timed again starts it afresh
    yardstick.usable = False
    yardstick.loop.walls, yardstick.loop.events = walls(HARNESS_US + 8.0), [9.3] * 40
    assert yardstick.harness_us() is None  # not looped as the candidate's calls were: the wide band


def phase(overhead_us: float) -> timed_phase.TimedPhase:
    return timed_phase.TimedPhase(spec=None, reference=None, link=None, deadline=None, facts=None, progress=print,
                                  splits=None, device="cuda", bencher=object(), overhead_us=overhead_us, graphed=True)


def test_the_reference_runs_beside_only_calls_the_checker_clocks_short(monkeypatch):
    short, long_ = walls(HARNESS_US + timing.YARDSTICK_BELOW_US - 1), walls(HARNESS_US + timing.YARDSTICK_BELOW_US + 5)
    assert phase(HARNESS_US)._short(short) and not phase(HARNESS_US)._short(long_)
    assert not phase(HARNESS_US)._short(short[:1])  # one batch size: no slope yet
    # small batches held back make a call look shorter, never longer: the reference runs beside it
    tilted = [(wall + (1500.0 if n == 25 else 0.0), n, s) for wall, n, s in walls(HARNESS_US + 85.0)]
    assert not phase(HARNESS_US)._short(walls(HARNESS_US + 85.0)) and phase(HARNESS_US)._short(tilted)
    # large batches held back early make it look long; the whole loop's clock judges it again
    early = [(wall + (4000.0 if n == 100 else 0.0), n, s) for wall, n, s in short[:2]]
    assert not phase(HARNESS_US)._short(early) and phase(HARNESS_US)._short(early + short)

    made = []

    class Built:
        def __init__(self, *args):
            made.append(args)
            self.usable = usable

    monkeypatch.setattr(timed_phase, "Yardstick", Built)
    monkeypatch.setattr(timed_phase, "checker_copies", lambda sets, bencher: ("copies", sets))
    setup = SimpleNamespace(sets=["set"], ref_call=SimpleNamespace(fn=len), layout="layout", batches=(25, 100))
    usable = True
    assert isinstance(phase(HARNESS_US)._yardstick(setup, 1.3), Built) and made[-1][-2:] == (True, 1.3)
    usable = False
    assert phase(HARNESS_US)._yardstick(setup, 1.3) is False  # a reference it cannot loop: the wide band


def test_a_yardstick_started_late_completes_its_batches():
    yardstick = Yardstick.__new__(Yardstick)
    yardstick.loop, yardstick.usable, yardstick.pair_us = checker_loop([(3200.0, 25, [])], [9.3] * 25), True, 1.3
    yardstick.loop.batch = lambda n: (yardstick.loop.walls.append((1200.0 + 68.0 * n, n, [])),
                                      yardstick.loop.rhythms.append(None))
    yardstick.complete((25, 100))
    assert sorted(n for _, n, _ in yardstick.loop.walls) == [25, 25, 100, 100]
    yardstick.usable = False
    yardstick.complete((25, 100, 400))  # nothing it can run: it stops, the wide band holds
    assert len(yardstick.loop.walls) == 4


def test_an_open_class_is_measured_not_held_and_the_tilt_is_held_now(tmp_path):
    path = Path(__file__).resolve().parent.parent / "benches" / "gpu_exploits.py"
    spec = importlib.util.spec_from_file_location("gpu_exploits", path)
    gpu_exploits = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_exploits)
    opened = tmp_path / "opened.py"
    opened.write_text("# gpu-expect: correct\n# open: a class docs/SECURITY.md names as not covered\n")
    assert gpu_exploits.expectation(opened)["open"] == "a class docs/SECURITY.md names as not covered"
    for problem, name in (("gemm_short_bf16", "tilts_the_slope.py"), ("gemm_short_bf16", "starts_late.py"),
                          ("gemm_short_bf16", "tilts_eagerly.py"), ("gemm_mid_bf16", "tilts_long.py")):
        want = gpu_exploits.expectation(gpu_exploits.CORPUS / problem / name)  # the landing clock: no reply, no slope
        assert want["state"] == "correct" and want["open"] is None


def test_the_landing_clock_confirms_a_claim_within_its_band_and_raises_it_to_its_own_figure():
    """Batches started on the checker's go (runner/go_gate.py): each landing is the calls' work and the harness's,
    with no reply in it; honest events at or above the clock stand as they are, a claim in the band but under the
    clock is raised to the clock's figure (a claim at the edge gains nothing), one under the edge gets the clock's."""
    landings = [(100 * (HARNESS_US + 11.4), 100), (25 * (HARNESS_US + 11.6), 25), (100 * (HARNESS_US + 11.9), 100)]
    honest = timing.landed_stats(timing.summarize([11.5, 11.6, 11.7] * 10), landings, HARNESS_US)
    assert honest["confirmed"] and honest["median_us"] == 11.6 and "claimed" not in honest and "raised_us" not in honest
    edge = timing.LANDED.edge(11.4)
    at_edge = timing.landed_stats(timing.summarize([edge + 0.01, edge + 0.11] * 20), landings, HARNESS_US)
    assert at_edge["confirmed"] and at_edge["median_us"] == pytest.approx(11.4)  # the clock's fastest large batch
    assert at_edge["claimed"]["median_us"] == pytest.approx(edge + 0.06) and at_edge["raised_us"] == pytest.approx(11.4 - edge - 0.06)
    assert at_edge["p80_us"] - at_edge["p20_us"] == pytest.approx(0.1) and at_edge["min_us"] >= 11.3  # the spread kept
    forged = timing.landed_stats({"median_us": edge - 0.01}, landings, HARNESS_US)
    assert not forged["confirmed"] and forged["claimed"]["median_us"] == pytest.approx(edge - 0.01)
    assert forged["median_us"] == pytest.approx(11.4)  # its largest batches' fastest, less the harness
    assert forged["batches_median_us"] == pytest.approx(11.65) and forged["p80_us"] == pytest.approx(11.9)


@pytest.mark.parametrize("band", [timing.LANDED, timing.NARROW, timing.WIDE])
@pytest.mark.parametrize("seen_us", [0.8, 2.1, 5.5, 11.4, 45.0, 101.0, 195.0])
def test_no_claim_on_the_landing_clock_reads_under_the_clock_s_own_figure(band, seen_us):
    """The class: a process that does the whole work and reports events under it. Whatever it claims, on any band
    the landing clock is judged with, its headline is never under the clock's fastest large batch less the harness:
    the band is the clock's scatter, not the candidate's to spend (on a 2.8 µs add the LANDED band's edge lay at 0.8 µs,
    on 2 µs calls at zero: 3.5x and more, held only by the physical floor)."""
    landings = [(100 * (HARNESS_US + seen_us), 100), (25 * (HARNESS_US + seen_us + 0.3), 25),
                (100 * (HARNESS_US + seen_us + 0.2), 100)] * 2
    for claim in [seen_us * f for f in (0.0, 0.05, 0.3, 0.5, 0.7, 0.9, 0.97, 0.999, 1.0, 1.2)] + [band.edge(seen_us)]:
        figures = timing.landed_stats(timing.summarize([max(claim, 1e-3)] * 40), landings, HARNESS_US, band)
        assert figures["median_us"] >= seen_us - 1e-9, (claim, figures)
        assert figures["median_us"] <= max(claim, seen_us + 0.2) + 1e-9  # and no dearer than the clock or the claim


def test_an_honest_kernel_is_raised_only_where_the_clock_read_above_its_events_on_the_h200():
    """What the floor costs honest kernels, on every gated honest row the H200 gave (tiny kernels and the exploit
    corpus's honest ones, 04j-05c): where the clock less the harness read under the events (most rows) they stand;
    where it read above, the headline moves by that, never more than 0.75 µs (softmax fp32 8192 x 1024 in 04m:
    17.09 against 17.82 µs); and the tiny adds whose band edge lay at or near zero are held at the clock's figure,
    what is left the clock's own scatter under 3 µs: 1.34x at most in 05b, 1.96x on 04m's 2.9 µs add (its clock less
    the harness 1.50 µs), where the band had let a claim at zero stand."""
    runs = Path(__file__).resolve().parent / "fixtures" / "gpu"
    rows = [(run, row) for run in ("h200-2026-12-04j", "h200-2026-12-04m", "h200-2026-12-05a", "h200-2026-12-05b", "h200-2026-12-05c")
            for name in ("tiny.json", "exploits.json") if (runs / run / name).exists()
            for row in json.loads((runs / run / name).read_text())["rows"]]
    checked = 0
    for run, row in rows:
        landing, name = row.get("landing") or {}, row.get("case") or row.get("candidate")
        harness = landing.get("harness_us") or (row.get("reference_loop") or {}).get("landing_harness_us")
        if not landing.get("gated") or harness is None or not (name in ("honest.py",) or row.get("case")):
            continue
        batches = ([tuple(b) for b in landing["batches"]] if isinstance(landing["batches"], list)  # 04j kept a count
                   else [(100 * landing["per_call_us"], 100)])
        band = timing.WIDE if row["events_us"] > 80 else timing.LANDED
        figures = timing.landed_stats({"median_us": row["events_us"]}, batches, harness, band)
        seen = timing.landing_per_call_us(batches) - harness
        assert figures["confirmed"], (run, name)
        assert figures["median_us"] == pytest.approx(max(row["events_us"], seen)), (run, name)
        assert figures["median_us"] - row["events_us"] < 0.75, (run, name)
        if band.edge(seen) < 0.5 * row["events_us"]:  # a claim at the old edge: more than 2x, now held at the clock
            forged = timing.landed_stats({"median_us": max(band.edge(seen), 1e-3)}, batches, harness, band)
            assert forged["median_us"] == pytest.approx(seen) and row["events_us"] / seen < 2.0, (run, name)
        checked += 1
    assert checked >= 30


class FakeYardstick:
    def __init__(self, landed, deferred=True):
        self.landed, self.deferred = landed, deferred

    def complete(self, batches):
        pass

    def harness_us(self):
        return HARNESS_US

    def landing_harness_us(self):
        return self.landed

    def figures(self):
        return {"harness_us": HARNESS_US, "landing_harness_us": self.landed}

    def close(self):
        pass


@pytest.mark.parametrize("graphed, gated, own_landing, long_call, deferred, band, clock", [
    (True, True, 60.0, False, (True, True), "LANDED", 60.0),  # queued behind the gate: the landing clock from the go
    (True, False, 60.0, False, (True, True), "LANDED", 60.0),  # its process declined the gate: the same clock, from the request
    (False, False, 60.0, False, (False, True), "NARROW", 60.0),  # calls it could not capture: landing from the request
    (True, True, None, False, (True, True), "NARROW", 55.0),  # the checker's own loop beside could not land: ahead's
    (True, True, 60.0, True, (True, True), "WIDE", 55.0),  # a long call: the harness measured ahead, on the landing clock
    (True, True, 60.0, False, (False, True), "LANDED", 60.0),  # it copies call by call (or says so): its copies are its own
    (True, True, 60.0, False, (True, False), "NARROW", 55.0),  # the reference's loop could not copy after: ahead's landing
    (True, True, 60.0, False, (False, False), "NARROW", 55.0),
])
def test_declining_the_gate_or_the_pad_buys_no_wider_band(monkeypatch, graphed, gated, own_landing, long_call, deferred,
                                                         band, clock):
    """The band a call's events are held to and its clock are the checker's choice, from what it measured itself:
    a candidate's process that declines the gate is judged on the landing clock from the request (no shorter a
    clock), and one that takes no pad, or lands no hash, has no claim confirmed (_candidate: `unlanded`). The
    landing clock less the reference's loop beside where that loop copied its outputs after its landings
    (timed_batch.Captured) or, eagerly, as an eager candidate's does; else less the harness measured ahead: a
    candidate's loop that copies call by call is not taken off its copies, whatever its process says."""
    monkeypatch.setattr(timed_phase.TimedPhase, "_yardstick",
                        lambda self, setup, pair_us: FakeYardstick(own_landing, deferred[1]))
    test = phase(HARNESS_US)
    test.graphed, test.gated, test.ahead_landing_us = graphed, gated, 55.0
    test.prepared_reply = {"landing": True, "gated": gated, "deferred": deferred[0]}
    call_us = timing.YARDSTICK_BELOW_US + 20 if long_call else 9.0
    timed = SimpleNamespace(landings=[(100 * (HARNESS_US + call_us), 100)], unlanded=0, tails=[(300.0, 100)])
    setup = SimpleNamespace(batches=(25, 100))
    clock_walls = walls(HARNESS_US + call_us)
    test._settle_band(timed, clock_walls, setup, 1.3)
    assert test.band == getattr(timing, band) and test.landed_harness_us == clock
    assert test.landing["copies_after"] is deferred[0] and test.landing["tails"] == [(300.0, 100)]
    assert test.landing["gated"] is gated and test.landing["per_call_us"] == pytest.approx(HARNESS_US + call_us)


def test_without_a_landing_figure_the_reply_clock_stays():
    """A loop in the checker's process that could not land (a torch that cannot capture a copy to host memory) and
    no harness measured ahead on that clock: the reply's clock, its slope, as before there was a landing clock."""
    test = phase(HARNESS_US)
    test.prepared_reply = {"landing": True, "gated": True, "deferred": True}
    timed = SimpleNamespace(landings=[], unlanded=0, tails=[])
    test._settle_band(timed, walls(HARNESS_US + timing.YARDSTICK_BELOW_US + 20), SimpleNamespace(batches=(25, 100)), 1.3)
    assert test.band == timing.WIDE and test.landed_harness_us is None


@pytest.mark.parametrize("deferred", [True, False])
def test_a_loop_that_copies_call_by_call_pays_its_copies_and_is_told_why(monkeypatch, deferred):
    """The reference's loop copies after its landings, so a candidate's loop that copies call by call (its outputs
    share memory across calls) has its copies on the landing clock: an 11 µs call whose 6 µs copy lands before
    its hash reads 17 µs there, its events are not confirmed, and the label says why and what to return instead."""
    monkeypatch.setattr(timed_phase.TimedPhase, "_yardstick", lambda self, setup, pair_us: FakeYardstick(60.0))
    test = phase(HARNESS_US)
    test.graphed = test.gated = True
    test.spec = SimpleNamespace(cuda_graph=False)
    test.prepared_reply = {"landing": True, "gated": True, "deferred": deferred}
    timed = SimpleNamespace(landings=[(100 * (60.0 + 17.0), 100)] * 2, unlanded=0, tails=[])
    test._settle_band(timed, walls(HARNESS_US + 17.0), SimpleNamespace(batches=(25, 100)), 1.3)
    assert test.band == timing.LANDED
    cand = test._candidate(timing.summarize([11.0] * 40), walls(HARNESS_US + 17.0), {}, 1.3, 25.0)
    assert cand["confirmed"] is False and cand["median_us"] == pytest.approx(17.0)
    assert ("share memory across calls" in cand["label"]) is (not deferred)


def tilted(per_call_us: float, hold_us: float = 1500.0) -> list[tuple[float, int, list[float]]]:
    """The reply clock of a process that holds back each small batch's reply (tests/exploits/*/tilts_*.py)."""
    return [(wall + (hold_us if n == 25 else 0.0), n, s) for wall, n, s in walls(per_call_us, fixed_us=500.0)]


@pytest.mark.parametrize("call_us", [95.0, 200.0])
def test_a_tilted_reply_clock_buys_a_long_call_nothing_on_the_landing_clock(monkeypatch, call_us):
    """A long call's reply clock is a slope over two batch sizes its process knows: holding back the small batches'
    replies by 1.5 ms lowered a 95 µs call's figure to 80 µs, where a claim at the wide band's edge was confirmed at
    1.47x (bounded only by the physical floor: a bf16 GEMM of 4096 x 4096 x 2048's is about 70 µs). On the landing
    clock (the largest batches' landings over their calls, less the harness measured ahead on it) the hold adds
    nothing, and the same claim is not confirmed: the headline is the clock's figure."""
    landing_harness = 50.0
    test = phase(HARNESS_US)
    test.spec = SimpleNamespace(cuda_graph=False)
    test.prepared_reply = {"landing": True, "gated": True, "deferred": True}
    seen_tilted = timing.checker_per_call_us(tilted(HARNESS_US + call_us)) - HARNESS_US
    assert seen_tilted < call_us - 10.0  # what the reply clock alone would read
    claim = timing.WIDE.edge(seen_tilted) + 0.01
    assert timing.confirm(claim, HARNESS_US + seen_tilted, HARNESS_US)[1] and call_us / claim > (1.4 if call_us < 100 else 1.2)  # as it was
    test.ahead_landing_us = landing_harness
    landings = [(100 * (landing_harness + call_us) + 40.0, 100)] * 4 + [(25 * (landing_harness + call_us) + 40.0, 25)] * 4
    timed = SimpleNamespace(landings=landings, unlanded=0, tails=[])
    test._settle_band(timed, tilted(HARNESS_US + call_us), SimpleNamespace(batches=(25, 100)), 1.3)
    cand = test._candidate(timing.summarize([claim] * 40), tilted(HARNESS_US + call_us), {}, 1.3, 25.0)
    assert cand["confirmed"] is False and cand["median_us"] >= call_us
    assert call_us / timing.WIDE.edge(cand["median_us"]) < 1.25  # the most a claim at the edge can have now
    assert "landing clock" in cand["label"]


def test_batches_that_do_not_land_are_read_whole_not_by_a_slope(monkeypatch):
    """A process that takes no pad (or lands no hash) has no claim confirmed, and its figure is the large batches'
    fastest whole wall over their calls less the harness's: its request and reply are in it, and no hold tilts it."""
    monkeypatch.setattr(timed_phase.TimedPhase, "_yardstick", lambda self, setup, pair_us: False)
    test = phase(HARNESS_US)
    test.spec = SimpleNamespace(cuda_graph=False)
    test.prepared_reply = {"landing": False, "gated": False, "deferred": True}
    test.ahead_landing_us = 50.0
    timed = SimpleNamespace(landings=[], unlanded=8, tails=[])
    test._settle_band(timed, tilted(HARNESS_US + 11.2), SimpleNamespace(batches=(25, 100)), 1.3)
    cand = test._candidate(timing.summarize([3.0] * 40), tilted(HARNESS_US + 11.2), {}, 1.3, 25.0)
    assert cand["confirmed"] is False and cand["median_us"] == pytest.approx(11.2 + 500.0 / 100)
    assert "its fastest large batch" in cand["label"] and cand["batches_median_us"] >= cand["median_us"]
    held = [(wall + (900.0 * i if n == 100 else 0.0), n, s) for i, (wall, n, s) in enumerate(tilted(HARNESS_US + 11.2))]
    figures = timing.untilted_stats({"median_us": 3.0}, held, HARNESS_US)  # large batches held back, one more than another
    assert figures["median_us"] == pytest.approx(11.2 + 500.0 / 100 + 9.0)  # the fastest: i = 1, held 900 µs
    assert figures["median_us"] < figures["batches_median_us"]
    assert timing.checker_per_call_us(tilted(HARNESS_US + 11.2)) - HARNESS_US < 0.0  # the slope it would have had


def test_a_short_call_held_back_to_look_long_reads_as_long_on_the_clock_it_is_judged_on(monkeypatch):
    """The band is chosen on the clock the figure is read on. An 11 µs call whose process holds back its large
    batches' replies by 6 ms looks 71 µs longer on the reply's slope: were it then judged with the wide band on the
    landing clock (which the hold does not move), a claim of 1 µs would stand (the edge of 11 µs less 10). Judged on
    the landing clock it stays short: the reference's loop runs beside it, the narrow bands hold."""
    monkeypatch.setattr(timed_phase.TimedPhase, "_yardstick", lambda self, setup, pair_us: FakeYardstick(50.0))
    held = [(wall + (6000.0 if n == 100 else 0.0), n, s) for wall, n, s in walls(HARNESS_US + 11.0)]
    test = phase(HARNESS_US)
    test.ahead_landing_us = 50.0
    test.prepared_reply = {"landing": True, "gated": True, "deferred": True}
    assert not test._short(held)  # on the reply's slope alone it looks long
    timed = SimpleNamespace(landings=[(100 * (50.0 + 11.0), 100)] * 4, unlanded=0, tails=[])
    test._settle_band(timed, held, SimpleNamespace(batches=(25, 100)), 1.3)
    assert test.band == timing.LANDED and test.landed_harness_us == 50.0
    late = SimpleNamespace(landings=[(100 * (50.0 + 11.0) + 8000.0, 100)] * 4, unlanded=0, tails=[])
    test = phase(HARNESS_US)  # held back on the landing clock too (its batches started late): long there, and slow
    test.ahead_landing_us, test.prepared_reply = 50.0, {"landing": True, "gated": True, "deferred": True}
    test._settle_band(late, held, SimpleNamespace(batches=(25, 100)), 1.3)
    assert test.band == timing.WIDE and timing.landed_stats({"median_us": 1.0}, late.landings, 50.0)["median_us"] > 80


def test_an_eager_loop_judged_on_the_landing_clock_is_not_told_its_outputs_share_memory(monkeypatch):
    """An uncaptured call's loop copies each output before its hash, as the reference's eager loop beside does:
    nothing to say of its outputs sharing memory, whatever its process reports of copying after its landings."""
    monkeypatch.setattr(timed_phase.TimedPhase, "_yardstick", lambda self, setup, pair_us: FakeYardstick(60.0, False))
    test = phase(HARNESS_US)
    test.graphed, test.spec = False, SimpleNamespace(cuda_graph=False)
    test.prepared_reply = {"landing": True, "gated": False, "deferred": False}
    timed = SimpleNamespace(landings=[(100 * (60.0 + 17.0), 100)] * 2, unlanded=0, tails=[])
    test._settle_band(timed, walls(HARNESS_US + 17.0), SimpleNamespace(batches=(25, 100)), 1.3)
    assert test.band == timing.NARROW and test.landed_harness_us == 60.0
    cand = test._candidate(timing.summarize([11.0] * 40), walls(HARNESS_US + 17.0), {}, 1.3, 25.0)
    assert cand["confirmed"] is False and cand["median_us"] == pytest.approx(17.0)
    assert "landing clock" in cand["label"] and "share memory" not in cand["label"]


def test_an_ungated_loop_s_small_batches_do_not_carry_their_way_in_into_the_figure():
    """From the request (an uncaptured loop, or one that declined the gate) each batch's landing holds its way in
    (330-520 µs on the H200) once: over 25 calls four times what it is over 100. The figure is the largest batches'
    fastest: each did the whole work, and what held the others up (the sync's host round trips) only added.
    The honest GEMM with a host sync each call (h200-2026-12-05c) read 272-511 µs a call over its batches of 100 and
    more over those of 25: its headline, the median over both sizes, was 506.2 µs; over the large ones 490.0; their
    fastest, 272.7."""
    run = json.loads((Path(__file__).resolve().parent / "fixtures" / "gpu" / "h200-2026-12-05c" / "exploits.json").read_text())
    row = next(r for r in run["rows"] if r["candidate"] == "honest_eager.py")
    landings = [tuple(b) for b in row["landing"]["batches"]]
    assert {n for _, n in landings} == {25, 100} and row["landing"]["gated"] is False
    harness = row["landing"]["harness_us"]
    figures = timing.landed_stats({"median_us": row["events_us"]}, landings, harness, timing.WIDE)
    large = sorted(us / n - harness for us, n in landings if n == 100)
    assert figures["confirmed"] is False and figures["median_us"] == pytest.approx(large[0]) == pytest.approx(272.7, abs=0.1)
    assert figures["batches_median_us"] == pytest.approx((large[1] + large[2]) / 2)
    assert figures["median_us"] < row["median_us"]  # the headline that run gave it, small batches counted
    way_in = [(100 * 60.0 + 450.0, 100), (25 * 60.0 + 450.0, 25)] * 4  # a 10 µs call, 50 µs of harness a call
    assert timing.landed_stats({"median_us": 1.0}, way_in, 50.0, timing.WIDE)["median_us"] == pytest.approx(14.5)


def test_a_prepared_checker_s_harness_reaches_the_timed_phase_on_both_clocks():
    """What a warm checker measured ahead (runner/prepared.Prepared.measure_overhead) is what the timed phase takes
    its figures less: the reply clock's and the landing clock's; a cold one measures both in the job."""
    from trialtui.runner.prepared import Prepared
    from trialtui.runner.timed_batch import HarnessCost

    warm = Prepared(key="k", reference=None, bencher=object())
    warm.measure_overhead(SimpleNamespace(bench_cases=[{}]), lambda reference, case, bencher: HarnessCost(61.0, None, 55.0))
    assert warm.harness == HarnessCost(61.0, None, 55.0)

    def checker(prepared):
        return SimpleNamespace(spec=None, reference=None, link=None, deadline=None, facts=None, progress=None,
                               splits=None, prepared=prepared, timed_norm=lambda case: None)

    timed = timed_phase.TimedPhase.of(checker(warm), "cuda", own_kernels=True)
    assert (timed.overhead_us, timed.ahead_landing_us) == (61.0, 55.0)
    cold = timed_phase.TimedPhase.of(checker(None), "cuda", own_kernels=True)
    assert (cold.overhead_us, cold.ahead_landing_us) == (None, None)


def test_a_claim_raised_to_the_landing_clock_says_so_in_its_label(monkeypatch):
    """A confirmed claim under the clock's figure stands at the clock's figure, and its label says by how much."""
    monkeypatch.setattr(timed_phase.TimedPhase, "_yardstick", lambda self, setup, pair_us: FakeYardstick(60.0, True))
    test = phase(HARNESS_US)
    test.spec, test.prepared_reply = SimpleNamespace(cuda_graph=True), {"landing": True, "gated": True, "deferred": True}
    timed = SimpleNamespace(landings=[(100 * (60.0 + 5.0), 100)] * 2, unlanded=0, tails=[])
    test._settle_band(timed, walls(HARNESS_US + 5.0), SimpleNamespace(batches=(25, 100)), 1.3)
    assert test.band == timing.LANDED
    cand = test._candidate(timing.summarize([4.4] * 40), walls(HARNESS_US + 5.0), {}, 1.3, 25.0)
    assert cand["confirmed"] is True and cand["median_us"] == pytest.approx(5.0)
    assert cand["label"].endswith("of the landing clock, raised 0.6 µs to its figure")
    honest = test._candidate(timing.summarize([5.2] * 40), walls(HARNESS_US + 5.0), {}, 1.3, 25.0)
    assert honest["median_us"] == pytest.approx(5.2) and honest["label"].endswith("of the landing clock")
