"""Candidate languages by name: the built-ins (Triton, CUDA C++) and plug-ins of `trialtui.languages`.

A candidate's language is decided from its syntax tree: the highest-priority language that claims
it, else Triton (which also covers plain PyTorch candidates, as before languages were plug-ins).
"""

from __future__ import annotations

import ast
from pathlib import Path

from trialtui.core import plugins
from trialtui.core.languages import cuda, triton  # noqa: F401 - importing them registers them
from trialtui.core.languages.base import GROUP, Language
from trialtui.core.model import MAX_SOURCE_BYTES

DEFAULT = "triton"


def all_languages() -> dict[str, Language]:
    """Every usable language, built-ins first; a plug-in that is not a Language is reported and skipped."""
    return plugins.of_type(GROUP, Language)


def get_language(name: str) -> Language:
    languages = all_languages()
    if name not in languages:
        raise ValueError(f"unknown candidate language {name!r}; expected one of {', '.join(languages)}")
    return languages[name]


def language_of(tree: ast.Module) -> Language:
    """The language that claims this syntax tree; a plug-in whose detect raises is reported and skipped."""
    languages = all_languages()
    for name, language in sorted(languages.items(), key=lambda item: -item[1].priority):
        try:
            if language.detect(tree):
                return language
        except Exception as exc:  # noqa: BLE001 - third-party code never stops validation
            plugins.reject(GROUP, name, f"failed to detect: {type(exc).__name__}: {exc}")
    return languages[DEFAULT]


def language_of_source(source: bytes | str) -> Language:
    """As `language_of`, from source text; source too large, unparsable or nested too deeply is the
    default language's (the static checks reject it, saying why)."""
    if len(source) > MAX_SOURCE_BYTES:
        return get_language(DEFAULT)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return get_language(DEFAULT)
    return language_of(tree)


def language_of_file(path: Path | str) -> Language:
    """As `language_of`, from a file; an unreadable one is the default language's."""
    try:
        return language_of_source(Path(path).read_bytes())
    except OSError:
        return get_language(DEFAULT)
