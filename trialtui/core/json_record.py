"""A JSON object read into named, typed fields and given back key for key (issue 35): the base of the
results that cross from a child process to the engine and on to the store and the front ends
(core/bench_result.py, core/profile_result.py).

A subclass is a frozen dataclass whose fields are the keys it names, with `extra` (the keys it does not
name, kept whole: a plug-in's) and `_keys` (the keys in the order the JSON had them, nulls included).
It is also a read-only Mapping of its JSON, for the readers that own keys no type names (benches/, a
profiler plug-in's own body)."""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from trialtui.core.json_types import fits

R = TypeVar("R", bound="JsonRecord")


class JsonRecord(Mapping[str, Any]):
    extra: dict[str, Any]
    _keys: tuple[str, ...]

    @classmethod
    def _read(cls: type[R], data: dict[str, Any], error: type[Exception]) -> R:
        """Each named key checked against its field's type (`error` says which is wrong); the rest kept."""
        types = _field_types(cls)
        for name, value in data.items():
            if name in types and not fits(value, types[name]):
                raise error(f"{name} must be {types[name]}, not {repr(value)[:80]}")
        named = {k: v for k, v in data.items() if k in types}
        return cls(**named, extra={k: v for k, v in data.items() if k not in types}, _keys=tuple(data))

    def to_json(self) -> dict[str, Any]:
        """The JSON this record is: the keys it was read with in their order (a null stays a null), then
        every other key set since."""
        return {key: self._value(key) for key in self}

    def __getitem__(self, key: str) -> Any:
        types = _field_types(type(self))
        if key in self._keys or (key in types and getattr(self, key) is not None) or key in self.extra:
            return self._value(key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        """The JSON's keys in its order, without building it (a lookup or `if record` costs no copy)."""
        seen = set(self._keys)
        yield from self._keys
        for name in _field_types(type(self)):
            if name not in seen and getattr(self, name) is not None:
                seen.add(name)
                yield name
        yield from (k for k in self.extra if k not in seen)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def without(self: R, *names: str) -> R:
        """This record without these keys, as if it never had them."""
        types = _field_types(type(self))
        return dataclasses.replace(self, **{n: None for n in names if n in types},
                                   extra={k: v for k, v in self.extra.items() if k not in names},
                                   _keys=tuple(k for k in self._keys if k not in names))

    def _value(self, key: str) -> Any:
        return getattr(self, key) if key in _field_types(type(self)) else self.extra.get(key)


@functools.cache
def _field_types(cls: type) -> dict[str, Any]:
    """A record's named keys and their types: its dataclass fields but `extra` and `_keys`."""
    return {name: hint for name, hint in typing.get_type_hints(cls).items() if name not in ("extra", "_keys")}
