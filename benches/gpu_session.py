"""One device call, several GPU checks: run the named bench scripts in turn, each under its own time limit.

`python benches/gpu_session.py NAME[:SECONDS[:ARG,ARG...]] ...` runs `benches/NAME.py ARG...` (ARGS split on spaces
instead where they hold one, so that an argument may hold commas) with OUT set to a folder of
its own, keeps each script's whole output in its log, prints the tail of each and a summary line, and
packs every output into $OUT/session.tar.gz (the device tool returns at most eight files).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    out = Path(os.environ.get("OUT", "/tmp/gpu_session"))
    work = Path("/tmp/gpu_session_out")
    work.mkdir(parents=True, exist_ok=True)
    summary = []
    worst = 0
    for item in argv:
        name, _, rest = item.partition(":")
        limit, _, args = rest.partition(":")
        limit_s = float(limit or 240)
        folder = work / name
        folder.mkdir(exist_ok=True)
        log = folder / "log.txt"
        started = time.monotonic()
        with open(log, "w") as fh:
            # a session of its own: a script stopped at its limit takes its children (a `trialtui bench` holding
            # the GPU's lock) with it, so the next script finds the GPU free
            proc = subprocess.Popen([sys.executable, str(ROOT / "benches" / f"{name}.py"),
                                     *(args.split() if " " in args else filter(None, args.split(",")))],
                                    cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
                                    env={**os.environ, "OUT": str(folder), "PYTHONUNBUFFERED": "1"})
            try:
                code = proc.wait(timeout=limit_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                code = 124
        took = time.monotonic() - started
        worst = max(worst, code)
        summary.append(f"{name}: exit {code} in {took:.0f} s")
        tail = log.read_text(errors="replace").splitlines()[-25:]
        print(f"===== {name} (exit {code}, {took:.0f} s)\n" + "\n".join(tail), flush=True)
        with tarfile.open(out / "session.tar.gz", "w:gz") as tar:
            tar.add(work, arcname="session")
    print("===== summary\n" + "\n".join(summary))
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
