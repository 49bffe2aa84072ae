"""On the H200: the trust corpus (tests/trust/) scored on the GPU, test and bench sizes, every seed.

    OUT=/tmp/trust python benches/gpu_trust.py          # at most 8 minutes on one H200

One `trialtui watch ROOT --once --headless --json --device cuda` scores every candidate of every
problem directory (a copy: the corpus stays clean; profiling off, it is not what is checked here),
then `trialtui bench FILE --json --device cuda` scores a sample again, right and wrong candidates
of different problems, and must agree (exit status 0 correct, 1 incorrect, 2 otherwise). Each
candidate's header says what it must get:

    # expect: <state> | <message fragment>
    # gpu-expect: <state> | <fragment>   where the GPU differs (TF32 in tl.dot on fp32 inputs)
    # flags: <code>, ...          codes every result must carry ("a|b": either)
    # gpu-flags: <code>, ...      codes the GPU result must carry
    # absent: <fragment>          must not appear in the message

Totals: wrong candidates called correct, correct candidates failed, flagged results chosen as best
(every problem's trials through trialtui.core.tree.best), speedups computed against a cached
baseline instead of one timed in the same run (from the second trial of a problem on, issue 13.6),
results without peak GPU memory (issue 13.7), headlines below the checker's clock or, unflagged
`impossible`, below the physical floor (issue 33).
Prints a table and writes $OUT/trust.json (and the watch's JSON lines to $OUT/watch.jsonl).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trialtui.core import tree  # noqa: E402
from trialtui.core.problem_dir import load_problem  # noqa: E402
from trialtui.core.store import Store  # noqa: E402

TRUST = ROOT / "tests" / "trust"
OUT = Path(os.environ.get("OUT") or "gpu_trust_out")
WATCH_TIMEOUT_S = float(os.environ.get("TRUST_WATCH_S", 390))  # with the bench sample, inside one 8-minute device call
SAMPLE = int(os.environ.get("TRUST_SAMPLE", 8))  # candidates benched again; 0 when device time is short
ONLY = [n for n in os.environ.get("TRUST_PROBLEMS", "").split(",") if n]  # a subset of the problems, else all
GPU_TIMEOUT_S = 20
BENCH_EXIT = {"correct": 0, "incorrect": 1}  # anything else: 2
HEADER = re.compile(r"^#\s*(expect|gpu-expect|flags|gpu-flags|absent)\s*:\s*(.*?)\s*$")


def expectation(path: Path) -> dict:
    """The candidate's header lines: expected state and fragment, required flags, absent text."""
    want = {"state": None, "fragment": "", "flags": [], "absent": []}
    for line in path.read_text().splitlines()[:6]:
        match = HEADER.match(line)
        if not match:
            continue
        key, value = match.groups()
        if key in ("expect", "gpu-expect"):  # gpu-expect comes after expect and wins here
            state, _, fragment = value.partition("|")
            want["state"], want["fragment"] = state.strip(), fragment.strip()
        elif key in ("flags", "gpu-flags"):
            want["flags"] += [code.strip() for code in value.split(",") if code.strip()]
        else:
            want["absent"].append(value)
    return want


def copy_corpus(dest: Path) -> list[Path]:
    """Each problem directory copied without state, profiling off, bench timeouts at least GPU_TIMEOUT_S
    (a GPU job compiles and times; the corpus's 8 s is for the CPU's hanging candidates)."""
    roots = []
    for src in sorted(p for p in TRUST.iterdir() if (p / "reference.py").exists() and (not ONLY or p.name in ONLY)):
        root = dest / src.name
        shutil.copytree(src, root, ignore=shutil.ignore_patterns(".trialtui", "__pycache__"))
        toml = root / "trialtui.toml"
        text = toml.read_text() if toml.exists() else ""
        text = re.sub(r"(?m)^bench_timeout_s = (\d+)", lambda m: f"bench_timeout_s = {max(int(m[1]), GPU_TIMEOUT_S)}", text)
        if "[profile]" not in text:
            toml.write_text(text + '\n[profile]\nwhen = "never"\n')
        roots.append(root)
    return roots


def message_of(state: str, result: dict | None, validation: dict | None) -> str:
    """The result's message; for an invalid trial, the validation's error findings."""
    parts = [(result or {}).get("message") or ""]
    if state == "invalid":
        parts += [finding.get("message") or "" for finding in (validation or {}).get("errors") or []]
    return " | ".join(p for p in parts if p)


def judge(want: dict, state: str, message: str, flags: list[str]) -> list[str]:
    """What does not match the header; empty when the candidate got what it must."""
    problems = []
    if state != want["state"]:
        problems.append(f"state {state}, expected {want['state']}")
    if want["fragment"] and want["fragment"].lower() not in message.lower():
        problems.append(f"message lacks {want['fragment']!r}")
    for code in want["flags"]:
        if not set(code.split("|")) & set(flags):
            problems.append(f"flag {code} missing")
    for text in want["absent"]:
        if text in message:
            problems.append(f"message has {text!r}")
    return problems


def row(problem: str, name: str, want: dict, state: str, message: str, flags: list[str], result: dict | None, how: str) -> dict:
    return {
        "problem": problem, "candidate": name, "how": how,
        "expected": want["state"], "fragment": want["fragment"], "want_flags": want["flags"],
        "got": state, "message": message[:400], "flags": flags,
        "peak_mem_bytes": (result or {}).get("peak_mem_bytes"),
        "speedup": (result or {}).get("speedup"),
        "cached_baselines": sorted(k for k, b in ((result or {}).get("baselines") or {}).items() if b.get("cached")),
        "mismatch": judge(want, state, message, flags) + headline_beyond_checker(result) + below_floor(result, flags),
        "headline_us": ((result or {}).get("timing") or {}).get("median_us"),
        "phases_s": (result or {}).get("phases_s"),  # where each job's seconds went: the watch's throughput
        "prepared": (result or {}).get("prepared"),  # cases the warm checker had ready: 0 where the job made its own
        "timing": {k: v for k, v in ((result or {}).get("timing") or {}).items() if k != "samples"},  # to judge it again
    }


def headline_beyond_checker(result: dict | None) -> list[str]:
    """The headline may be the candidate's own events only where the checker's clock bears them out
    (runner/timing.confirm); a median better than that by more than the noise is a forged number."""
    from trialtui.runner.timing import WIDE, Band

    timing = (result or {}).get("timing") or {}
    median, per_call = timing.get("median_us"), timing.get("checker_us_per_call")
    flush = timing.get("overhead_us", timing.get("flush_us"))  # what a call costs besides itself, as the checker measured
    landing = timing.get("landing") or {}
    landed = landing.get("harness_us", (timing.get("reference_loop") or {}).get("landing_harness_us"))
    if landing.get("gated") and landing.get("per_call_us") and landed is not None:  # since s23 every gated batch is
        per_call, flush = landing["per_call_us"], landed  # judged on the landing clock, less its harness (runner/landing.py)
    if not all(isinstance(x, (int, float)) for x in (median, per_call, flush)):
        return []
    band = Band(**timing["confirm_band"]) if timing.get("confirm_band") else WIDE  # the one it was held to
    floor = band.edge(max(0.0, per_call - flush))
    return [f"headline {median:.1f} µs below the checker's clock ({floor:.1f} µs)"] if median < floor else []


def below_floor(result: dict | None, flags: list[str]) -> list[str]:
    """A headline below the physical floor (the least work at the datasheet's peaks) names no real run: it
    may stand only flagged `impossible` (never best, core/flags.py)."""
    timing = (result or {}).get("timing") or {}
    median, floor = timing.get("median_us"), (timing.get("work") or {}).get("floor_us")
    if "impossible" in flags:
        return []
    if isinstance(median, (int, float)) and isinstance(floor, (int, float)) and 0 < median < floor:
        return [f"headline {median:.1f} µs below the physical floor {floor:.1f} µs"]
    return []


def stream_watch(cmd: list[str], work: Path, limit_s: float) -> tuple[str, str]:
    """Run the watch, printing each result as it lands (a run cut short still says how far it got)."""
    names: dict[tuple[str, str], str] = {}
    lines: list[str] = []
    started = time.monotonic()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=work) as proc:
        timer = threading.Timer(limit_s, proc.kill)
        timer.start()
        try:
            for line in proc.stdout:
                lines.append(line)
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                key = (str(event.get("problem")), str(event.get("trial_id")))
                if event.get("event") == "trial_created":
                    names[key] = str(event.get("file"))
                elif event.get("event") == "result":
                    print(f"{time.monotonic() - started:6.1f}s {key[0]:<18} {names.get(key, key[1]):<26} "
                          f"{event.get('state')}: {str(event.get('summary'))[:90]}", flush=True)
        finally:
            timer.cancel()
    note = f"exit {proc.returncode}" if time.monotonic() - started < limit_s else f"killed after {limit_s:g} s"
    return "".join(lines), note


def watch(work: Path) -> tuple[list[dict], dict, float]:
    started = time.monotonic()
    cmd = [sys.executable, "-m", "trialtui", "watch", str(work), "--once", "--headless", "--json", "--device", "cuda"]
    log, note = stream_watch(cmd, work, WATCH_TIMEOUT_S)
    (OUT / "watch.jsonl").write_text(log)
    rows, bests = [], {}
    for root in sorted(p for p in work.iterdir() if (p / "reference.py").exists()):
        problem = load_problem(root)
        with Store.open(root, writer=False) as store:
            trials = store.trials()
        latest = {}
        for trial in sorted(trials, key=lambda t: tree.id_number(t.id)):
            latest[trial.file] = trial
        for path in problem.candidates():
            want = expectation(path)
            trial = latest.get(path.name)
            if trial is None:
                rows.append(row(root.name, path.name, want, "missing", f"no trial ({note})", [], None, "watch"))
                continue
            flags = [f.get("code") for f in (trial.result or {}).get("flags") or []]
            message = message_of(trial.state, trial.result, trial.validation)
            rows.append(row(root.name, path.name, want, trial.state, message, flags, trial.result, "watch"))
        chosen = tree.best(trials)
        if chosen is not None:
            want = expectation(root / chosen.file)
            bests[root.name] = {
                "trial": chosen.id, "file": chosen.file, "speedup": chosen.speedup(),
                # the product's rule (core/flags.py): a `suspicious` speedup with a known speed-of-light at
                # most 100% is verified and may be best; a flag the header wants but the result lacks is a mismatch
                "flagged": bool(tree.disqualified(chosen)),
                "expected": want["state"],
            }
    return rows, bests, time.monotonic() - started


def sample(work: Path, rows: list[dict]) -> list[dict]:
    """SAMPLE candidates again through `trialtui bench`, right and wrong ones from different problems
    (no hanging ones: their time is the timeout); the verdict and the exit status must hold."""
    picked = {}
    for r in rows:
        kind = "right" if r["expected"] == "correct" else "wrong"
        if r["expected"] != "timeout":
            picked.setdefault((r["problem"], kind), r["candidate"])
    chosen = sorted(picked.items(), key=lambda item: (item[0][1], item[0][0]))
    chosen = [c for pair in zip(chosen[: len(chosen) // 2], chosen[len(chosen) // 2:]) for c in pair][:SAMPLE]
    out = []
    for (problem, _), name in chosen:
        path = work / problem / name
        want = expectation(path)
        run = subprocess.run([sys.executable, "-m", "trialtui", "bench", str(path), "--json", "--device", "cuda"],
                             capture_output=True, text=True, timeout=180, cwd=work)
        try:
            result = json.loads(run.stdout)
        except json.JSONDecodeError:
            result = {"state": "unreadable", "message": (run.stdout + run.stderr)[-400:]}
        state = result.get("state") or "?"
        flags = [f.get("code") for f in result.get("flags") or []]
        r = row(problem, name, want, state, result.get("message") or "", flags, result, "bench")
        expected_exit = BENCH_EXIT.get(want["state"], 2)
        if run.returncode != expected_exit:
            r["mismatch"].append(f"exit {run.returncode}, expected {expected_exit}")
        out.append(r)
    return out


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="trust-")) / "trust"
    work.mkdir(parents=True)
    copy_corpus(work)
    rows, bests, watch_s = watch(work)
    started = time.monotonic()
    benched = sample(work, rows)
    bench_s = time.monotonic() - started
    everything = rows + benched
    totals = {
        "candidates": len(rows),
        "wrong_called_correct": sum(r["expected"] != "correct" and r["got"] == "correct" for r in everything),
        "correct_failed": sum(r["expected"] == "correct" and r["got"] != "correct" for r in everything),
        "flagged_chosen_as_best": sum(b["flagged"] for b in bests.values()),
        "mismatches": sum(bool(r["mismatch"]) for r in everything),
        "speedups_from_cached_baselines": sum(bool(r["speedup"] and r["cached_baselines"]) for r in everything),
        "results_without_peak_mem": sum(r["peak_mem_bytes"] is None and r["got"] in ("correct", "incorrect")
                                        for r in everything),
        "headline_beyond_checker": sum(any("checker's clock" in m for m in r["mismatch"]) for r in everything),
        "headline_below_floor": sum(any("physical floor" in m for m in r["mismatch"]) for r in everything),
        "not_final": sum(r["got"] in ("queued", "validating", "benchmarking", "profiling", "missing") for r in everything),
        "watch_s": round(watch_s, 1),
        "bench_sample_s": round(bench_s, 1),
    }
    (OUT / "trust.json").write_text(json.dumps({"totals": totals, "best": bests, "rows": everything}, indent=1))
    print(f"{'problem':<20} {'candidate':<26} {'how':<5} {'expected':<9} {'got':<9} {'ok':<3} peak MB  why")
    for r in everything:
        peak = f"{r['peak_mem_bytes'] / 2**20:8.1f}" if isinstance(r["peak_mem_bytes"], (int, float)) else "       -"
        ok = "ok" if not r["mismatch"] else "NO"
        why = "; ".join(r["mismatch"]) or (r["message"][:60] if r["got"] != "correct" else "")
        print(f"{r['problem']:<20} {r['candidate']:<26} {r['how']:<5} {r['expected']:<9} {r['got']:<9} {ok:<3} {peak} {why}")
    for problem, b in sorted(bests.items()):
        print(f"best {problem}: {b['trial']} {b['file']} {b['speedup']:.2f}x{'  FLAGGED' if b['flagged'] else ''}")
    print(json.dumps(totals))
    failed = ("wrong_called_correct", "correct_failed", "flagged_chosen_as_best", "speedups_from_cached_baselines",
              "mismatches")
    return 1 if any(totals[key] for key in failed) else 0


if __name__ == "__main__":
    sys.exit(main())
