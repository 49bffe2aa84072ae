"""How to install one of trialtui's extras, as a command that works when pasted: trialtui is installed from a
checkout (it is not on PyPI), so the command names the checkout this process runs from where it has one."""

from __future__ import annotations

from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


def install_command(extra: str, *, here: bool = True) -> str:
    """`pip install -e '<checkout>[extra]'` for this machine; elsewhere (`here` False: an SSH host) the form to
    run in a checkout there."""
    if here and (CHECKOUT / "pyproject.toml").is_file() and (CHECKOUT / "trialtui").is_dir():
        return f"pip install -e '{CHECKOUT}[{extra}]'"
    return f"pip install -e '.[{extra}]' in a trialtui checkout"
