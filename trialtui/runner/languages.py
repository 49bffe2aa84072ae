"""The candidate's language in the candidate's own process: its launch counter, installed before
the candidate is imported (see `Language.launch_counter`)."""

from __future__ import annotations

import importlib
from typing import Any

from trialtui.core.languages import language_of_file


def install_launch_counter(candidate: str, counter: Any) -> None:
    """Let the candidate's language count launches the Triton JIT does not see (a CUDA extension's calls)."""
    hook = language_of_file(candidate).launch_counter
    if hook:
        module, _, function = hook.partition(":")
        getattr(importlib.import_module(module), function)(counter)
