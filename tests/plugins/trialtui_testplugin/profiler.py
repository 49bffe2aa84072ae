"""A profiler plug-in: only its identity matters to the registry test."""

PROFILER = {"name": "testprof", "needs_counters": False}
