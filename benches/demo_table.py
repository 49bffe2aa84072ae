"""README's demo table, made from one recording run (`trialtui demo --all --record DIR`), not by hand.

    python benches/demo_table.py DIR                      # print the table (DIR: summary.json, <problem>/v*.json)
    python benches/demo_table.py demo_record.json         # the same from benches/gpu_demo_record.py's output
    python benches/demo_table.py DIR --readme README.md   # replace README's table (the `| sample (` block) with it

One row per story: its best trial (summary.json's `best_version`, the tree's best), read from that
version's recording: median, speedups against eager and torch.compile (`(tie)` where the result carries
the `tie` flag for that baseline), dtype and shape of the first bench case, and the bound and fraction of
speed-of-light from its floor verdict's evidence, naming the ceilings the run used (`calibrated`: what
`trialtui calibrate` measured on that GPU, copy bandwidth for a memory-bound kernel; else `datasheet`).
The header names the GPU and the run's UTC date(s); a line under the table says where it came from.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

NAMES = {"bias_gelu_residual": "bias + GELU + residual", "softmax": "row softmax (GPU MODE form)",
         "rmsnorm": "RMSNorm", "matmul_epilogue": "matmul + bias + SiLU"}
ORDER = ("bias_gelu_residual", "softmax", "rmsnorm", "matmul_epilogue")
DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}
FLOOR = re.compile(r"floor ([\d.,]+) µs \((memory|compute)-bound, (datasheet|calibrated)")
HEADER = "| sample ("


def shape_of(case: dict[str, Any]) -> str:
    dims = [v for k, v in case.items() if k != "seed" and isinstance(v, int)]
    if len(dims) == 3 and len(set(dims)) == 1:
        return f"{dims[0]}³"
    return " × ".join(str(d) for d in dims) or "default sizes"


def bound_of(recording: dict[str, Any]) -> str:
    """`bandwidth, 93 % of speed-of-light (calibrated)` from the floor verdict's evidence and the trial's sol."""
    sol = recording.get("sol")
    for verdict in recording.get("verdicts") or []:
        found = FLOOR.search(verdict.get("evidence") or "")
        if found:
            kind = "bandwidth" if found.group(2) == "memory" else "compute"
            frac = f", {sol * 100:.0f} % of speed-of-light" if isinstance(sol, (int, float)) else ""
            return f"{kind}{frac} ({found.group(3)} ceilings)"
    return f"{sol * 100:.0f} % of speed-of-light" if isinstance(sol, (int, float)) else "—"


def row_for(problem: str, recording: dict[str, Any]) -> dict[str, Any]:
    result = recording.get("result") or {}
    speed = result.get("speedup") or {}
    ties = {m.group(1) for f in result.get("flags") or [] if f.get("code") == "tie"
            for m in [re.match(r"vs (\w+):", f.get("message") or "")] if m}
    base = result.get("baselines") or {}
    cases = result.get("sizes") or [{}]
    return {"problem": problem, "name": NAMES.get(problem, problem), "version": recording.get("version"),
            "dtype": DTYPES.get(result.get("dtype"), result.get("dtype")), "shape": shape_of(cases[0] or {}),
            "median_us": (result.get("timing") or {}).get("median_us"),
            "speedup": {k: speed.get(k) for k in ("eager", "compile")},
            "baselines_us": {k: (v or {}).get("median_us") for k, v in base.items()},
            "ties": sorted(ties), "bound": bound_of(recording),
            "gpu": (result.get("env") or {}).get("gpu"), "date": (recording.get("recorded_at") or "")[:10]}


def rows_from_dir(directory: Path, rank: bool = False) -> list[dict[str, Any]]:
    summary = json.loads((directory / "summary.json").read_text())
    rows = []
    for problem in sorted(summary, key=lambda p: (ORDER.index(p) if p in ORDER else len(ORDER), p)):
        if rank:
            chosen = ranked_best(directory / problem)
            if chosen is not None:
                rows.append(row_for(problem, chosen))
            continue
        version = summary[problem].get("best_version")
        path = directory / problem / f"{Path(version).stem}.json" if version else None
        if path is None or not path.is_file():
            continue
        rows.append(row_for(problem, json.loads(path.read_text())))
    return rows


def ranked_best(folder: Path) -> dict[str, Any] | None:
    """The recording the tree ranks best today (trialtui.core.tree.best on the recorded results): for a run
    whose summary was written before a change in what disqualifies (a speed-of-light above 100 % of
    calibrated ceilings, 2026-12-02), the table follows today's rule, not the run's."""
    from trialtui.core import tree
    from trialtui.core.bench_result import BenchResult
    from trialtui.core.model import Trial

    recordings = {}
    for path in sorted(folder.glob("v*.json")):
        data = json.loads(path.read_text())
        recordings[data["trial"]] = data
    trials = [Trial(r["trial"], "kernel.py", r.get("sha256") or "", 0.0, r.get("state") or "",
                    result=BenchResult.from_json(r["result"]) if r.get("result") else None, sol=r.get("sol"))
              for r in recordings.values()]
    found = tree.best(trials)
    return recordings[found.id] if found is not None else None


def rows_from_json(path: Path) -> list[dict[str, Any]]:
    """benches/gpu_demo_record.py's JSON: each story's best recording is kept under `best_recording`."""
    data = json.loads(path.read_text())
    stories = data.get("stories") or {}
    rows = []
    for problem in sorted(stories, key=lambda p: (ORDER.index(p) if p in ORDER else len(ORDER), p)):
        recording = (stories[problem] or {}).get("best_recording")
        if recording:
            rows.append(row_for(problem, recording))
    return rows


def rows_from(source: Path, rank: bool = False) -> list[dict[str, Any]]:
    return rows_from_dir(source, rank) if source.is_dir() else rows_from_json(source)


def cell(row: dict[str, Any], kind: str) -> str:
    value = row["speedup"].get(kind)
    return "—" if value is None else f"{value:.2f}×" + (" (tie)" if kind in row["ties"] else "")


def render(rows: list[dict[str, Any]], source: str = "") -> str:
    """The markdown table, then one line naming the run."""
    if not rows:
        return "(no story with a best trial in this recording)\n"
    gpus = sorted({r["gpu"] or "?" for r in rows})
    dates = sorted({r["date"] for r in rows if r["date"]})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}" if dates else "undated"
    lines = [f"| sample ({', '.join(gpus)}, {when}) | dtype, shape | median | vs eager | vs torch.compile | "
             "bound, fraction of speed-of-light |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        median = f"{r['median_us']:.1f} µs" if r["median_us"] is not None else "—"
        lines.append(f"| {r['name']} ({r['version']}) | {r['dtype']}, {r['shape']} | {median} | {cell(r, 'eager')} | "
                     f"{cell(r, 'compile')} | {r['bound']} |")
    lines += ["", f"*Generated by `benches/demo_table.py` from {source or 'a recording'}: each story's best trial, "
                  f"baselines timed in the same run ({when}, UTC).*"]
    return "\n".join(lines) + "\n"


def replace_table(text: str, table: str) -> str:
    """`text` with its demo table (the block from a `| sample (` line to the next line that is neither
    a table row, blank before a generated note, nor that note) replaced by `table`."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(HEADER)), None)
    if start is None:
        raise ValueError(f"no line starting {HEADER!r}: nothing to replace")
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    if end + 1 < len(lines) and not lines[end].strip() and lines[end + 1].startswith("*Generated by `benches/demo_table.py`"):
        end += 2
    return "\n".join(lines[:start] + table.rstrip("\n").splitlines() + lines[end:]) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", type=Path, help="a recording folder (summary.json) or gpu_demo_record.py's JSON")
    ap.add_argument("--readme", type=Path, default=None, help="replace this file's demo table")
    ap.add_argument("--rank", action="store_true", help="a folder's best by today's tree.best, not its summary.json")
    args = ap.parse_args(argv)
    table = render(rows_from(args.source, args.rank), args.source.name)
    if args.readme:
        args.readme.write_text(replace_table(args.readme.read_text(), table))
        print(f"replaced the demo table in {args.readme}")
    print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
