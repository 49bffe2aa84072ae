"""The checker's imports of a problem's own modules come from the engine's known-good bytes, never from a folder.

A candidate runs as the user and can write the problem directory (and every folder beside it), so a
directory on the checker's `sys.path` is a place to plant `sympy/__init__.py` or `utils.py` and have the
checker run it, early or late (torch.compile imports lazily after the verdict). The checker therefore
puts no problem folder on its path: the support files (GPU MODE's task.py and utils.py, the modules a
KernelBench reference imports from beside it) are served by a finder holding their text, as the engine
read them before the job. The candidate's own process keeps the problem directory on its path.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import linecache
import sys
from pathlib import Path
from typing import Any


class KnownGoodModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Top-level modules by name, each from (file name for tracebacks, source text)."""

    def __init__(self, sources: dict[str, tuple[str, str]]):
        self.sources = dict(sources)

    def find_spec(self, name: str, path: Any = None, target: Any = None):
        if name not in self.sources:
            return None
        return importlib.machinery.ModuleSpec(name, self, origin=self.sources[name][0])

    def create_module(self, spec):  # noqa: D102 - the default module object
        return None

    def exec_module(self, module) -> None:
        filename, text = self.sources[module.__name__]
        module.__file__ = filename
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)  # Triton reads @jit source
        exec(compile(text, filename, "exec"), module.__dict__)


def support_sources(spec: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Module name → (file, text) for every support file: the spec's known-good text, else the file read now."""
    given = spec.get("support_sources") or {}
    sources = {}
    for path in spec.get("support_files", []):
        if not str(path).endswith(".py"):
            continue
        text = given.get(str(path))
        if text is None:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # the import that needs it says what is missing
        sources[Path(path).stem] = (str(path), text)
    return sources


def trusted_imports(spec: dict[str, Any]) -> None:
    """In the checker: no problem folder on sys.path, and the support files importable from their text."""
    folders = {str(Path(spec["reference"]).resolve().parent), *(str(Path(p).resolve().parent) for p in spec.get("support_files", []))}
    folders |= {str(Path(spec["root"]).resolve())} if spec.get("root") else set()
    sys.path[:] = [p for p in sys.path if p and _resolved(p) not in folders]
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, KnownGoodModules)]
    sys.meta_path.insert(0, KnownGoodModules(support_sources(spec)))


def _resolved(path: str) -> str:
    try:
        return str(Path(path).resolve())
    except OSError:
        return path
