"""On the GPU: the SSH executor against the local one, on one machine (issue 37, part 1).

    python benches/gpu_remote.py                      # the H200: device cuda, budget 150 s
    python benches/gpu_remote.py --device cpu         # a CPU machine: the same steps in Triton's interpreter

An SSH server on 127.0.0.1 inside this machine (asyncssh's, tests/ssh_server.py: host key and the client's
authorized key made now, for the user running this) is the "GPU box"; its command runs
`python -m trialtui.engine.executors.host` with this interpreter and this PYTHONPATH. On a copy of the
bias + GELU + residual sample at its bench sizes, candidate demo/v7.py (one fused kernel, ~190 µs on an
H200), baselines eager only and no automatic profile (both to keep inside the budget; --baselines to
change), the steps, most important first:

  local      `trialtui bench FILE --json --device D --executor local`
  ssh_bench  the same with `--executor ssh://USER@127.0.0.1:PORT` (identity and known_hosts in [executor])
  watch      `trialtui watch DIR --headless --once` with [executor] url = the server: trial t1
  rerun      `trialtui trials rerun t1 --dir DIR`, through the server again
  compare    each of the three against local: same state and flags, median within 3 % (on a CPU, where
             nothing is timed: the same correctness figures)
  profile    the executor's `profile` job (what the engine's profile stage calls) comes back available,
             with its files in this problem's .trialtui/
  cut        an engine on a fresh copy; the server cuts the connection at the host's first progress line
             of the bench job: the trial goes `interrupted`, then gets a result on one new connection,
             and the first host process and everything below it are gone
  tui        the TUI (`make_app`, Textual's run_test, headless) with the SSH executor: the status bar names
             `ssh USER@127.0.0.1:PORT` and the detail pane `ran on HOST · GPU (ssh://...)`
  cancel     a candidate that sleeps in forward, cancelled 3 s into its job: `cancelled`
  openssh    when `sshd` is installed (tests/sshd_server.py): one bench through OpenSSH's server
  ray        run only when `import ray` works (--ray): it does not on the device, whose carried working
             tree is limited to 64 MiB, less than Ray's wheel; the JSON says so

Each step is skipped, saying so, when the time left in --budget-s is below its estimate. Writes
$OUT/remote.json (or ./remote.json) after every step. Exit status 0 when every check that ran passed
and none of the required ones (local, ssh_bench, watch, rerun, profile, cut, tui) was skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

SAMPLE = "bias_gelu_residual"
VERSION = "v7.py"
TOLERANCE = 0.03
REQUIRED = ("local", "ssh_bench", "watch", "rerun", "profile", "cut", "tui")
# seconds each step is expected to take on an H200 (a CPU run is slower: pass a larger --budget-s)
ESTIMATE_S = {"local": 20, "ssh_bench": 20, "watch": 20, "rerun": 20, "profile": 15, "cut": 25, "tui": 10,
              "cancel": 8, "openssh": 15, "ray": 30}
RAY_NOTE = ("Ray not run: its wheel is larger than the 64 MiB working tree the device machine carries, and the "
            "device cannot reach a package index; the Ray executor stays tested on CPUs only (tests/test_executor_ray.py)")
SLEEPER = "        import time as _t\n        _t.sleep(600)  # cancelled long before\n"


class Run:
    """The steps, their results and checks, written to JSON after each one; lines printed as they go."""

    def __init__(self, out: Path, budget_s: float) -> None:
        self.out = out
        self.started = time.monotonic()
        self.deadline = self.started + budget_s
        self.data: dict[str, Any] = {"script": "benches/gpu_remote.py", "budget_s": budget_s,
                                     "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                                     "steps": {}, "checks": {}}

    def say(self, text: str) -> None:
        print(f"{time.monotonic() - self.started:7.1f}s {text}", flush=True)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        self.data["checks"][name] = {"ok": bool(ok), "detail": detail}
        self.say(f"  {'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")
        return bool(ok)

    def step(self, name: str, fn: Callable[[], Any]) -> Any:
        estimate = ESTIMATE_S.get(name, 10)
        if self.left() < estimate:
            self.data["steps"][name] = {"skipped": f"{self.left():.0f} s left of the budget, the step takes ~{estimate} s"}
            self.say(f"SKIP {name}: {self.data['steps'][name]['skipped']}")
            self.save()
            return None
        self.say(f"step {name} (~{estimate} s on an H200; {self.left():.0f} s left)")
        t0 = time.monotonic()
        try:
            value = fn()
            entry = {"ok": True}
        except Exception as exc:  # noqa: BLE001 - recorded, and the run goes on to the next step
            value = None
            entry = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-3000:]}
            self.say(f"  ERROR {name}: {entry['error']}")
        entry["wall_s"] = round(time.monotonic() - t0, 2)
        self.data["steps"][name] = {**entry, **(self.data["steps"].get(name) or {})}
        self.say(f"  {name} done in {entry['wall_s']:.1f} s")
        self.save()
        return value

    def record(self, name: str, **fields: Any) -> None:
        self.data["steps"].setdefault(name, {}).update(fields)

    def save(self) -> None:
        self.data["wall_s"] = round(time.monotonic() - self.started, 2)
        tmp = self.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, default=str) + "\n")
        os.replace(tmp, self.out)


def python_command() -> str:
    """The host's `python` as the executor runs it: this interpreter with this PYTHONPATH (wheels carried
    into a --target folder on the device), since an SSH session need not pass the environment on."""
    path = os.environ.get("PYTHONPATH", "")
    exe = shlex.quote(sys.executable)
    return f"env PYTHONPATH={shlex.quote(path)} {exe}" if path else exe


def child_environ() -> dict[str, str]:
    """The CLI's environment: this one, with the checkout importable from any directory."""
    env = dict(os.environ)
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(ROOT) not in parts:
        parts.append(str(ROOT))
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def same_baselines(src: Path, dst: Path) -> None:
    """The local run's cached baselines in another copy, so both speedups use the same ones (as the CLI runs did)."""
    if (src / ".trialtui" / "baselines.json").is_file():
        (dst / ".trialtui").mkdir(exist_ok=True)
        shutil.copy(src / ".trialtui" / "baselines.json", dst / ".trialtui" / "baselines.json")


def prepare(dest: Path, args: argparse.Namespace, *, executor: dict[str, str] | None = None,
            candidate: bytes | None = None, config: dict[str, str] | None = None) -> Path:
    """A copy of the sample (reference, trialtui.toml), its candidate `kernel.py` = demo/v7.py."""
    from trialtui.demo.story import set_toml_key

    sample = ROOT / "sample_kernels" / SAMPLE
    dest.mkdir(parents=True)
    shutil.copy(sample / "reference.py", dest / "reference.py")
    text = (sample / "trialtui.toml").read_text()
    text = set_toml_key(text, "baselines", json.dumps(args.baselines.split(",")))
    for key, value in (config or {}).items():
        text = set_toml_key(text, key, value)
    text = set_toml_key(text, "when", json.dumps("never"), table="profile")
    for key, value in (executor or {}).items():
        text = set_toml_key(text, key, json.dumps(value), table="executor")
    (dest / "trialtui.toml").write_text(text)
    (dest / "kernel.py").write_bytes(candidate if candidate is not None else (sample / "demo" / VERSION).read_bytes())
    return dest


def cli(run: Run, name: str, argv: list[str], timeout_s: float) -> tuple[int, str]:
    """`python -m trialtui ARGV`, its stdout and stderr kept (tails) in the step's record."""
    command = [sys.executable, "-m", "trialtui", *argv]
    run.say(f"  $ trialtui {' '.join(shlex.quote(a) for a in argv)}")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=max(5.0, timeout_s), cwd=ROOT,
                              env=child_environ())
    except subprocess.TimeoutExpired as exc:
        run.record(name, argv=argv, timed_out=True, stdout_tail=(exc.stdout or "")[-3000:] if isinstance(exc.stdout, str) else "")
        raise
    run.record(name, argv=argv, exit_code=done.returncode, stdout_tail=done.stdout[-3000:], stderr_tail=done.stderr[-3000:])
    return done.returncode, done.stdout


def essentials(result: dict[str, Any] | None) -> dict[str, Any]:
    """What the comparison and the fixture test read of a result."""
    result = result or {}
    timing = result.get("timing") or {}
    corr = result.get("correctness") or {}
    env = result.get("env") or {}
    return {"state": result.get("state"), "message": result.get("message"),
            "flags": sorted(f.get("code") for f in result.get("flags") or []),
            "median_us": timing.get("median_us"), "rse": timing.get("rse"), "n": timing.get("n"),
            "speedup": result.get("speedup"),
            "baselines_us": {k: (v or {}).get("median_us") for k, v in (result.get("baselines") or {}).items()},
            "correctness": {k: corr.get(k) for k in ("seeds", "cases", "passed", "max_abs_err", "mismatch_frac", "launches")},
            "env": {k: env.get(k) for k in ("device", "gpu", "host", "executor", "driver", "torch", "triton")}}


def trial_result(root: Path, trial_id: str) -> dict[str, Any] | None:
    from trialtui.core.store import Store

    with Store.open(root, writer=False) as store:
        return store.get(trial_id).result


def compare(run: Run, name: str, here: dict[str, Any], there: dict[str, Any], url: str) -> None:
    """`there` (through the server) against `here` (local): state, flags, median within 3 %, where it ran."""
    run.check(f"{name}:state", here["state"] == there["state"] == "correct",
              f"local {here['state']}, {name} {there['state']} ({there.get('message') or ''})".rstrip(" ()"))
    noisy = {"tie"}  # a tie flag sits on the noise band's edge: reported, not required equal
    run.check(f"{name}:flags", set(here["flags"]) - noisy == set(there["flags"]) - noisy,
              f"local {here['flags']}, {name} {there['flags']}")
    if "cuda" in (here["env"].get("device"), there["env"].get("device")):
        a, b = here["median_us"], there["median_us"]
        ok = a is not None and b is not None and abs(b / a - 1) <= TOLERANCE
        run.check(f"{name}:median", ok, f"local {a} µs, {name} {b} µs"
                  + (f" ({(b / a - 1) * 100:+.2f} %, limit ±{TOLERANCE:.0%})" if a and b else ""))
    else:  # a CPU: its interpreter's times are no measurement, so the correctness figures stand in
        keys = ("seeds", "cases", "passed", "max_abs_err", "mismatch_frac")
        same = all(here["correctness"].get(k) == there["correctness"].get(k) for k in keys)
        run.check(f"{name}:numbers", same, "not timed on a CPU: correctness figures "
                  + ("equal" if same else f"differ: local {here['correctness']}, {name} {there['correctness']}"))
    run.check(f"{name}:ran_there", there["env"].get("executor") == url and there["env"].get("host") == socket.gethostname(),
              f"env host {there['env'].get('host')}, executor {there['env'].get('executor')}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=["cuda", "cpu"], default=os.environ.get("TRIALTUI_REMOTE_DEVICE") or None,
                    help="default: cuda when torch sees one, else cpu")
    ap.add_argument("--budget-s", type=float, default=None, help="default 150 on a GPU, 900 on a CPU")
    ap.add_argument("--baselines", default="eager", help="the copy's baselines (eager,compile adds torch.compile's cold start)")
    ap.add_argument("--ray", action="store_true", help="also run a job through ray://local when ray imports")
    ap.add_argument("--no-openssh", action="store_true", help="skip OpenSSH's sshd even when installed")
    ap.add_argument("--out", type=Path, default=None, help="default: $OUT/remote.json, else ./remote.json")
    args = ap.parse_args(argv)

    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    budget = args.budget_s or (150.0 if device == "cuda" else 900.0)
    out = args.out or Path(os.environ.get("OUT") or ".") / "remote.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    run = Run(out, budget)
    run.say(f"gpu_remote: device {device}, budget {budget:.0f} s, writing {out}")
    import asyncssh
    import triton

    from ssh_server import SshServer
    from trialtui.core.config import ExecutorSettings
    from trialtui.core.problem_dir import load_problem
    from trialtui.engine.executors import executor_for

    gpu = torch.cuda.get_device_name(0) if device == "cuda" else None
    sshd = shutil.which("sshd", path=f"{os.environ.get('PATH', '')}:/usr/sbin:/usr/local/sbin:/sbin")
    try:
        import ray  # noqa: F401
        ray_here = True
    except ImportError:
        ray_here = False
    run.data["env"] = {"device": device, "gpu": gpu, "host": socket.gethostname(), "user": __import__("getpass").getuser(),
                       "euid": os.geteuid(), "python": platform.python_version(), "torch": torch.__version__,
                       "triton": triton.__version__, "asyncssh": asyncssh.__version__, "sshd": sshd,
                       "ray_importable": ray_here, "sample": SAMPLE, "candidate": f"demo/{VERSION}",
                       "baselines": args.baselines, "tolerance": TOLERANCE, "pythonpath": os.environ.get("PYTHONPATH")}
    if not ray_here:
        run.data["ray"] = {"ran": False, "why": RAY_NOTE}
        run.say(RAY_NOTE)
    work = Path(tempfile.mkdtemp(prefix="gpu-remote-"))
    server = SshServer(work / "sshd")
    url = server.url()
    settings = {"url": url, "python": python_command(), "identity": str(server.identity),
                "known_hosts": str(server.known_hosts)}
    run.data["server"] = {"url": url, "kind": "asyncssh", "python": settings["python"]}
    run.say(f"SSH server (asyncssh) at {url}; host command python: {settings['python']}")
    root = prepare(work / "prob", args, executor=settings)
    kernel = root / "kernel.py"
    cap = 240.0  # no one CLI call runs longer than this, whatever is left
    dev = ["--device", device]
    results: dict[str, dict[str, Any]] = {}

    def local() -> None:
        code, stdout = cli(run, "local", ["bench", str(kernel), "--json", *dev, "--executor", "local"], min(cap, run.left()))
        results["local"] = essentials(json.loads(stdout))
        run.record("local", result=results["local"])
        run.check("local:correct", results["local"]["state"] == "correct" and code == 0,
                  f"{results['local']['state']}, median {results['local']['median_us']} µs, exit {code}")
        if device == "cuda":
            run.check("local:gpu_timed", results["local"]["median_us"] is not None and results["local"]["env"]["device"] == "cuda",
                      f"{results['local']['env']['gpu']}, {results['local']['median_us']} µs")

    def ssh_bench() -> None:
        code, stdout = cli(run, "ssh_bench", ["bench", str(kernel), "--json", *dev, "--executor", url], min(cap, run.left()))
        results["ssh_bench"] = essentials(json.loads(stdout))
        run.record("ssh_bench", result=results["ssh_bench"], exit_code=code)
        run.check("ssh_bench:gpu_name_read_on_host", device != "cuda" or results["ssh_bench"]["env"]["gpu"] == gpu,
                  f"result env gpu {results['ssh_bench']['env']['gpu']}, torch here {gpu}")

    def watch() -> None:
        code, stdout = cli(run, "watch", ["watch", str(root), "--headless", "--once", *dev], min(cap, run.left()))
        results["watch"] = essentials(trial_result(root, "t1"))
        named = [line for line in stdout.splitlines() if "ran on " in line]
        run.record("watch", result=results["watch"], ran_on_lines=named[:5])
        where = f"ran on {socket.gethostname()} · {gpu or 'CPU'} ({url})"
        run.check("watch:line_names_host", any(where in line for line in named), f"wanted {where!r}; got {named[:2]}")

    def rerun() -> None:
        code, _ = cli(run, "rerun", ["trials", "rerun", "t1", "--dir", str(root), *dev], min(cap, run.left()))
        results["rerun"] = essentials(trial_result(root, "t1"))
        run.record("rerun", result=results["rerun"])
        run.check("rerun:exit", code == 0, f"exit {code}")

    def executor():
        found = executor_for(None, ExecutorSettings(**settings), device)
        found.open()
        return found

    def profile() -> None:
        ex = executor()
        try:
            run.record("profile", hello={k: ex.hello.get(k) for k in ("host", "device", "gpus", "trialtui", "version")},
                       slots=[s.name for s in ex.slots])
            before = set((root / ".trialtui").rglob("*")) if (root / ".trialtui").exists() else set()
            body = ex.profile(load_problem(root), kernel, name="remote-check", device=device)
            landed = sorted(str(p.relative_to(root)) for p in set((root / ".trialtui").rglob("*")) - before if p.is_file())
        finally:
            ex.close()
        kept = {k: body.get(k) for k in ("available", "source", "label", "reason", "skipped", "wall_s")}
        kept["kernels"] = len(body.get("kernels") or body.get("records") or [])
        kept["keys"] = sorted(body)
        run.record("profile", profile=kept, files_landed=landed)
        run.check("profile:available", bool(body.get("available")), f"source {body.get('source')}: {body.get('label') or body.get('reason')}")
        if device == "cuda":
            run.check("profile:measured", body.get("source") in ("ncu", "activity"),
                      f"source {body.get('source')} (ncu counters or CUPTI kernel records, not analytic); skipped {body.get('skipped')}")
            run.check("profile:files_landed", any("profile-remote-check" in p for p in landed), f"{landed[:6]}")

    def cut() -> None:
        from procs import descendants

        from trialtui.engine import events as ev
        from trialtui.engine.loop import Engine

        croot = prepare(work / "cut", args, executor=settings)
        ex = executor()
        first_host = ex.hello["pid"]
        hosts_before = sum("executors.host" in c for c in server.commands)
        states: list[str] = []
        dropped: list[list[int]] = []
        messages: list[str] = []

        def mid_job(line: bytes) -> bool:
            if b'"event":"progress"' in line and b'"phase":"correctness"' in line:
                dropped.append(descendants(first_host))
                return True
            return False

        server.cut_when = mid_job
        engine = Engine(load_problem(croot), executor=ex)

        def on_event(event: Any) -> None:
            if isinstance(event, ev.StateChanged) and event.trial_id == "t1":
                states.append(event.state)
                if event.message:
                    messages.append(event.message[:300])

        engine.subscribe(on_event)
        try:
            asyncio.run(engine.run(once=True))
            final = engine.store.get("t1").result
        finally:
            engine.close()
            ex.close()
            server.cut_when = None
        hosts_after = sum("executors.host" in c for c in server.commands)
        deadline = time.monotonic() + 30
        gone = False
        while time.monotonic() < deadline:
            alive = [p for p in [first_host, *(dropped[0] if dropped else [])] if Path(f"/proc/{p}").exists()
                     and Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]
            if not alive:
                gone = True
                break
            time.sleep(0.2)
        results["cut"] = essentials(final)
        run.record("cut", states=states, messages=messages, result=results["cut"], reconnections=hosts_after - hosts_before,
                   cut_at="the host's first progress line of the bench job (phase correctness)", cut_happened=bool(dropped),
                   first_host_swept=gone)
        run.check("cut:interrupted_then_result", bool(dropped) and "interrupted" in states
                  and states.index("interrupted") < len(states) - 1 and results["cut"]["state"] == "correct",
                  f"states {states}; final {results['cut']['state']}")
        run.check("cut:one_new_connection", hosts_after - hosts_before == 1, f"{hosts_after - hosts_before} new host processes")
        run.check("cut:first_host_swept", gone, "the first host process and everything below it are gone")
        if results.get("local"):
            a, b = results["local"]["median_us"], results["cut"]["median_us"]
            if device == "cuda" and a and b:
                run.check("cut:median", abs(b / a - 1) <= TOLERANCE, f"local {a} µs, after the cut {b} µs ({(b / a - 1) * 100:+.2f} %)")

    def tui() -> None:
        from trialtui.tui.app import make_app

        def screen_text(app: Any) -> str:  # as tests/test_tui_small.py reads the screen
            return "\n".join(strip.text for strip in app.screen._compositor.render_strips())

        ex = executor()
        where = ex.describe()
        seen: dict[str, str] = {}

        async def body() -> None:
            app = make_app(load_problem(root), executor=ex)
            async with app.run_test(size=(200, 50)) as pilot:
                for _ in range(100):
                    await pilot.pause(0.1)
                    if "t1" in screen_text(app):
                        break
                app.tree.move_to("t1", by_user=True)
                await pilot.pause(0.5)
                seen["text"] = screen_text(app)
                await pilot.press("q")

        try:
            asyncio.run(body())
        finally:
            ex.close()
        text = seen.get("text", "")
        status = text.splitlines()[0] if text else ""
        ran = f"ran on {socket.gethostname()} · {gpu or 'CPU'} ({url})"
        run.record("tui", status_bar=status.strip(), where=where,
                   ran_on_line=next((line.strip() for line in text.splitlines() if "ran on" in line), None),
                   screen=text[-6000:])
        run.check("tui:status_bar_names_host", where in status and "127.0.0.1" in status, f"{status.strip()[:160]!r}")
        run.check("tui:detail_names_host_gpu_executor", ran in text, f"wanted {ran!r}")

    def cancel() -> None:
        from trialtui.engine.jobs import ChildHandle

        source = (ROOT / "sample_kernels" / SAMPLE / "demo" / VERSION).read_text()
        head, sep, tail = source.partition("    def forward(self, x, residual):\n")
        if not sep:
            raise RuntimeError("demo/v7.py's forward moved: the cancel step cannot plant its sleep")
        croot = prepare(work / "cancel", args, executor=settings, candidate=(head + sep + SLEEPER + tail).encode(),
                        config={"bench_timeout_s": "60"})
        ex = executor()
        handle = ChildHandle()
        out: dict[str, Any] = {}
        t0 = time.monotonic()
        job = threading.Thread(target=lambda: out.update(ex.bench(load_problem(croot), croot / "kernel.py", device=device,
                                                                   handle=handle)))
        job.start()
        time.sleep(3.0)
        handle.cancel()
        cancelled_at = time.monotonic()
        job.join(timeout=120)
        ex.close()
        run.record("cancel", state=out.get("state"), message=(out.get("message") or "")[:300],
                   seconds_to_cancelled=round(time.monotonic() - cancelled_at, 2), job_s=round(time.monotonic() - t0, 2))
        run.check("cancel:cancelled", out.get("state") == "cancelled", f"{out.get('state')}: {(out.get('message') or '')[:120]}")

    def openssh() -> None:
        from sshd_server import Sshd

        daemon = Sshd(work / "openssh")
        try:
            s = {**settings, "url": daemon.url(), "identity": str(daemon.identity), "known_hosts": str(daemon.known_hosts)}
            ex = executor_for(None, ExecutorSettings(**s), device)
            ex.open()
            try:
                oroot = prepare(work / "openssh-prob", args)
                same_baselines(root, oroot)
                there = essentials(ex.bench(load_problem(oroot), oroot / "kernel.py", device=device))
            finally:
                ex.close()
        finally:
            daemon.close()
        results["openssh"] = there
        run.record("openssh", result=there, url=daemon.url(), accepted=daemon.accepted())
        if results.get("local"):
            compare(run, "openssh", results["local"], there, daemon.url())

    def ray_step() -> None:
        import ray

        if device == "cpu" and not ray.is_initialized():
            ray.init(num_gpus=1)  # a declared GPU slot: each job is a task asking for one (as the CPU tests do)
        ex = executor_for("ray://local", ExecutorSettings(), device)
        ex.open()
        try:
            rroot = prepare(work / "ray-prob", args)
            same_baselines(root, rroot)
            there = essentials(ex.bench(load_problem(rroot), rroot / "kernel.py", device=device))
        finally:
            ex.close()
        results["ray"] = there
        run.data["ray"] = {"ran": True}
        run.record("ray", result=there)
        if results.get("local"):
            compare(run, "ray", results["local"], there, "ray://local")

    try:
        run.step("local", local)
        run.step("ssh_bench", ssh_bench)
        run.step("watch", watch)
        run.step("rerun", rerun)
        for name in ("ssh_bench", "watch", "rerun"):
            if results.get("local") and results.get(name):
                compare(run, name, results["local"], results[name], url)
        run.save()
        run.step("profile", profile)
        run.step("cut", cut)
        run.step("tui", tui)
        run.step("cancel", cancel)
        if sshd and not args.no_openssh:
            run.step("openssh", openssh)
        else:
            run.data["steps"]["openssh"] = {"skipped": "--no-openssh" if sshd else "no sshd installed here"}
        if ray_here and args.ray:
            run.step("ray", ray_step)
        elif ray_here:
            run.data["ray"] = {"ran": False, "why": "ray imports here; pass --ray to run a job through ray://local"}
    finally:
        server.close()
        shutil.rmtree(work, ignore_errors=True)
    missing = [n for n in REQUIRED if not (run.data["steps"].get(n) or {}).get("ok")]
    failed = [n for n, c in run.data["checks"].items() if not c["ok"]]
    failed += [f"step {n}" for n, st in run.data["steps"].items() if st.get("ok") is False]  # an error in any step that ran
    run.data["passed"] = not missing and not failed
    run.data["missing"] = missing
    run.data["failed"] = failed
    run.save()
    run.say(f"{'PASSED' if run.data['passed'] else 'FAILED'}: {len(run.data['checks']) - len(failed)} of "
            f"{len(run.data['checks'])} checks passed" + (f"; failed {failed}" if failed else "")
            + (f"; required steps not done: {missing}" if missing else "") + f"; wrote {out}")
    return 0 if run.data["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
