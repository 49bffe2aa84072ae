"""The job-result schema: what a child may hand back across the process boundary.

Results are JSON with a version; anything else the child writes is treated as a crash.
"""

from __future__ import annotations

from typing import Any

RESULT_VERSION = 1
# `interrupted` is the engine's own: the connection to a remote executor was lost (engine/executors/remote.py)
RESULT_STATES = ("ok", "correct", "incorrect", "error", "timeout", "cancelled", "invalid", "interrupted")
CPU_TIMING_LABEL = "CPU, interpreted — not a GPU timing"


class ResultError(ValueError):
    """A child's result that does not follow the schema."""


def check_result(result: Any) -> dict[str, Any]:
    """Validate the envelope every job result shares; returns it unchanged."""
    if not isinstance(result, dict):
        raise ResultError(f"expected a JSON object, got {type(result).__name__}")
    if result.get("version") != RESULT_VERSION:
        raise ResultError(f"unsupported result version {result.get('version')!r} (expected {RESULT_VERSION})")
    if result.get("state") not in RESULT_STATES:
        raise ResultError(f"unknown state {result.get('state')!r}")
    for key in ("correctness", "timing", "baselines", "speedup", "env"):
        if key in result and result[key] is not None and not isinstance(result[key], dict):
            raise ResultError(f"{key} must be an object or null")
    if "flags" in result and not isinstance(result["flags"], list):
        raise ResultError("flags must be a list")
    if result.get("state") != "correct" and result.get("speedup"):
        raise ResultError("a speedup was reported for a result that is not correct")
    return result


def flag(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}
