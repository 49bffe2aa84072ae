"""A form plug-in: only its identity matters to the registry test."""

FORM = {"name": "scalarfn"}
