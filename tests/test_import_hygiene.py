"""trialtui.core and trialtui.engine must stay fast and headless: no textual, no torch, no triton."""

import subprocess
import sys

import pytest

FORBIDDEN = ("textual", "torch", "triton")


@pytest.mark.parametrize("package", ["trialtui.core", "trialtui.engine"])
def test_package_imports_without_ui_or_torch(package):
    code = (
        "import importlib, pkgutil, sys\n"
        f"pkg = importlib.import_module({package!r})\n"
        "for m in pkgutil.iter_modules(pkg.__path__):\n"
        "    importlib.import_module(pkg.__name__ + '.' + m.name)\n"
        f"print(','.join(sorted(n for n in {FORBIDDEN!r} if n in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"{package} pulled in {out.stdout.strip()}"
