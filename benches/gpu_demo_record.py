"""On the GPU: the four demo stories recorded live in one run, and `trialtui demo --agent` live (issue 37, 2 and 3).

    python benches/gpu_demo_record.py                              # every story, and the agent on bias_gelu_residual
    python benches/gpu_demo_record.py --problems softmax,rmsnorm --agent none
    python benches/gpu_demo_record.py --problems none --agent bias_gelu_residual
    python benches/gpu_demo_record.py --replay --problems bias_gelu_residual   # a CPU: the same checks on the replay
    python benches/gpu_demo_record.py --install DIR_OR_TAR                      # afterwards, here: recordings into sample_kernels/

Live (a GPU): `trialtui calibrate` first (so each trial's speed-of-light is against this GPU's measured
copy bandwidth and matmul rates; --no-calibrate skips it), then `trialtui demo --all --record REC --profile
never` (the named problems instead of --all when not all four), each story on a GPU of its own, as many
at once as GPUs are given to it. `trialtui demo --agent PROBLEM` (the SDK's client through `trialtui mcp`)
runs beside it on a spare GPU when there is one (GPUs > stories), else after it when the budget still
holds its estimate, else not at all (the JSON says why). The agent's server gets this process's environment
(PYTHONPATH, CUDA_VISIBLE_DEVICES): `trialtui demo --agent` itself starts it with the MCP SDK's default
environment (HOME, PATH, ...), which on a machine whose packages come through PYTHONPATH cannot import
trialtui's dependencies; --agent-plain runs it unpatched.

Replay (--replay, a CPU): `trialtui demo --headless --replay` and `demo --agent --replay`: correctness live,
GPU numbers from the recordings in sample_kernels/*/recorded/ (nothing is recorded).

Every beat is then judged from the played problem's store, the way the demo judges it (demo.story.judge:
the state, the parent, and the beat's claim on decide's action and the numbers); live, summary.json's own
judgement made during the run is kept beside it. Writes $OUT/demo_record.json (--json-name; per story: beats, expected
against got, pass or fail, wall seconds; the best version's recording; the agent's beats), $OUT/demo_log.txt,
$OUT/agent_log.txt, $OUT/record/readme_table.md (benches/demo_table.py on this run) and the recordings
under $OUT/record/ (one recordings.tar.gz when they are more than six files). Whatever has not finished
when --budget-s runs out is stopped, and reported as not finished.

Estimated live seconds per story on an H200, from the 2026-11-29 and 2026-12-01 recordings (eager and
torch.compile baselines, finalize, no profile): bias_gelu_residual 110, softmax 110, rmsnorm 115,
matmul_epilogue 200; the agent's story about as long as the demo's. So on one H200 about two stories fit
in 240 s; on four GPUs, all four at once in about 200 s (the agent then needs a fifth GPU or a run of its own).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benches"))

ALL = ("bias_gelu_residual", "softmax", "rmsnorm", "matmul_epilogue")
ESTIMATE_S = {"bias_gelu_residual": 110, "softmax": 110, "rmsnorm": 115, "matmul_epilogue": 200}
CALIBRATE_S = 30
MARGIN_S = 8  # packing the outputs after the last process
MAX_FILES = 6
# The MCP SDK starts a stdio server with HOME, PATH and a few more; this one needs PYTHONPATH (and, on a GPU of
# its own, CUDA_VISIBLE_DEVICES) too, as benches/agent_result.py passes them.
# --replay --record-replay (a CPU only): the recording path of a live run, on replayed stories, so this script's
# handling of summary.json, the recordings and README's table runs somewhere without a GPU (`trialtui demo`
# refuses --record without one). Those recordings hold replayed numbers: never --install them.
REPLAY_RECORD_BOOT = """
import asyncio, sys
from pathlib import Path
from trialtui.demo import play as d, story as ds
names, into, rec = sys.argv[1].split(","), Path(sys.argv[2]), Path(sys.argv[3])
root = ds.samples_root()
stories = [ds.load_story(root / n) for n in names]
plans = [d.Plan(s, ds.prepare(s.sample, into, s, profile="never"), "replay", recordings=s.sample / ds.RECORDED_DIR)
         for s in stories]
asyncio.run(d.play_all(plans, sys.stdout, record_dir=rec))
"""
AGENT_BOOT = ("import os, mcp.client.stdio as s; s.get_default_environment = lambda: dict(os.environ); "
              "from trialtui.cli.demo import demo; demo()")


class Clock:
    def __init__(self, budget_s: float) -> None:
        self.started = time.monotonic()
        self.deadline = self.started + budget_s

    def say(self, text: str) -> None:
        print(f"{time.monotonic() - self.started:7.1f}s {text}", flush=True)

    def left(self) -> float:
        return self.deadline - time.monotonic()


class Child:
    """A command in a session of its own, its lines printed with a prefix and kept in a log."""

    def __init__(self, clock: Clock, tag: str, argv: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.clock, self.tag, self.log = clock, tag, log
        self.started = time.monotonic()
        self.lines: list[str] = []
        clock.say(f"{tag}: $ {' '.join(argv[:1] + [a if len(a) < 80 else a[:40] + '...' for a in argv[1:]])}")
        self.proc = subprocess.Popen(argv, cwd=ROOT, env=env or child_environ(), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True, bufsize=1)
        self.stopped = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.wall_s: float | None = None

    def _read(self) -> None:
        with open(self.log, "a") as log:
            for line in self.proc.stdout:
                line = line.rstrip("\n")
                self.lines.append(line)
                log.write(line + "\n")
                log.flush()
                print(f"{self.tag}| {line}", flush=True)

    def done(self) -> bool:
        if self.proc.poll() is not None and self.wall_s is None:
            self._reader.join(timeout=10)
            self.wall_s = round(time.monotonic() - self.started, 1)
        return self.proc.poll() is not None

    def stop(self, why: str) -> None:
        """SIGTERM to its session (the demo and everything it started), SIGKILL what is left after 10 s."""
        if self.done():
            return
        self.stopped = True
        self.clock.say(f"{self.tag}: stopping it: {why}")
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        self.done()


def child_environ(**more: str) -> dict[str, str]:
    env = dict(os.environ)
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(ROOT) not in parts:
        parts.append(str(ROOT))
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env.update(more)
    return env


def estimate(problems: list[str], lanes: int) -> float:
    """The stories' expected wall time, `lanes` at a time, longest first (as a queue of free GPUs runs them)."""
    ends = [0.0] * max(1, lanes)
    for name in problems:  # the demo starts them in the order given
        i = ends.index(min(ends))
        ends[i] += ESTIMATE_S.get(name, 150)
    return max(ends) if problems else 0.0


def judge_played(root: Path, story: Any) -> list[dict[str, Any]]:
    """Each version of `story` as played into `root`: its trial (found by its source), against the story."""
    from trialtui.core.problem_dir import load_problem
    from trialtui.core.store import Store, sha256_of
    from trialtui.demo.story import judge

    if not (root / ".trialtui").is_dir():
        return [{"version": v.file, "beat": v.beat, "expected": v.expected, "state": None, "as_expected": False,
                 "claim_held": None, "claim": "not played (no store)"} for v in story.versions]
    problem = load_problem(root)
    baseline = problem.config.primary_baseline
    with Store.open(root, writer=False) as store:
        trials = store.trials()
    trial_for: dict[str, str] = {}
    beats = []
    for v in story.versions:
        sha = sha256_of(story.source(v))
        found = [t for t in trials if t.sha256 == sha]
        trial = next((t for t in found if t.file == story.candidate), found[0] if found else None)
        if trial is None:
            beats.append({"version": v.file, "beat": v.beat, "expected": v.expected, "state": None, "as_expected": False,
                          "claim_held": None, "claim": "not played"})
            continue
        trial_for[v.file] = trial.id
        j = judge(v, trial, trials, problem.config)
        expected_parent = trial_for.get(v.parent) if v.parent else None
        timing = (trial.result or {}).get("timing") or {}
        env = (trial.result or {}).get("env") or {}
        beats.append({
            "version": v.file, "beat": v.beat, "note": v.note, "trial": trial.id,
            "expected": v.expected, "state": trial.state, "state_ok": trial.state == v.expected,
            "expected_parent": expected_parent, "parent": trial.parent, "parent_ok": trial.parent == expected_parent,
            "claim_held": j.held, "claim": j.text,
            "as_expected": trial.state == v.expected and trial.parent == expected_parent and j.held is not False,
            "action": trial.decision.action if trial.decision is not None else None, "speedup": trial.speedup(baseline),
            "median_us": timing.get("median_us"), "device": env.get("device"), "gpu": env.get("gpu"),
            "replayed_from": {k: ((trial.result or {}).get("recorded") or {}).get(k) for k in ("gpu", "date")}
                             if (trial.result or {}).get("recorded") else None,
        })
    return beats


def install(source: Path) -> int:
    """Copy a run's <problem>/v*.json (a folder, or recordings.tar.gz) into sample_kernels/<problem>/recorded/."""
    work = None
    if source.is_file():
        work = Path(tempfile.mkdtemp(prefix="recordings-"))
        with tarfile.open(source) as tar:
            tar.extractall(work, filter="data")
        source = work
    count = 0
    for problem in ALL:
        files = sorted((source / problem).glob("v*.json")) if (source / problem).is_dir() else []
        if not files:
            print(f"{problem}: no recordings in {source}")
            continue
        replays = [p.name for p in files if (json.loads(p.read_text()).get("result") or {}).get("recorded")
                   or ((json.loads(p.read_text()).get("result") or {}).get("env") or {}).get("device") != "cuda"]
        if replays:
            print(f"{problem}: not installed: {', '.join(replays)} hold no live GPU numbers (a replay, or a CPU run)")
            continue
        dest = ROOT / "sample_kernels" / problem / "recorded"
        for old in dest.glob("v*.json"):
            old.unlink()
        for path in files:
            shutil.copy(path, dest / path.name)
            count += 1
        print(f"{problem}: {len(files)} recordings into {dest.relative_to(ROOT)}")
    if work is not None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if count else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", default="all", help="comma list, 'all' (default) or 'none'")
    ap.add_argument("--agent", default="bias_gelu_residual", help="the story `demo --agent` plays, or 'none'")
    ap.add_argument("--budget-s", type=float, default=None, help="default 240 live, 1500 with --replay")
    ap.add_argument("--gpus", default=None, help="GPUs for the stories, e.g. 0,1,2,3 (default: one per story, "
                                                 "leaving one for the agent when there are enough)")
    ap.add_argument("--agent-gpu", default=None, help="the agent's GPU (default: a spare one, else after the stories)")
    ap.add_argument("--replay", action="store_true", help="no GPU: the CPU replay of the same stories")
    ap.add_argument("--record-replay", action="store_true",
                    help="with --replay: record the replayed stories too (tests this script's recording path on a CPU)")
    ap.add_argument("--baselines", default=None, help="override the samples' baselines (default: eager,compile)")
    ap.add_argument("--profile", default="never", choices=["auto", "always", "never"])
    ap.add_argument("--no-finalize", action="store_true")
    ap.add_argument("--no-calibrate", action="store_true")
    ap.add_argument("--fit", action="store_true", help="play only the stories whose estimate fits the budget")
    ap.add_argument("--agent-plain", action="store_true", help="run `demo --agent` with the SDK's default environment")
    ap.add_argument("--json-name", default="demo_record", help="the JSON's name under $OUT (default demo_record), "
                                                                  "e.g. demo_agent for a run of the agent alone")
    ap.add_argument("--install", type=Path, default=None, metavar="DIR_OR_TAR",
                    help="copy a run's recordings into sample_kernels/*/recorded/ and exit")
    args = ap.parse_args(argv)
    if args.install:
        return install(args.install)

    from trialtui.demo import story as ds

    problems = list(ALL) if args.problems == "all" else [] if args.problems == "none" else \
        [p.strip() for p in args.problems.split(",") if p.strip()]
    bad = [p for p in problems if p not in ALL]
    agent = None if args.agent in ("none", "") else args.agent
    if bad or (agent and agent not in ALL):
        ap.error(f"unknown problem(s) {bad or [agent]}; the stories are {', '.join(ALL)}")
    mode = "replay" if args.replay else "live"
    budget = args.budget_s or (240.0 if mode == "live" else 1500.0)
    clock = Clock(budget)
    out = Path(os.environ.get("OUT") or "demo_record_out")
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpu-demo-record-"))
    rec = work / "record"
    data: dict[str, Any] = {"script": "benches/gpu_demo_record.py", "argv": sys.argv[1:], "mode": mode,
                            "budget_s": budget, "problems": problems, "agent_problem": agent,
                            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}

    import torch

    gpus_here = [str(i) for i in range(torch.cuda.device_count())] if mode == "live" else []
    if mode == "live" and not gpus_here:
        ap.error("live needs a GPU and torch sees none: pass --replay on a CPU")
    data["env"] = {"gpus": len(gpus_here), "gpu": torch.cuda.get_device_name(0) if gpus_here else None,
                   "torch": torch.__version__, "pythonpath": os.environ.get("PYTHONPATH")}
    # Where each runs: the stories on their GPUs, the agent on a spare one (or after them, on any)
    if args.gpus:
        story_gpus = [g.strip() for g in args.gpus.split(",") if g.strip()]
    elif mode == "live":
        story_gpus = gpus_here[:max(1, len(problems))] if len(gpus_here) > len(problems) or not agent else gpus_here
    else:
        story_gpus = []
    spare = [g for g in gpus_here if g not in story_gpus]
    agent_gpu = args.agent_gpu if args.agent_gpu is not None else (spare[0] if spare and mode == "live" else None)
    agent_beside = agent is not None and agent_gpu is not None and mode == "live"  # a CPU plays one at a time
    lanes = max(1, len(story_gpus)) if mode == "live" else 1
    expected = estimate(problems, lanes) + (0 if args.no_calibrate or mode == "replay" else CALIBRATE_S)
    fitting: list[str] = []
    for p in problems:
        if estimate(fitting + [p], lanes) + (0 if args.no_calibrate else CALIBRATE_S) <= budget - MARGIN_S:
            fitting.append(p)
    data["plan"] = {"story_gpus": story_gpus, "agent_gpu": agent_gpu, "agent_beside": agent_beside,
                    "estimate_s": expected if mode == "live" else None, "fits": fitting if mode == "live" else problems}
    if mode == "live":
        clock.say(f"plan: {len(problems)} stories on GPUs {story_gpus or '—'} ({lanes} at a time), expected ~{expected:.0f} s "
                  f"of a {budget:.0f} s budget; these fit: {', '.join(fitting) or 'none'}"
                  + ("" if set(fitting) == set(problems) else f"; {', '.join(p for p in problems if p not in fitting)} "
                     "may not finish: give them GPUs of their own (--gpus) or a run of their own (--problems)"))
        if agent:
            clock.say(f"plan: the agent plays {agent} " + (f"beside the stories on GPU {agent_gpu}" if agent_beside
                                                          else "after the stories, if ~110 s are left"))
        if args.fit and set(fitting) != set(problems):
            problems = fitting
            data["problems_played"] = problems
            clock.say(f"--fit: playing {', '.join(problems) or 'no story'}")
    def write() -> None:
        data["wall_s"] = round(time.monotonic() - clock.started, 1)
        tmp = out / f"{args.json_name}.json.tmp"
        tmp.write_text(json.dumps(data, indent=1, default=str) + "\n")
        os.replace(tmp, out / f"{args.json_name}.json")

    write()
    if mode == "live" and not args.no_calibrate and problems:
        try:
            done = subprocess.run([sys.executable, "-m", "trialtui", "calibrate", "--json"], capture_output=True, text=True,
                                  timeout=max(10.0, min(90.0, clock.left() - MARGIN_S)), cwd=ROOT, env=child_environ())
            found = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {"stdout": done.stdout[-1000:]}
            data["calibrate"] = {"exit_code": done.returncode, "ceilings": found.get("ceilings") or found,
                                 "stderr_tail": done.stderr[-1000:]}
            c = found.get("ceilings") or {}
            if done.returncode == 0 and c.get("hbm_gbps"):
                clock.say(f"calibrated: copy {c.get('hbm_gbps')} GB/s, TFLOP/s {c.get('tflops')}")
            else:
                clock.say(f"calibrate did not run ({found.get('message') or done.stderr[-200:]}): datasheet ceilings")
        except (subprocess.TimeoutExpired, ValueError) as exc:
            data["calibrate"] = {"error": f"{type(exc).__name__}: {exc}"}
            clock.say(f"calibrate failed ({exc}): datasheet ceilings")
        write()

    common = ["--profile", args.profile] if mode == "live" else []
    if args.baselines:
        common += ["--baselines", args.baselines]
    if args.no_finalize:
        common += ["--no-finalize"]
    demo_log, agent_log = out / "demo_log.txt", out / "agent_log.txt"
    children: dict[str, Child] = {}
    if problems:
        argv_demo = [sys.executable, "-m", "trialtui.cli.demo", *(["--all"] if set(problems) == set(ALL) else problems),
                     "--into", str(work / "demo"), *common]
        if mode == "live":
            argv_demo += ["--record", str(rec), "--gpus", ",".join(story_gpus)]
        elif args.record_replay:
            argv_demo = [sys.executable, "-c", REPLAY_RECORD_BOOT, ",".join(problems), str(work / "demo"), str(rec)]
        else:
            argv_demo += ["--headless", "--replay"]
        children["demo"] = Child(clock, "demo", argv_demo, demo_log)

    def start_agent() -> None:
        patched = not args.agent_plain
        base = [sys.executable, "-c", AGENT_BOOT] if patched else [sys.executable, "-m", "trialtui.cli.demo"]
        argv_agent = [*base, "--agent", agent, "--into", str(work / "agent"), *common, *(["--replay"] if mode == "replay" else [])]
        env = child_environ(**({"CUDA_VISIBLE_DEVICES": agent_gpu} if agent_gpu is not None and mode == "live" else {}))
        data["agent_env"] = ("the server gets this environment (PYTHONPATH, CUDA_VISIBLE_DEVICES): the MCP SDK's default "
                             "passes neither" if patched else "the SDK's default environment (--agent-plain)")
        children["agent"] = Child(clock, "agent", argv_agent, agent_log, env=env)

    if agent and agent_beside:
        start_agent()
    elif agent:
        data["agent_after"] = True
    agent_estimate = ESTIMATE_S.get(agent or "", 150)
    while True:
        running = [c for c in children.values() if not c.done()]
        if agent and "agent" not in children and "demo" in children and children["demo"].done():
            if mode == "live" and clock.left() - MARGIN_S < agent_estimate:
                data["agent_skipped"] = (f"{clock.left():.0f} s left after the stories; the agent's story takes "
                                         f"~{agent_estimate} s: run it alone (--problems none --agent {agent})")
                clock.say(f"agent: not run: {data['agent_skipped']}")
                agent = None
            else:
                start_agent()
                continue
        if agent and "agent" not in children and "demo" not in children:
            start_agent()
            continue
        if not running:
            break
        if clock.left() < MARGIN_S:
            for c in running:
                c.stop(f"the {budget:.0f} s budget is spent")
            break
        time.sleep(0.5)
    for c in children.values():
        c.done()

    # What each story did
    stories: dict[str, Any] = {}
    summary = json.loads((rec / "summary.json").read_text()) if (rec / "summary.json").is_file() else {}
    demo = children.get("demo")
    if demo is not None:
        data["demo"] = {"exit_code": demo.proc.returncode, "stopped_at_budget": demo.stopped, "wall_s": demo.wall_s,
                        "tail": demo.lines[-40:]}
    for name in problems:
        story = ds.load_story(ROOT / "sample_kernels" / name)
        beats = judge_played(work / "demo" / name, story)
        live = {e["version"]: e for e in (summary.get(name) or {}).get("story") or []}
        for b in beats:
            entry = live.get(b["version"])
            if entry is not None:
                b["live_claim_held"], b["live_claim"] = entry.get("beat_held"), entry.get("beat_judged")
        s = summary.get(name) or {}
        if summary:  # written as each story ends
            finished = bool(s) and not s.get("error")
        else:  # a replay without recordings: its log says which stories ended
            finished = demo is not None and not demo.stopped and any(
                f"[{name}] done in" in line and "FAILED" not in line for line in demo.lines)
        recordings = sorted(p.name for p in (rec / name).glob("v*.json")) if (rec / name).is_dir() else []
        best = None
        if s.get("best_version") and (rec / name / f"{Path(s['best_version']).stem}.json").is_file():
            best = json.loads((rec / name / f"{Path(s['best_version']).stem}.json").read_text())
            best.pop("profile", None)
        # live, every claim must be judged and hold; a replay judges what its recordings let it
        claims_ok = all(b["claim_held"] is True for b in beats) if mode == "live" else True
        stories[name] = {
            "finished": finished, "error": s.get("error"), "wall_s": s.get("wall_s"),
            "versions": len(story.versions), "played": sum(b["state"] is not None for b in beats),
            "as_expected": sum(b["as_expected"] for b in beats),
            "claims_held": sum(b["claim_held"] is True for b in beats),
            "claims_unjudged": [b["version"] for b in beats if b["state"] is not None and b["claim_held"] is None],
            "passed": finished and all(b["as_expected"] for b in beats) and claims_ok,
            "beats": beats, "best": s.get("best"), "best_version": s.get("best_version"),
            "speedup": s.get("speedup"), "time_us": s.get("time_us"), "baselines_us": s.get("baselines_us"),
            "gpu": s.get("gpu"), "report": s.get("report"), "branched_to": s.get("branched_to"),
            "recordings": recordings, "best_recording": best,
        }
        st = stories[name]
        clock.say(f"{name}: {'PASS' if st['passed'] else 'FAIL'}: {st['as_expected']}/{st['versions']} beats as the story "
                  f"expects, {st['claims_held']} claims held by the numbers"
                  + (f", unjudged {st['claims_unjudged']}" if st["claims_unjudged"] else "")
                  + (f"; {st['error']}" if st["error"] else "") + ("" if finished else "; NOT FINISHED"))
        for b in beats:
            mark = "ok " if b["as_expected"] and (mode == "replay" or b["claim_held"] is True) else "BAD"
            clock.say(f"  {mark} {b['version']:<6} {b['beat']:<19} expect {b['expected']:<9} got {b['state']}"
                      + (f", {b['speedup']:.2f}×" if b.get("speedup") else "") + f" — {b['claim']}")
    data["stories"] = stories

    # The agent
    if "agent" in children:
        a = children["agent"]
        story = ds.load_story(ROOT / "sample_kernels" / data["agent_problem"])
        beats = judge_played(work / "agent" / data["agent_problem"], story)
        said = [line for line in a.lines if " agent: " in line]
        data["agent"] = {"problem": data["agent_problem"], "exit_code": a.proc.returncode, "stopped_at_budget": a.stopped,
                         "wall_s": a.wall_s, "beats": beats, "lines": said[-60:],
                         "as_expected": sum(b["as_expected"] for b in beats), "versions": len(story.versions),
                         "surprises": [line for line in said if "the story expected" in line],
                         "passed": a.proc.returncode == 0 and not a.stopped and all(b["as_expected"] for b in beats)
                                   and (mode == "replay" or all(b["claim_held"] is True for b in beats))}
        g = data["agent"]
        clock.say(f"agent ({g['problem']}): {'PASS' if g['passed'] else 'FAIL'}: exit {g['exit_code']}, "
                  f"{g['as_expected']}/{g['versions']} beats as the story expects")
        for b in beats:
            clock.say(f"  {'ok ' if b['as_expected'] else 'BAD'} {b['version']:<6} {b['beat']:<19} expect {b['expected']:<9} "
                      f"got {b['state']}" + (f", {b['speedup']:.2f}×" if b.get("speedup") else "") + f" — {b['claim']}")
    elif data["agent_problem"]:
        data["agent"] = {"problem": data["agent_problem"], "ran": False,
                         "why": data.get("agent_skipped") or "not started"}

    # README's table from this run, and the recordings
    if (rec / "summary.json").is_file():
        import demo_table

        (out / "record").mkdir(exist_ok=True)
        table = demo_table.render(demo_table.rows_from_dir(rec), f"`trialtui demo --record` ({data['started'][:10]})")
        (out / "record" / "readme_table.md").write_text(table)
        data["readme_table"] = table
        clock.say("README's table from this run:\n" + table)
    files = sorted(p for p in rec.rglob("*") if p.is_file()) if rec.is_dir() else []
    if files:
        (out / "record").mkdir(exist_ok=True)
    if len(files) > MAX_FILES:
        with tarfile.open(out / "record" / "recordings.tar.gz", "w:gz") as tar:
            tar.add(rec, arcname=".")
        data["recordings"] = {"tar": "record/recordings.tar.gz", "files": [str(p.relative_to(rec)) for p in files]}
    else:
        for p in files:
            shutil.copy(p, out / "record" / p.name)
        data["recordings"] = {"files": [str(p.relative_to(rec)) for p in files]}
    wanted = [stories[n]["passed"] for n in problems] + ([data["agent"].get("passed", False)] if data.get("agent_problem") else [])
    data["passed"] = bool(wanted) and all(wanted)
    write()
    shutil.rmtree(work, ignore_errors=True)
    clock.say(f"{'PASSED' if data['passed'] else 'FAILED'}: stories {sum(s['passed'] for s in stories.values())}/{len(stories)}"
              + (f", agent {'passed' if (data.get('agent') or {}).get('passed') else 'failed or not run'}" if data.get("agent_problem") else "")
              + f"; wrote {out / (args.json_name + '.json')}")
    return 0 if data["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
