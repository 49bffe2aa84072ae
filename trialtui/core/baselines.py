"""The baseline cache: the last eager and torch.compile timings, shown only until a run's own arrive.

Every trial's speedup uses baselines timed in the same job as the candidate; the cache exists so
the UI has a number while that job runs. Its key holds everything that changes a baseline: the
reference's hash, sizes, dtype, allow_tf32, CUDA graphs (from the parent) and the GPU, torch and
triton versions (from the job's env), per baseline kind.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from trialtui.core.state_dir import make_dirs

CACHE_NAME = "baselines.json"
ENV_KEYS = ("gpu", "torch", "triton")


def reference_hash(reference: Path) -> str:
    return hashlib.sha256(Path(reference).read_bytes()).hexdigest()


def entry_key(key: dict[str, Any], env: dict[str, Any], kind: str) -> str:
    return json.dumps({**key, **{k: env.get(k) for k in ENV_KEYS}, "kind": kind}, sort_keys=True)


class BaselineCache:
    def __init__(self, state_dir: Path):
        self.path = Path(state_dir) / CACHE_NAME

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def lookup(self, key: dict[str, Any]) -> dict[str, Any]:
        """The newest entry per kind whose parent-side key matches; labelled cached, with its env."""
        found: dict[str, Any] = {}
        for entry in self._load().values():
            if not isinstance(entry, dict) or entry.get("key") != key:
                continue
            kind = entry.get("kind")
            if kind not in found or entry.get("recorded", 0) > found[kind].get("recorded", 0):
                found[kind] = {**entry.get("stats", {}), "cached": True, "env": entry.get("env"), "recorded": entry.get("recorded")}
        return found

    def record(self, key: dict[str, Any], env: dict[str, Any], baselines: dict[str, Any]) -> None:
        """Store freshly measured baselines (never ones the user gave)."""
        import time

        data = self._load()
        for kind, stats in baselines.items():
            if stats.get("cached") or stats.get("given"):
                continue
            data[entry_key(key, env, kind)] = {
                "key": key, "kind": kind, "env": {k: env.get(k) for k in ENV_KEYS}, "recorded": time.time(),
                "stats": {k: v for k, v in stats.items() if k != "cached"},
            }
        make_dirs(self.path.parent)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, self.path)
