"""On the GPU: play a sample's story live and keep its recording (issue 18: all four stories recorded live).

`python benches/gpu_demo_record.py [PROBLEM]` (default matmul_epilogue) runs
`python -m trialtui.cli_demo PROBLEM --record $OUT/record --profile never` and prints its table. Copy
$OUT/record/PROBLEM/v*.json into sample_kernels/PROBLEM/recorded/ afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    problem = argv[0] if argv else "matmul_epilogue"
    out = Path(os.environ.get("OUT", "/tmp/demo_record")) / "record"
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "trialtui.cli_demo", problem, "--record", str(out), "--profile", "never"],
                          cwd=ROOT)
    for path in sorted((out / problem).glob("v*.json")):
        print(path.relative_to(out))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
