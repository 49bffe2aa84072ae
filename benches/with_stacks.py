"""Run a command and, while it runs, dump the Python stacks of it and every process under it: hangs say where.

python benches/with_stacks.py LIMIT_S FIRST_S EVERY_S -- COMMAND ...
The command's output passes through as it comes. From FIRST_S seconds on, every EVERY_S seconds, each
descendant process's stack (py-spy dump, where py-spy is installed) is appended to $OUT/stacks.txt
(or ./stacks.txt). At LIMIT_S the command's process group is killed after a last dump; exit 124.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def dump(root: int, out: Path, started: float) -> None:
    spy = shutil.which("py-spy")
    with open(out, "a") as fh:
        fh.write(f"\n######## {time.monotonic() - started:.0f} s\n")
        for pid in descendants(root):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:300]
            except OSError:
                continue
            fh.write(f"\n=== pid {pid}: {cmd}\n")
            fh.flush()
            if spy and "python" in cmd:
                done = subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=30)
                fh.write(done.stdout + done.stderr)
            fh.flush()


def main(argv: list[str]) -> int:
    limit, first, every = (float(x) for x in argv[:3])
    command = argv[argv.index("--") + 1:]
    out = Path(os.environ.get("OUT", ".")) / "stacks.txt"
    started = time.monotonic()
    proc = subprocess.Popen(command, start_new_session=True)
    next_dump = started + first
    while proc.poll() is None:
        now = time.monotonic()
        if now - started > limit:
            dump(proc.pid, out, started)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            print(f"with_stacks: killed after {limit:.0f} s; stacks in {out}", flush=True)
            return 124
        if now >= next_dump:
            dump(proc.pid, out, started)
            next_dump = now + every
        time.sleep(0.5)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
