"""`trialtui serve` end to end in a real headless Chromium (Playwright): the page shows the tree, a
saved candidate appears as a new trial, and `b` writes the best trial's source back into the file.

The served app is the real one (textual-serve starting `trialtui open DIR`, the real engine on the
CPU). The page draws on a canvas, so the test reads xterm.js's own buffer: the one change to what
the browser loads is that the page's terminal object is also kept on `window`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_tui_scenarios import STORY, scenario, utc, version  # noqa: F401

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium)"),
]
TERMINAL = "this.terminal=new v.Terminal("  # textual-serve's textual.js, where the page makes its terminal


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else "serve exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"trialtui serve did not listen on {port} in {timeout} s")


def expose_terminal(route) -> None:
    body = route.fetch().text()
    assert TERMINAL in body, "textual-serve's textual.js changed: update TERMINAL in this test"
    route.fulfill(body=body.replace(TERMINAL, "this.terminal=window.__term=new v.Terminal("),
                  content_type="application/javascript")


def screen(page) -> str:
    return page.evaluate("""() => {
        const b = window.__term && window.__term.buffer.active;
        if (!b) return "";
        const out = [];
        for (let i = 0; i < b.length; i++) out.push(b.getLine(i).translateToString(true));
        return out.join("\\n");
    }""")


def wait_text(page, predicate, what: str, timeout: float = 120) -> str:
    end = time.monotonic() + timeout
    text = ""
    while time.monotonic() < end:
        text = screen(page)
        if predicate(text):
            return text
        page.wait_for_timeout(250)
    raise AssertionError(f"the page never showed {what}; it showed:\n{text}")


def test_browser_view_shows_the_tree_scores_a_save_and_branches_to_best(tmp_path, utc):
    problem, store, _ = scenario(tmp_path, len(STORY))
    store.close()
    root = problem.root
    port = free_port()
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, "-m", "trialtui", "serve", str(root), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        wait_port(port, proc)
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.route("**/textual.js", expose_terminal)
            page.goto(f"http://127.0.0.1:{port}/")
            page.click("body")  # textual-serve starts the app on the page, at the window's size
            wait_text(page, lambda t: "Trials" in t and "t8" in t and "2.10×" in t, "the tree with t8 at 2.10×")
            (root / "kernel.py").write_text(version(9, "a save from the browser test"))
            wait_text(page, lambda t: "t9" in t, "the saved candidate as t9")
            page.focus(".xterm-helper-textarea")  # keys go where xterm.js listens
            page.keyboard.press("b")
            wait_text(page, lambda t: "t8's source" in t, "the branch notice")
            assert (root / "kernel.py").read_text() == version(8, STORY[7][0])  # the best's source, back
            browser.close()
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=20)


def test_a_tab_that_drops_while_its_app_starts_leaves_no_process_and_frees_the_lock(tmp_path):
    """A browser that goes as soon as the app is started (as `chromium --headless --screenshot` does): its
    `trialtui open` ends, and with the server, and nothing holds the problem's lock."""
    from procs import cmdline, descendants, wait_for
    from trialtui.core.store import lock_holder

    problem, store, _ = scenario(tmp_path, 2)
    store.close()
    root = problem.root
    port = free_port()
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, "-m", "trialtui", "serve", str(root), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)

    def tabs() -> list[int]:
        return [pid for pid in descendants(proc.pid) if "trialtui open" in cmdline(pid)]

    try:
        wait_port(port, proc)
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/")
            page.click("body")
            tab = wait_for(tabs, "the tab's `trialtui open`")[0]
            browser.close()
        wait_for(lambda: not Path(f"/proc/{tab}").exists(), "the dropped tab's process to end", 120)
        assert proc.poll() is None  # the server serves on
        assert lock_holder(root) is None
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=20)
