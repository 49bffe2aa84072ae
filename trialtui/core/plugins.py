"""The plug-in registry: where forms, languages, profilers and executors are found by name.

Built-ins call `register` when their package is imported; third parties declare entry points in the
same groups (`[project.entry-points."trialtui.forms"]` in their pyproject). Entry points are loaded
once, on the first `registry` call for a group; one that fails to load is recorded in `errors` and
skipped, so a broken plug-in never stops trialtui. A built-in name wins over a plug-in of the same
name (also recorded), so a third party cannot silently replace a built-in.
"""

from __future__ import annotations

from typing import Any

from importlib import metadata

GROUPS = ("trialtui.forms", "trialtui.languages", "trialtui.profilers", "trialtui.executors")

_builtin: dict[str, dict[str, object]] = {g: {} for g in GROUPS}
_external: dict[str, dict[str, object]] = {}  # group -> name -> object, filled once per group
_errors: dict[str, list[str]] = {g: [] for g in GROUPS}


def _check_group(group: str) -> None:
    if group not in GROUPS:
        raise ValueError(f"unknown plug-in group {group!r}; expected one of {', '.join(GROUPS)}")


def register(group: str, name: str, obj) -> None:
    """Register a built-in under `name`; registering the same name again replaces it."""
    _check_group(group)
    if not name or not isinstance(name, str):
        raise ValueError(f"a plug-in name must be a non-empty string, got {name!r}")
    _builtin[group][name] = obj


def _load_entry_points(group: str) -> dict[str, object]:
    found: dict[str, object] = {}
    try:
        eps = metadata.entry_points(group=group)
    except Exception as e:  # a corrupt dist-info elsewhere on sys.path
        _errors[group].append(f"reading entry points failed: {type(e).__name__}: {e}")
        return found
    for ep in eps:
        where = f"{ep.name} = {ep.value}"
        if ep.name in found:
            _errors[group].append(f"{where}: duplicate name {ep.name!r}, the first one is kept")
            continue
        try:
            found[ep.name] = ep.load()
        except Exception as e:  # any failure in third-party code is reported, never fatal
            _errors[group].append(f"{where}: failed to load: {type(e).__name__}: {e}")
    return found


def registry(group: str) -> dict[str, object]:
    """Built-ins, then entry-point plug-ins, of `group` by name (a fresh dict each call)."""
    _check_group(group)
    if group not in _external:
        _external[group] = _load_entry_points(group)
    merged = dict(_builtin[group])  # built-ins first: callers that try each in turn try them first
    for name, obj in _external[group].items():
        if name in merged:
            reject(group, name, "shadows a built-in of the same name; the built-in is used")
        else:
            merged[name] = obj
    return merged


def reject(group: str, name: str, why: str) -> None:
    """Record that a plug-in was found but cannot be used (e.g. it is not the type its group needs)."""
    _check_group(group)
    note = f"plug-in {name!r} {why}"
    if note not in _errors[group]:
        _errors[group].append(note)


def errors(group: str | None = None) -> list[str]:
    """What went wrong loading plug-ins (of one group, or all), for `trialtui doctor` and the log."""
    if group is not None:
        _check_group(group)
        return list(_errors[group])
    return [f"{g}: {msg}" for g in GROUPS for msg in _errors[g]]


def reload_entry_points() -> None:
    """Forget loaded entry points so the next `registry` call reads them again (tests, long sessions)."""
    _external.clear()
    for g in GROUPS:
        _errors[g].clear()


def of_type(group: str, kind: type) -> dict[str, Any]:
    """The group's plug-ins that are instances of `kind`, built-ins first; any other is reported and skipped."""
    found: dict[str, Any] = {}
    for name, obj in registry(group).items():
        if isinstance(obj, kind):
            found[name] = obj
        else:
            reject(group, name, f"is a {type(obj).__name__}, not a {kind.__name__}")
    return found
