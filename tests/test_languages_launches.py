"""A CUDA C++ candidate's own launches are counted in its process: each call into the extension that
load_inline/load built, so such a candidate is not flagged as running PyTorch only."""

from __future__ import annotations

from types import SimpleNamespace

import torch.utils.cpp_extension as ext

from trialtui.runner.languages import install_launch_counter


def test_calls_into_a_built_extension_count_as_launches(monkeypatch, tmp_path):
    built = SimpleNamespace(add_cuda=lambda x, y: x + y, version=3)
    monkeypatch.setattr(ext, "load_inline", lambda *a, **k: built)
    monkeypatch.setattr(ext, "load", lambda *a, **k: None)  # is_python_module=False: nothing to wrap
    counter = SimpleNamespace(count=0)
    candidate = tmp_path / "cand.py"
    candidate.write_text("from torch.utils.cpp_extension import load_inline\nm = load_inline('m', '', cuda_sources='')\n")
    install_launch_counter(str(candidate), counter)
    module = ext.load_inline("m", "", cuda_sources="")
    assert module.add_cuda(2, 3) == 5 and module.add_cuda(1, 1) == 2
    assert module.version == 3 and counter.count == 2  # attributes that are not functions are not launches
    assert ext.load("n", sources=["k.cu"]) is None


def test_a_triton_candidate_leaves_the_extension_builders_alone(monkeypatch, tmp_path):
    original = ext.load_inline
    candidate = tmp_path / "cand.py"
    candidate.write_text("import triton\n")
    install_launch_counter(str(candidate), SimpleNamespace(count=0))
    assert ext.load_inline is original


def test_the_detail_pane_shows_a_cuda_kernel_without_triton_launch_options():
    """A CUDA kernel's block size is its host code's (known only where the launch spells it out) and
    it has no stages: no 'None warps' or '? stages' beside its registers."""
    from rich.style import Style
    from rich.table import Table

    from trialtui.tui.widgets.detail import TrialDetail

    class Plain(TrialDetail):
        def color(self, var, **extra):
            return Style()

    kernels = [{"name": "add_kernel", "arch": "sm_90", "registers": 12, "spills": 0, "shared_bytes": 0, "num_warps": None},
               {"name": "rms", "arch": "sm_90", "registers": 15, "spills": 0, "shared_bytes": 132, "num_warps": 8},
               {"name": "add", "arch": "sm_90", "registers": 20, "spills": 0, "shared_bytes": 0, "num_warps": 4,
                "num_stages": 3}]
    grid = Table()
    grid.add_column()
    grid.add_column()
    Plain.__new__(Plain)._kernel_rows(grid, SimpleNamespace(validation={"kernels": kernels}))
    rows = [str(cell) for cell in grid.columns[1]._cells]
    assert rows == ["add_kernel sm_90: 12 regs · 0 spills · 0 B shared",
                    "rms sm_90: 15 regs · 0 spills · 132 B shared · 8 warps",
                    "add sm_90: 20 regs · 0 spills · 0 B shared · 4 warps · 3 stages"]
