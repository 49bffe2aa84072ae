"""Warm jobs forked from a fork server against warm jobs as new interpreters, side by side in one run.

python benches/fork_server.py [--problem tests/trust/kb_softmax_fp32] [--rounds 2] [--device cpu|cuda]

Each run is `trialtui watch DIR --once --headless --json` on a fresh copy of a problem with many
candidates (the trust corpus's softmax: 15 files, right and wrong), so every save goes through the
compile stage and the checker, as a burst of saves does. `fork` is the default (engine/forkservers.py);
`exec` sets TRIALTUI_NO_FORKSERVER=1, each warm job a new interpreter that imports torch. Rounds
alternate the two. The verdicts must be the same in both modes; the figures are wall seconds for the
whole watch (engine start to exit) and the mean per candidate. With OUT set, fork_server.json is written there.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import corpus  # noqa: E402  (tests/corpus.py: the CLI run and its JSON lines read back)


def watch(problem: Path, mode: str, device: str) -> tuple[float, dict[str, str]]:
    """One `watch --once` on a fresh copy: its wall seconds and each candidate's final state."""
    os.environ["TRIALTUI_NO_FORKSERVER"] = "1" if mode == "exec" else "0"
    with tempfile.TemporaryDirectory(prefix="fork-bench-") as tmp:
        root = Path(tmp) / problem.name
        shutil.copytree(problem, root, ignore=shutil.ignore_patterns(".trialtui", "__pycache__"))
        started = time.monotonic()
        final, _, returncode = corpus.run_watch(root, device=device, timeout_s=900)
        wall = time.monotonic() - started
    if returncode != 0:
        sys.exit(f"{mode}: watch exited {returncode}: {final.get('__cli__')}")
    return wall, {name: result["state"] for name, result in final.items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", default=str(ROOT / "tests" / "trust" / "kb_softmax_fp32"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    problem = Path(args.problem).resolve()
    n = len([p for p in problem.glob("*.py") if p.name != "reference.py" and not p.name.startswith("_")])
    walls: dict[str, list[float]] = {"fork": [], "exec": []}
    verdicts: dict[str, dict[str, str]] = {}
    for r in range(args.rounds):
        for mode in (("fork", "exec") if r % 2 == 0 else ("exec", "fork")):
            wall, states = watch(problem, mode, args.device)
            walls[mode].append(wall)
            if mode in verdicts and verdicts[mode] != states:
                print(f"round {r + 1} {mode}: verdicts changed between rounds")
            verdicts[mode] = states
            print(f"round {r + 1} {mode:<4} {wall:6.1f} s  {len(states)}/{n} scored", flush=True)
    same = verdicts["fork"] == verdicts["exec"] and len(verdicts["fork"]) == n
    fork, cold = statistics.median(walls["fork"]), statistics.median(walls["exec"])
    print(f"\n{problem.name}, {n} candidates, {os.cpu_count()} cores, device {args.device}, {datetime.date.today()}")
    print(f"{'mode':<6}{'median s':>10}{'s/candidate':>13}")
    for mode, wall in (("fork", fork), ("exec", cold)):
        print(f"{mode:<6}{wall:>10.1f}{wall / n:>13.2f}")
    print(f"fork/exec = {fork / cold:.2f}; verdicts {'the same' if same else 'DIFFER'}")
    if not same:
        for name in sorted(set(verdicts["fork"]) | set(verdicts["exec"])):
            if verdicts["fork"].get(name) != verdicts["exec"].get(name):
                print(f"  {name}: fork {verdicts['fork'].get(name)}, exec {verdicts['exec'].get(name)}")
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "fork_server.json").write_text(json.dumps({
            "problem": problem.name, "candidates": n, "device": args.device, "cores": os.cpu_count(),
            "date": str(datetime.date.today()), "walls": walls, "ratio": fork / cold, "same_verdicts": same,
            "verdicts": verdicts["fork"]}, indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
