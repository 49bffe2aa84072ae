"""A failure of the candidate's code as a result says it: one line for the exception, and the line of the
candidate's file it came from. The checker, the candidate's process and the compile jobs all report
the candidate's exceptions; they read them here, importing nothing of each other's."""

from __future__ import annotations

import traceback
from pathlib import Path


def describe(exc: BaseException) -> str:
    """One line for an exception of the candidate's (or the reference's): its type and first line, an
    out-of-memory error named as one."""
    if isinstance(exc, SystemExit):
        return f"the candidate called sys.exit({exc.code!r})"
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    if "out of memory" in first.lower():
        return f"out of memory: {first}"
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def describe_capped(exc: BaseException) -> str:
    """One line for an exception the candidate raised in a compile job's import or trace: its type and first
    non-blank line, at most 500 characters (no out-of-memory wording: `describe` differs there)."""
    if isinstance(exc, SystemExit):
        return f"the candidate called sys.exit({exc.code!r})"
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    first = lines[0].strip() if lines else ""
    return f"{type(exc).__name__}: {first}"[:500] if first else type(exc).__name__


def candidate_line(exc: BaseException, candidate: str) -> int | None:
    """The innermost line of the candidate file in the exception's traceback."""
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename) == Path(candidate):
        return exc.lineno
    frame = _innermost(exc, (candidate,))
    return frame[1] if frame else None


def where(exc: BaseException, files: tuple[str, ...]) -> str:
    """`kernel.py:24 in forward`: the innermost frame of the candidate's own files in the traceback (never
    trialtui's, torch's or Triton's), so a one-line message says where its code failed; "" when none is there."""
    frame = _innermost(exc, files)
    return f"{Path(frame[0].f_code.co_filename).name}:{frame[1]} in {frame[0].f_code.co_name}" if frame else ""


def _innermost(exc: BaseException | None, files: tuple[str, ...]):
    """(frame, line) of the innermost traceback entry in one of `files`, or None; down the `raise ... from`
    chain too, where the failing line is (Triton's interpreter re-raises a kernel's error from the launch)."""
    paths = {Path(f) for f in files}
    found, seen = None, set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        for frame, lineno in traceback.walk_tb(exc.__traceback__):
            if Path(frame.f_code.co_filename) in paths:
                found = frame, lineno
        exc = exc.__cause__
    return found
