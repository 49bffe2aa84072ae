"""Shared fixtures: tiny problem directories written per test, so each test owns its files."""

from __future__ import annotations

import os
import tempfile
import textwrap
from pathlib import Path

import pytest

from trialtui.core.analysis_result import AnalysisResult
from trialtui.core.bench_result import BenchResult
from trialtui.core.profile_result import ProfileResult
from trialtui.core.validation_report import ValidationReport

# GPU lane locks (engine/gpu_lock.py) of this test process (each xdist worker its own), never the user's
os.environ["TRIALTUI_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="trialtui-run-")

KB_REFERENCE = '''
import torch
import torch.nn as nn

batch_size = 8
dim = 32


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        return torch.relu(x + self.bias)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
'''

KB_GOOD = '''
# strategy: fused bias relu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu(x_ptr, b_ptr, o_ptr, n, dim, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs % dim, mask=m)
    tl.store(o_ptr + offs, tl.maximum(x + b, 0.0), mask=m)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        bias_relu[(triton.cdiv(n, 128),)](x, self.bias, out, n, x.shape[-1], BLOCK=128)
        return out
'''


@pytest.fixture
def records_unread(monkeypatch):
    """A fake GPU's finalize weighs library work on kernel records (engine/finalize.py): no profiler here reads any."""
    from trialtui.core.profile_result import ProfileResult

    monkeypatch.setattr("trialtui.engine.profile.profile_file",
                        lambda *args, **kw: ProfileResult.unavailable("a fake GPU's bench: no kernel records"))


def no_analysis(problem, **options) -> AnalysisResult:
    """An engine test's analysis of the reference, where the test is about something else: the real one is a
    child job of its own (3.6 CPU-s each, a tenth of the suite's CPU when every fake-job engine ran one)."""
    return AnalysisResult.failure("not analysed in this test")


def as_result(data: dict) -> BenchResult:
    """A test's result JSON as the typed result the store and the views take (version 1 unless it says)."""
    return BenchResult.from_json({"version": 1, **data})


def as_validation(data: dict | None) -> ValidationReport | None:
    """A test's validation report (a fake validator's) as the typed report the engine and the store take."""
    return ValidationReport.from_json(data) if data is not None else None


def as_profile(data: dict | None) -> ProfileResult | None:
    """A test's profile JSON (or a recording's) as the typed profile the store and the views take."""
    return ProfileResult.from_json(data) if data is not None else None


def write_problem(root: Path, reference: str = KB_REFERENCE, files: dict[str, str] | None = None,
                  config: str | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "reference.py").write_text(textwrap.dedent(reference))
    if config is not None:
        (root / "trialtui.toml").write_text(textwrap.dedent(config))
    for name, text in (files or {}).items():
        (root / name).write_text(textwrap.dedent(text))
    return root


@pytest.fixture
def kb_problem(tmp_path: Path) -> Path:
    return write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """The test body runs without PYTEST_CURRENT_TEST, which pytest sets to the test's name.

    A warm job's fork server is kept per environment (engine/forkservers.py): with the test's name in
    it, every test that ran a warm job started a server of its own and imported torch again in it
    (a base and a module's server, ~3 CPU-s), where a session's engines share theirs. pytest puts the
    variable back for the teardown, as it expects."""
    name = os.environ.pop("PYTEST_CURRENT_TEST", None)
    try:
        return (yield)
    finally:
        if name is not None:
            os.environ["PYTEST_CURRENT_TEST"] = name


@pytest.hookimpl(optionalhook=True)  # a run without xdist (`-p no:xdist`) has no such hook
def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (README's command): two workers more than cores. About a sixth of the suite's time is
    waiting (hang timeouts, child processes starting, sleeps): with a worker per core, 2 cores stood
    17 % idle (1,100 CPU-s busy, 224 idle, 11 min 03 s); two more kept them 98 % busy (10 min 07 s,
    2026-12-03, BENCHMARKS.md)."""
    return (os.cpu_count() or 1) + 2


HEAVY = ("test_hostile.py", "test_trust.py", "test_demo.py", "test_one_verdict.py")


def pytest_collection_modifyitems(config, items):
    """The longest tests first (the corpora, the demo stories, then the other slow ones), dealt out to
    the xdist workers: they do not leave one worker running while the others are idle at the end."""
    def weight(item) -> int:
        if item.path.name in HEAVY:
            return 0 if item.get_closest_marker("slow") else 1
        return 2 if item.get_closest_marker("slow") else 3

    items.sort(key=weight)
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    items[:] = dealt(items, workers, sum(weight(item) == 0 for item in items))


def dealt(items: list, workers: int, heavy: int) -> list:
    """The order in which xdist's worksteal gives each of `workers` the first `heavy` items in turn.

    worksteal hands worker k the k-th of `workers` contiguous slices of the list (sizes as its
    `check_schedule` makes them) and a worker that runs out steals from the end of another's slice:
    so each slice starts with its share of the heavy items, dealt round-robin, and the rest fill the slices in order."""
    if workers < 2:
        return list(items)
    hands = [items[k:heavy:workers] for k in range(workers)]
    rest = iter(items[heavy:])
    ordered, remaining = [], len(items)
    for k in range(workers):
        size = remaining // (workers - k)
        remaining -= size
        ordered += hands[k] + [next(rest) for _ in range(size - len(hands[k]))]
    return ordered + list(rest)


def play_story(engine, player, timeout_s: float = 120.0):
    """A demo player's run against a live engine, the engine stopped and closed after; returns what it played."""
    import asyncio

    async def main():
        task = asyncio.create_task(engine.run())
        try:
            return await asyncio.wait_for(player.play(engine), timeout_s)
        finally:
            engine.stop()
            await task

    try:
        return asyncio.run(main())
    finally:
        engine.close()
