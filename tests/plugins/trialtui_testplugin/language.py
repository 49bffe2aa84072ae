"""A language plug-in: only its identity matters to the registry test."""

LANGUAGE = {"name": "testlang", "suffixes": (".tl",)}
