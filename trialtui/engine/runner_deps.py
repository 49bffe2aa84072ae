"""Whether this machine can run jobs: a laptop install (`pip install -e .`) has the TUI, the store and
the remote executors, but not torch and triton (the `runner` extra), which every job process imports."""

from __future__ import annotations

import importlib.util
from functools import cache

from trialtui.core.install import install_command

RUNNER_MODULES = ("torch", "triton", "numpy")


@cache
def missing_runner() -> str | None:
    """Why a job cannot run on this machine, or None; looked up once, without importing anything."""
    missing = [name for name in RUNNER_MODULES if _absent(name)]
    if not missing:
        return None
    return (f"jobs cannot run on this machine: {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not "
            f"installed here. Install the runner ({install_command('runner')}), or run jobs where it is: "
            "--executor ssh://user@host or ray://ADDRESS (docs/SCALING.md)")


def _absent(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True
