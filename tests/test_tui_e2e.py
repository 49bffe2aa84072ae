"""End to end: `trialtui DIR` in a real terminal (tmux), a candidate saved, its result on screen."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from conftest import KB_GOOD, write_problem

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)"),
]


class Tmux:
    """One private tmux server (its own socket), so the test touches no other session."""

    def __init__(self) -> None:
        self.socket = f"trialtui-e2e-{uuid.uuid4().hex[:8]}"

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=check)

    def pane(self) -> str:
        return self("capture-pane", "-p", "-t", "tui").stdout

    def wait_for(self, text: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pane = self.pane()
            if text in pane:
                return pane
            time.sleep(0.25)
        raise AssertionError(f"{text!r} never appeared; the pane:\n{self.pane()}")

    def alive(self) -> bool:
        return self("has-session", "-t", "tui", check=False).returncode == 0

    def close(self) -> None:
        self("kill-server", check=False)


def test_trialtui_in_tmux_shows_a_saved_candidate_scored(tmp_path):
    root = write_problem(tmp_path / "relu", files={})
    tmux = Tmux()
    env = {"TERM": "xterm-256color", "CUDA_VISIBLE_DEVICES": "", "TEXTUAL_ANIMATIONS": "none",
           # the checkout, not this worker's sys.path (other tests put hundreds of problem folders on it)
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    # COLUMNS/LINES from the test's own environment would override the pane's real size
    command = " ".join(["env", "-u", "COLUMNS", "-u", "LINES", *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                        shlex.quote(sys.executable), "-m", "trialtui", shlex.quote(str(root))])
    try:
        tmux("new-session", "-d", "-s", "tui", "-x", "120", "-y", "36", command)
        pane = tmux.wait_for("No trials yet", timeout=30)
        assert "relu" in pane and "CPU · Triton interpreter" in pane

        (root / "kernel.py").write_text(textwrap.dedent(KB_GOOD))
        pane = tmux.wait_for("correct (CPU)", timeout=120)
        assert "t1 ▸" in pane and "fused bias relu" in pane  # a narrow tree gives up the file name before the strategy
        assert "correct (CPU interpreter) — GPU timing needs a GPU" in pane
        row = next(line for line in pane.splitlines() if "t1 ▸" in line).split("│")[1]
        assert row.rstrip().endswith("correct (CPU)") and "×" not in row  # a CPU run is never a speed

        tmux("send-keys", "-t", "tui", "q")
        deadline = time.monotonic() + 15
        while tmux.alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not tmux.alive(), "q did not quit"
    finally:
        tmux.close()
    assert not (root / ".trialtui" / "lock").read_text().strip()  # the store was closed, the lock let go
