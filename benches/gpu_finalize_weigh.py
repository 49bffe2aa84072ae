"""On the GPU: finalize weighs the final kernel's library work on kernel records whatever `[profile] when` says.

In a copy of sample_kernels/rmsnorm with `[profile] when = "never"` (no trial gets a profile in the loop), the
honest kernel and `hidden.py` (the reference's forward under torch._C.DisableTorchFunction, out of the bench
recorder's sight, beside a token kernel of its own: benches/gpu_profilers.py's decoy) are scored by one
`trialtui watch --once`, then each is finalized by id. The honest kernel must be finalized with its own kernels
doing at least half the GPU time on the card (`library`); the decoy must be refused ("is not finalized", library
kernels named) and left flagged `fallback` in the tree.

    OUT=/tmp/out python benches/gpu_finalize_weigh.py          # about three minutes (watch 47 s, a finalize 55 s: H100)
    OUT=/tmp/out DEVICE=cpu python benches/gpu_finalize_weigh.py   # the script's own smoke run: no records, no verdict

Prints each step as it goes, writes $OUT/finalize_weigh.json; exits 1 where the GPU run is not as above.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benches"))

from gpu_profilers import HIDDEN  # noqa: E402

from trialtui.core.store import Store  # noqa: E402

DEVICE = os.environ.get("DEVICE", "cuda")


def trialtui(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "trialtui", *args], capture_output=True, text=True, timeout=timeout)
    print(f"$ trialtui {' '.join(args)}  (exit {done.returncode}, {time.monotonic() - started:.1f} s)", flush=True)
    return done


def main() -> int:
    out_dir = Path(os.environ.get("OUT", "."))
    out_dir.mkdir(parents=True, exist_ok=True)
    rows, failures = [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "rmsnorm"
        shutil.copytree(ROOT / "sample_kernels" / "rmsnorm", root,
                        ignore=shutil.ignore_patterns(".trialtui", "recorded", "demo", "__pycache__", "v*.py"))
        (root / "trialtui.toml").write_text((root / "trialtui.toml").read_text() + '\n[profile]\nwhen = "never"\n')
        (root / "hidden.py").write_text((root / "reference.py").read_text() + HIDDEN)
        watched = trialtui("watch", str(root), "--once", "--headless", "--device", DEVICE)
        print(watched.stdout[-3000:], watched.stderr[-2000:], sep="\n", flush=True)
        with Store.open(root, writer=False) as store:
            trials = {t.file: t for t in store.trials()}
        for file, decoy in (("kernel.py", False), ("hidden.py", True)):
            trial = trials.get(file)
            if trial is None:
                failures.append(f"{file}: no trial")
                continue
            done = trialtui("trials", "finalize", trial.id, "--json", "--device", DEVICE, "--dir", str(root))
            card = json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else None
            with Store.open(root, writer=False) as store:
                after = store.get(trial.id)
            flags = [f.get("code") for f in (after.result.flags if after.result else None) or []]
            row = {"file": file, "trial": trial.id, "state": trial.state, "median_us": trial.median_us,
                   "finalized": card is not None, "library": card and card.get("library"),
                   "refusal": done.stderr.strip()[-600:] if card is None else None, "flags_after": flags,
                   "profile_source": after.profile and after.profile.get("source")}
            rows.append(row)
            print(json.dumps(row, indent=1), flush=True)
            if DEVICE != "cuda":
                continue
            if decoy and (card is not None or "is not finalized" not in (row["refusal"] or "") or "fallback" not in flags):
                failures.append(f"{file}: the decoy was not refused and flagged")
            if not decoy and (card is None or not card.get("library") or card["library"]["own_share"] < 0.5):
                failures.append(f"{file}: the honest kernel was not finalized with its own kernels weighed")
    (out_dir / "finalize_weigh.json").write_text(json.dumps({"device": DEVICE, "rows": rows, "failures": failures},
                                                            indent=1))
    print(f"{len(rows)} finalized or refused, {len(failures)} not as expected" + "".join(f"\n  {f}" for f in failures),
          flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
