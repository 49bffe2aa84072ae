"""A `trialtui open` behind textual-serve's pipes (what `trialtui serve` starts per browser tab) ends when
its server goes or a signal comes, even while it starts, and frees the problem's lock: it never stays
behind a closed tab (issue 36). The browser itself is in test_serve_e2e.py."""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios
import threading

import pytest

from conftest import KB_GOOD, write_problem
from procs import wait_for
from trialtui.core.store import lock_holder

GANGLION = b"__GANGLION__\n"  # the web driver's first line: the app is up
F_SETPIPE_SZ = 1031
pytestmark = pytest.mark.slow


@pytest.fixture
def tabs():
    started: list[subprocess.Popen] = []
    yield started
    for tab in started:  # a failed test leaves nothing behind either
        if tab.poll() is None:
            tab.kill()
            tab.wait()


def open_tab(root, tabs: list) -> subprocess.Popen:
    env = {**os.environ, "TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver", "COLUMNS": "100", "ROWS": "30",
           "CUDA_VISIBLE_DEVICES": ""}
    tab = subprocess.Popen([sys.executable, "-m", "trialtui", "open", str(root)], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    tabs.append(tab)
    assert tab.stdout.read(len(GANGLION)) == GANGLION, tab.stderr.read().decode()
    return tab


def ended(tab: subprocess.Popen, root) -> None:
    wait_for(lambda: tab.poll() is not None, "the tab's process to end", 120)
    assert lock_holder(root) is None


@pytest.fixture
def root(tmp_path):
    return write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})


def test_a_tab_whose_server_closed_its_input_ends_and_frees_the_lock(root, tabs):
    tab = open_tab(root, tabs)
    threading.Thread(target=tab.stdout.read, daemon=True).start()  # the server reads on; only its input ends
    wait_for(lambda: lock_holder(root), "the tab to hold the lock")
    tab.stdin.close()
    ended(tab, root)


def test_a_tab_whose_output_nobody_reads_still_ends_on_sigterm(root, tabs):
    tab = open_tab(root, tabs)
    capacity = fcntl.fcntl(tab.stdout.fileno(), F_SETPIPE_SZ, 4096)  # a page: less than a frame

    def unread() -> int:
        return struct.unpack("i", fcntl.ioctl(tab.stdout.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]

    wait_for(lambda: unread() > capacity // 2, "the tab to fill its output pipe (a frame does not fit)")
    tab.send_signal(signal.SIGTERM)
    ended(tab, root)
