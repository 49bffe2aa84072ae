"""The runner side of the CUDA C++ language without nvcc: a candidate's own launches are counted in its
process (each call into the extension load_inline/load built, so it is not flagged as running PyTorch
only); the compile job's sources, recorded at import or read from the syntax tree; the detail pane."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

import torch
import torch.utils.cpp_extension as ext

from trialtui.core.validation_report import ValidationReport
from trialtui.runner.languages import install_launch_counter


KERNEL = "__global__ void add_kernel(const float* x, float* y) { y[0] = x[0]; }\ntorch::Tensor add_cuda(...);"
HOST_ONLY = "torch::Tensor mm(torch::Tensor a, torch::Tensor b) { return at::matmul(a, b); }"


def test_calls_into_an_extension_with_a_kernel_count_as_launches(monkeypatch, tmp_path):
    built = SimpleNamespace(add_cuda=lambda x, y: x + y, version=3)

    def load_inline(name, cpp_sources, cuda_sources=None, functions=None):
        return built

    def load(name, sources, is_python_module=True):
        return built if is_python_module else None

    monkeypatch.setattr(ext, "load_inline", load_inline)
    monkeypatch.setattr(ext, "load", load)
    counter = SimpleNamespace(count=0, native=0)
    candidate = tmp_path / "cand.py"
    candidate.write_text("from torch.utils.cpp_extension import load_inline\nm = load_inline('m', '', cuda_sources='')\n")
    install_launch_counter(str(candidate), counter)
    module = ext.load_inline("m", "", cuda_sources=[KERNEL])
    assert module.add_cuda(2, 3) == 5 and module.add_cuda(1, 1) == 2
    assert module.version == 3 and counter.count == counter.native == 2  # attributes that are not functions are not launches
    (tmp_path / "k.cu").write_text(KERNEL)
    assert ext.load("n", [str(tmp_path / "k.cu")]).add_cuda(1, 2) == 3 and counter.count == 3
    assert ext.load("n", [str(tmp_path / "k.cu")], is_python_module=False) is None  # ops only: nothing to wrap
    host_only = ext.load_inline("h", "", cuda_sources=HOST_ONLY)  # ATen from host code: no kernel of its own
    assert host_only is built and host_only.add_cuda(1, 1) == 2 and counter.count == 3


@pytest.mark.parametrize("through", ["torch", "extension"])
def test_a_call_into_compiled_code_of_its_own_is_weighed_by_kernel_records(monkeypatch, tmp_path, through):
    """The op recorder sees torch's functions called from Python; inside a CUDA C++ extension a `torch::matmul`
    or a cuBLAS call does the work unseen, with a token kernel of its own beside it (a library decoy). A call that
    goes into its own compiled code is marked for CUPTI's kernel records, which name every kernel."""
    from trialtui.runner import library_split
    from trialtui.runner.candidate import NATIVE_UNDER_RECORDER, Session

    hidden = SimpleNamespace(mm=lambda a, b: (a.numpy() @ b.numpy()))  # work the recorder cannot see

    def load_inline(name, cpp_sources, cuda_sources=None, functions=None):
        return hidden

    monkeypatch.setattr(ext, "load_inline", load_inline)
    session = Session(channel=None)
    candidate = tmp_path / "cand.py"
    candidate.write_text("from torch.utils.cpp_extension import load_inline\nm = load_inline('m', '', cuda_sources='')\n")
    install_launch_counter(str(candidate), session.counter)
    module = ext.load_inline("m", "", cuda_sources=[KERNEL])
    a = torch.randn(4, 4)
    session.calls = [lambda: module.mm(a, a) if through == "extension" else torch.mm(a, a)]
    ops = session._library_ops()
    assert (NATIVE_UNDER_RECORDER in ops) is (through == "extension") and ("mm" in ops) is (through == "torch")
    session.library_ops, session.eager_calls = ops, session.calls
    used = []
    monkeypatch.setattr(library_split, "kernel_split", lambda calls, own: used.append("records") or {"own_share": 0.1})
    monkeypatch.setattr(library_split, "library_split", lambda calls: used.append("events") or {"own_share": 0.1})
    monkeypatch.setattr("trialtui.runner.timing.host_wall_us", lambda fn: 1.0)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 0)
    monkeypatch.setattr(session, "facts", lambda scan=False: {})
    session.device = "cpu"
    session.op_kernel_time({}, None)
    assert used == (["records"] if through == "extension" else ["events"])


def test_a_triton_candidate_leaves_the_extension_builders_alone(monkeypatch, tmp_path):
    original = ext.load_inline
    candidate = tmp_path / "cand.py"
    candidate.write_text("import triton\n")
    install_launch_counter(str(candidate), SimpleNamespace(count=0, native=0))
    assert ext.load_inline is original


def test_the_detail_pane_shows_a_cuda_kernel_without_triton_launch_options():
    """A CUDA kernel's block size is its host code's (known only where the launch spells it out) and
    it has no stages: no 'None warps' or '? stages' beside its registers."""
    from rich.style import Style
    from rich.table import Table

    from trialtui.core.config import Config
    from trialtui.tui.widgets.metrics_grid import MetricsGrid

    kernels = [{"name": "add_kernel", "arch": "sm_90", "registers": 12, "spills": 0, "shared_bytes": 0, "num_warps": None},
               {"name": "rms", "arch": "sm_90", "registers": 15, "spills": 0, "shared_bytes": 132, "num_warps": 8},
               {"name": "add", "arch": "sm_90", "registers": 20, "spills": 0, "shared_bytes": 0, "num_warps": 4,
                "num_stages": 3}]
    grid = Table()
    grid.add_column()
    grid.add_column()
    MetricsGrid(lambda var, **extra: Style(), "eager", Config())._kernel_rows(grid, SimpleNamespace(validation=ValidationReport(ok=True, kernels=kernels)))
    rows = [str(cell) for cell in grid.columns[1]._cells]
    assert rows == ["add_kernel sm_90: 12 regs · 0 spills · 0 B shared",
                    "rms sm_90: 15 regs · 0 spills · 132 B shared · 8 warps",
                    "add sm_90: 20 regs · 0 spills · 0 B shared · 4 warps · 3 stages"]


def test_sources_of_calls_the_import_does_not_reach_are_read_from_the_syntax_tree(tmp_path, monkeypatch):
    """load_inline inside __init__ runs only when the model is built, which validation never does."""
    from trialtui.runner.cuda_compile_job import Recorder, gather, import_candidate

    candidate = tmp_path / "cand.py"
    candidate.write_text(
        "import torch\n"
        "from torch.utils.cpp_extension import load_inline\n"
        "SRC = '__global__ void k(float* x) { x[0] = 1; }'\n"
        "top = load_inline('top', '', cuda_sources=['__global__ void t(float* x) { x[0] = 2; }'])\n"
        "class ModelNew(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.ext = load_inline('inner', '', cuda_sources=SRC)\n"
        "        self.other = load_inline('other', '', cuda_sources=open('k.cu').read())\n"
        "import pathlib\n"
        "read = load_inline('read', '', cuda_sources=(pathlib.Path(__file__).parent / 'r.cu').read_text())\n")
    (tmp_path / "r.cu").write_text("__global__ void r(float* x) { x[0] = 3; }\n")
    for name in ("load_inline", "load"):  # the recorders replace them; restored after the test
        monkeypatch.setattr(ext, name, getattr(ext, name))
    monkeypatch.delitem(sys.modules, "trialtui_candidate", raising=False)
    recorder = Recorder(candidate, tmp_path)
    recorder.install()
    assert import_candidate(recorder)["state"] == "ok"
    sources, unreadable = gather(recorder)
    assert [(s.origin, s.line, s.call, s.file) for s in sources] == [
        ("cuda_sources of load_inline at line 4", 4, 4, None),  # recorded at import
        ("r.cu", 1, 11, str(tmp_path / "r.cu")),  # recorded at import, its text found in a .cu file
        ("cuda_sources of load_inline at line 8", 3, 8, None),  # read from the tree: SRC's line
    ]
    assert unreadable == ["load_inline at line 9"]
    with pytest.raises(RuntimeError, match="not built during validation"):
        sys.modules["trialtui_candidate"].top.t()  # nothing was built, so nothing can run
