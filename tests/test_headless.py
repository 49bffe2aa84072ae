"""The headless printer writes to the sys.stdout of the moment it is made, as CliRunner and pytest-xdist need."""

from __future__ import annotations

import io
import sys

from trialtui.engine import events as ev
from trialtui.engine.headless import HeadlessPrinter


def test_default_output_is_the_current_stdout_not_the_one_at_import(monkeypatch):
    now = io.StringIO()
    monkeypatch.setattr(sys, "stdout", now)
    HeadlessPrinter()(ev.TrialCreated("t1", "kernel.py", None, "tiles"))
    assert "t1 kernel.py created" in now.getvalue()
