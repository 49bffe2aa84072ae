"""The baseline cache: eager and torch.compile timings, reused until any part of their key changes.

Key: reference hash, sizes, dtype, GPU name, torch version, baseline kind. The parent does not know
the GPU or torch version without touching CUDA, so it hands the child every entry that matches the
rest of the key and the child keeps the ones that match its own environment.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

CACHE_NAME = "baselines.json"


def reference_hash(reference: Path) -> str:
    return hashlib.sha256(Path(reference).read_bytes()).hexdigest()


def entry_key(ref_hash: str, sizes: Any, dtype: str, gpu: str | None, torch_version: str | None, kind: str) -> str:
    return json.dumps([ref_hash, sizes, dtype, gpu, torch_version, kind], sort_keys=True)


class BaselineCache:
    def __init__(self, state_dir: Path):
        self.path = Path(state_dir) / CACHE_NAME

    def _load(self) -> dict[str, Any]:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}

    def candidates(self, ref_hash: str, sizes: Any, dtype: str) -> list[dict[str, Any]]:
        """Entries matching everything but the environment, for the child to filter."""
        return [
            e for e in self._load().values()
            if e["ref_hash"] == ref_hash and e["sizes"] == sizes and e["dtype"] == dtype
        ]

    def record(self, ref_hash: str, sizes: Any, dtype: str, env: dict[str, Any], baselines: dict[str, Any]) -> None:
        """Store freshly measured baselines (never ones that came from the cache or from the user)."""
        data = self._load()
        for kind, stats in baselines.items():
            if stats.get("cached") or stats.get("given"):
                continue
            key = entry_key(ref_hash, sizes, dtype, env.get("gpu"), env.get("torch"), kind)
            data[key] = {
                "ref_hash": ref_hash, "sizes": sizes, "dtype": dtype, "gpu": env.get("gpu"),
                "torch": env.get("torch"), "kind": kind,
                "stats": {k: v for k, v in stats.items() if k != "cached"},
            }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, self.path)


def matching(entries: list[dict[str, Any]], gpu: str | None, torch_version: str, kinds: list[str]) -> dict[str, Any]:
    """The child's side: cached stats for its own GPU and torch version, per baseline kind."""
    return {
        e["kind"]: e["stats"] for e in entries
        if e["gpu"] == gpu and e["torch"] == torch_version and e["kind"] in kinds
    }
