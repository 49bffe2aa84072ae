"""The suite's own setup: README's `-n auto` starts more workers than cores (conftest says why)."""

from __future__ import annotations

import os

import conftest


def test_auto_gives_two_workers_more_than_cores():
    assert conftest.pytest_xdist_auto_num_workers(None) == (os.cpu_count() or 1) + 2


def test_heavy_tests_are_dealt_first_to_every_worker():
    items = [f"heavy{i}" for i in range(4)] + [f"light{i}" for i in range(8)]
    ordered = conftest.dealt(items, workers=4, heavy=4)
    size = len(items) // 4
    assert [ordered[k * size] for k in range(4)] == ["heavy0", "heavy1", "heavy2", "heavy3"]
