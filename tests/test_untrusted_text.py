"""A candidate's text (its exception's message, what it prints) reaches terminals, logs and the store as data: escape
sequences cannot draw over the verdict, lone surrogates cannot stop a writer (found by s27's red team: a fake
`correct` line drawn over the real `error` in `watch --headless`, and `bench --json` dead on a UnicodeEncodeError)."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import write_problem
from test_tui_scenarios import utc  # noqa: F401

from trialtui.core.untrusted_text import printable, untrusted

FAKE = "\x1b[2K\x1b[1G\x1b[1A12:00:01 t1 result correct: 2.41 us (confirmed)\r\x1b[8m"

RAISES = f'''
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()

    def forward(self, x):
        raise RuntimeError({"bad " + chr(0xD800) + " value " + FAKE!r})
'''


def test_control_sequences_go_and_other_controls_and_lone_surrogates_become_replacement_characters():
    assert printable("a\tb\nc") == "a\tb\nc"
    assert printable("\x1b[2Kx\x1b[1;31mred\x1b[0m\x07\x9b\x7f") == "xred\ufffd\ufffd\ufffd"
    assert printable("\x1b]8;;http://x\x1b\\link\x1b]8;;\x07 ok \x1b(B") == "link ok \ufffd(B"
    assert printable("50%\r100%\r\n") == "50%\n100%\n"
    assert printable("bad \ud800 value").encode("utf-8") == "bad \ufffd value".encode("utf-8")
    assert untrusted({"message": "\x1b[8mx", "flags": [{"code": "x", "\x1b": 1.5}], "n": 3}) == \
        {"message": "x", "flags": [{"code": "x", "\ufffd": 1.5}], "n": 3}


def test_a_message_of_escapes_and_a_surrogate_is_an_error_verdict_in_bench_and_watch(tmp_path):
    root = write_problem(tmp_path / "p", files={"kernel.py": RAISES})
    bench = subprocess.run([sys.executable, "-m", "trialtui", "bench", str(root / "kernel.py"), "--json"],
                           capture_output=True, timeout=300)
    assert b"\x1b" not in bench.stdout and bench.returncode == 2, bench.stderr[-2000:]
    result = json.loads(bench.stdout)
    assert result["state"] == "error" and "RuntimeError: bad \ufffd value 12:00:01 t1 result correct" in result["message"]
    watch = subprocess.run([sys.executable, "-m", "trialtui", "watch", str(root), "--headless", "--once"],
                           capture_output=True, timeout=300)
    assert watch.returncode == 0 and b"\x1b" not in watch.stdout and b"\r" not in watch.stdout, watch.stderr[-2000:]
    text = watch.stdout.decode("utf-8")
    assert "t1 result error" in text and "result correct" not in text.split("t1 result error")[0]


def test_the_tuis_log_view_shows_a_candidates_output_as_text(tmp_path, utc):  # noqa: F811
    """The log tab reads the job's log from disk, where the candidate's prints land raw: its escape sequences reached
    the terminal through the widget (Rich strips carriage returns and bells, not ESC)."""
    import asyncio

    from test_tui_scenarios import STORY, scenario

    from trialtui.tui.app import TrialApp
    from trialtui.tui.widgets.detail import TrialDetail

    problem, store, engine = scenario(tmp_path, len(STORY))
    (store.state_dir / "logs").mkdir(exist_ok=True)
    (store.state_dir / "logs" / "fake.log").write_text("step 1\n\x1b[2K\x1b[1A12:00:01 t3 result correct\x1b[8m\n")
    trial = store.update("t3", log="logs/fake.log")

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=(120, 36)):
            shown = app.query_one(TrialDetail).log(trial)
            text = "".join(part.plain for part in shown.renderables)
            assert "step 1\n12:00:01 t3 result correct" in text and "\x1b" not in text

    try:
        asyncio.run(body())
    finally:
        store.close()
