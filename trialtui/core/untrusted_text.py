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
# a terminal's control sequences whole: CSI (colours, cursor moves, erases) and OSC (titles, links)
SEQUENCE = re.compile("\x1b\\[[0-?]*[ -/]*[@-~]|\x1b\\][^\x07\x1b]*(?:\x07|\x1b\\\\)")
# what is left of C0 controls but tab and newline, DEL, C1 controls, lone surrogates
UNSHOWABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` without a terminal's control sequences (a compiler's colours read as plain text), each other control
    character (but tab and newline) and each lone surrogate replaced by U+FFFD; a carriage return ends a line (a
    progress bar's redraws read as lines, never one drawn over another)."""
    text = SEQUENCE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return UNSHOWABLE.sub(REPLACEMENT, text)


def untrusted(value: Any) -> Any:
    """A JSON value (a job's result) with every string in it, keys as well, `printable`."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {untrusted(k) if isinstance(k, str) else k: untrusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [untrusted(v) for v in value]
    return value
