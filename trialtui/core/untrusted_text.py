"""Text that came from a candidate's process (an exception's message, what it printed), made safe to show and keep.

A message can carry a terminal's escape sequences (erase the line, move the cursor: a fake `correct` line drawn
over the real verdict) or lone surrogates (which no UTF-8 log, store or pipe writes: the CLI died on one). Every
job's result passes through `untrusted` on its way into the engine (engine/jobs.run_child), and the headless
watch's lines through `printable` once more, so no layer above has to remember it.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
# C0 controls but tab and newline (ESC and a lone carriage return among them), DEL, C1 controls, lone surrogates
UNSHOWABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` with each control character (but tab and newline) and each lone surrogate replaced by U+FFFD; a
    carriage return ends a line (a progress bar's redraws read as lines, never one drawn over another)."""
    return UNSHOWABLE.sub(REPLACEMENT, text.replace("\r\n", "\n").replace("\r", "\n"))


def untrusted(value: Any) -> Any:
    """A JSON value (a job's result) with every string in it, keys as well, `printable`."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {untrusted(k) if isinstance(k, str) else k: untrusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [untrusted(v) for v in value]
    return value
