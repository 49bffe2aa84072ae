"""Whether a JSON value has the type a dataclass field declares: what the job contract's types (the
bench spec, the bench result) check a value read from JSON against, so both refuse the same way."""

from __future__ import annotations

import types
import typing
from typing import Any


def fits(value: Any, hint: Any) -> bool:
    """Whether a JSON value has the type a field declares (an int is a float; a bool is no number)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is list:
        return isinstance(value, list) and all(fits(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(fits(k, args[0]) and fits(v, args[1]) for k, v in value.items())
    return isinstance(value, hint)


def number(value: Any) -> float | None:
    """A JSON number as a float, else None (a bool is no number): what the other side sent, taken as data."""
    return float(value) if fits(value, float) else None
