"""On the H200: finalize's held-out check (issue 38) at the samples' bench sizes, one row per kernel as it completes.

`OUT=/some/dir python benches/gpu_generalize.py` copies each sample problem to a scratch directory and runs
`engine.generalize.check_file` (the very check finalize runs after its clean re-benchmark) on the story's last
version, then on three kernels tuned to what they saw, made from the bias + GELU + residual sample's
kernel.py: one that hard-codes the bench batch, one that drops the unmasked tail (blocks of 256, no mask),
one that indexes rows as if packed. Lines starting `row` are the table: the card's "generalizes:" line, the
seconds the check took against the budget (default 30 s), and what each failing case said. With OUT set, the
rows go to $OUT/gpu_generalize.json too (keep it as a fixture).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trialtui.core.problem_dir import load_problem  # noqa: E402
from trialtui.engine.generalize import check_file  # noqa: E402

SAMPLES = ROOT / "sample_kernels"
STORIES = ("bias_gelu_residual", "softmax", "rmsnorm", "matmul_epilogue")


def last_version(story: str) -> Path:
    return max((SAMPLES / story / "demo").glob("v*.py"), key=lambda p: int(p.stem[1:]))


def tuned_variants(source: str) -> dict[str, str]:
    """The bias + GELU + residual kernel.py made to fit the bench sizes it saw (16384 × 8192)."""
    variants = {
        "hard-coded batch": source.replace("n = x.numel()", "n = 16384 * x.shape[1]  # the bench batch"),
        "unmasked tail": (source.replace("BLOCK = 1024", "BLOCK = 256").replace("(triton.cdiv(n, BLOCK),)", "(n // BLOCK,)")
                          .replace(", mask=mask, other=0.0)", ")").replace(", mask=mask)", ")")),
        "assumes contiguous": (source.replace("        x = x.contiguous()\n", "")
                               .replace("        residual = residual.contiguous()\n", "")),
    }
    unchanged = [name for name, text in variants.items() if text == source]
    assert not unchanged, f"kernel.py changed: {unchanged} no longer apply"
    return variants


def check(scratch: Path, story: str, name: str, source: str) -> dict:
    root = scratch / f"{story}-{len(list(scratch.iterdir()))}"
    shutil.copytree(SAMPLES / story, root, ignore=shutil.ignore_patterns(".trialtui", "final", "demo", "recorded"))
    candidate = root / "candidate_under_check.py"
    candidate.write_text(source)
    problem = load_problem(root)
    started = time.monotonic()
    found = check_file(problem, candidate, device="cuda")
    seconds = time.monotonic() - started
    failures = [f"{c['label']}: {c['message'][:200]}" for c in found.to_dict()["cases"] if c["outcome"] != "passed"]
    print(f"row {story} / {name}: {found.line()} [{seconds:.1f} s of a {problem.config.generalize.budget_s:g} s budget]",
          flush=True)
    for failure in failures:
        print(f"    {failure}", flush=True)
    return {"story": story, "kernel": name, "seconds": round(seconds, 2), "budget_s": problem.config.generalize.budget_s,
            **found.to_dict()}


def main() -> int:
    out = os.environ.get("OUT")
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpu-generalize-") as scratch_dir:
        scratch = Path(scratch_dir)
        for story in STORIES:
            version = last_version(story)
            rows.append(check(scratch, story, f"demo/{version.name}", version.read_text()))
        kernel = (SAMPLES / "bias_gelu_residual" / "kernel.py").read_text()
        for name, source in tuned_variants(kernel).items():
            rows.append(check(scratch, "bias_gelu_residual", name, source))
    import torch

    summary = {"gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
               "date": time.strftime("%Y-%m-%d %H:%M"), "rows": rows}
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "gpu_generalize.json").write_text(json.dumps(summary, indent=2) + "\n")
    honest_ok = all(not r["fails"] and not r["error"] for r in rows[: len(STORIES)])
    tuned_named = all(r["fails"] for r in rows[len(STORIES):])
    print(f"done: story kernels {'all generalize' if honest_ok else 'NOT all generalize'}; "
          f"tuned kernels {'all named' if tuned_named else 'NOT all named'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
