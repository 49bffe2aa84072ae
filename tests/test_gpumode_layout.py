"""GPU MODE problems as upstream writes them (issue 13, item 2).

`tests/fixtures/gpumode/` holds four pmpp_v2 problems of gpu-mode/reference-kernels, unmodified:
the reference imports `task` (beside it) and `utils` (`../utils.py`, named in task.yml's `files:`),
and draws its inputs from `torch.Generator(device="cuda")`. They must load, list only the
submission as a candidate, and score on a machine without CUDA.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from trialtui.core.problem_dir import load_problem

from conftest import write_problem

FIXTURES = Path(__file__).parent / "fixtures" / "gpumode" / "problems" / "pmpp_v2"
PROBLEMS = ["vectoradd_py", "matmul_py", "grayscale_py", "histogram_py", "prefixsum_py"]


def upstream_copy(tmp_path: Path, name: str, config: str = "seeds = 1\n") -> Path:
    """The problem and its parent's utils.py in a temporary tree (trialtui writes .trialtui/ there)."""
    parent = tmp_path / "pmpp_v2"
    parent.mkdir(exist_ok=True)
    shutil.copyfile(FIXTURES / "utils.py", parent / "utils.py")
    root = parent / name
    shutil.copytree(FIXTURES / name, root)
    (root / "trialtui.toml").write_text(config)
    return root


@pytest.mark.parametrize("name", PROBLEMS)
def test_upstream_problems_load_as_they_are(name):
    problem = load_problem(FIXTURES / name)
    assert problem.form == "gpumode" and problem.entry_point == "custom_kernel"
    assert [c.name for c in problem.candidates()] == ["submission.py"]
    assert not problem.is_candidate(FIXTURES / name / "task.py")
    assert FIXTURES / "utils.py" in problem.support_files
    assert problem.test_cases and all("seed" in case for case in problem.test_cases)
    assert problem.job_spec()["support_files"] == [str(p) for p in problem.support_files]


def test_files_named_in_task_yml_or_imported_are_support_not_candidates(tmp_path):
    root = write_problem(tmp_path / "gm", reference="""
        import torch
        from helpers import make
        from task import input_t

        def generate_input(n, seed):
            return make(n, seed)

        def ref_kernel(data):
            return data * 2

        def check_implementation(data, output):
            return bool(torch.equal(output, data * 2)), "mismatch"
        """, files={"task.py": "input_t = object\n", "helpers.py": "", "utils.py": "", "eval.py": "",
                    "template.py": "", "kernel.py": "", "submission.py": ""})
    (root / "task.yml").write_text(textwrap.dedent("""
        files:
          - {name: submission.py, source: "@SUBMISSION@"}
          - {name: task.py, source: task.py}
          - {name: utils.py, source: utils.py}
          - {name: reference.py, source: reference.py}
          - {name: eval.py, source: eval.py}
        templates:
          Python: template.py
        tests:
          - {n: 4, seed: 1}
        """))
    problem = load_problem(root)
    assert [c.name for c in problem.candidates()] == ["kernel.py", "submission.py"]
    assert sorted(p.name for p in problem.support_files) == ["eval.py", "task.py", "utils.py"]


def test_a_malformed_files_list_is_a_clear_message(tmp_path):
    from trialtui.core.problem import ProblemError

    root = upstream_copy(tmp_path, "vectoradd_py")
    task = root / "task.yml"
    task.write_text(task.read_text().replace('{"name": "task.py", "source": "task.py"}', '"task.py"'))
    with pytest.raises(ProblemError, match="files: must be a list of"):
        load_problem(root)


# --- inputs: generate_input is called plainly; on a CPU-only machine "cuda" means the CPU ---------

GENERATORS = {
    "cpu generator": """
        g = torch.Generator(device="cpu").manual_seed(seed)
        x = torch.randn(n, n, generator=g)
        return x.to("cuda" if torch.cuda.is_available() else "cpu")
        """,
    "cuda generator": """
        g = torch.Generator(device="cuda")
        g.manual_seed(seed)
        return torch.empty(n, n, device="cuda").uniform_(0, 1, generator=g)
        """,
    "default generator": """
        return torch.randn(n, n)
        """,
    "explicit cuda tensors": """
        g = torch.Generator(device=torch.device("cuda", 0)).manual_seed(seed)
        x = torch.randn(n, n, device=torch.device("cuda"), generator=g)
        return (x.cuda() + torch.zeros(n, n).to("cuda") + torch.ones(n, n).to(device="cuda:0")).contiguous()
        """,
}
GM_TEMPLATE = """
import torch

def generate_input(n, seed):
{body}

def ref_kernel(data):
    return data + torch.ones(data.shape, device="cuda")

def check_implementation(data, output):
    ok = torch.equal(output, ref_kernel(data))
    return ok, "" if ok else "mismatch"
"""


def _reference(tmp_path, body, device):
    torch = pytest.importorskip("torch")
    from trialtui.runner.loader import Reference

    if torch.cuda.is_available():
        pytest.skip("the CPU-only case; benches/gpu_kernelbench.py runs these references on the GPU")
    source = GM_TEMPLATE.format(body=textwrap.indent(textwrap.dedent(body).strip(), "    "))
    root = write_problem(tmp_path / "gm", reference=source)
    (root / "task.yml").write_text("tests:\n  - {n: 5, seed: 3}\n")
    return torch, Reference(load_problem(root).job_spec(), device)


@pytest.mark.parametrize("style", list(GENERATORS))
def test_generate_input_styles_run_without_cuda(tmp_path, style):
    torch, reference = _reference(tmp_path, GENERATORS[style], "cpu")
    case = {"n": 5, "seed": 3}
    first, again, other = (reference.make_inputs(case, s) for s in (0, 0, 1))
    assert first.device.type == "cpu" and first.shape == (5, 5)
    assert torch.equal(first, again), "the same seed must give the same inputs"
    assert not torch.equal(first, other), "another seed must give other inputs"
    output = reference.module.ref_kernel(first)  # the reference's own "cuda" allocations map too
    assert reference.check(first, output) == (True, "")
    assert torch.Generator(device="cpu").device.type == "cpu"  # the mapping ends with the call


@pytest.mark.parametrize("style", [s for s in GENERATORS if s != "cpu generator"])  # .to("cpu") has no meta
def test_generate_input_on_the_meta_device_gives_shapes(tmp_path, style):
    _, reference = _reference(tmp_path, GENERATORS[style], "meta")
    data = reference.make_inputs({"n": 5, "seed": 3}, 0)
    assert data.device.type == "meta" and data.shape == (5, 5)


@pytest.mark.parametrize("name", PROBLEMS)
def test_upstream_references_check_their_own_output_on_the_cpu(tmp_path, name, monkeypatch):
    """In-process stand-in for one child per problem: `task` and `utils` are fresh for each."""
    pytest.importorskip("torch")
    from trialtui.runner.loader import Reference
    from trialtui.runner.tensors import clone

    for module in ("task", "utils"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    problem = load_problem(upstream_copy(tmp_path, name))
    reference = Reference(problem.job_spec(), "cpu")
    data = reference.make_inputs(problem.test_cases[0], 0)
    output = reference.module.ref_kernel(clone(data))
    assert reference.check(data, output) == (True, "")


# --- the whole pipeline, one child per candidate --------------------------------------------------

SMALL = {  # small test sizes in the copy's trialtui.toml: the upstream ones take long in the interpreter
    "vectoradd_py": "[[test_sizes]]\nsize = 67\nseed = 4242\n",
    "matmul_py": "[[test_sizes]]\nm = 32\nn = 48\nk = 64\nseed = 53124\n",
    "grayscale_py": "[[test_sizes]]\nsize = 64\nseed = 1001\n",
    "histogram_py": "[[test_sizes]]\nsize = 5120\nseed = 9991\ncontention = 90\n",
    "prefixsum_py": "[[test_sizes]]\nsize = 1025\nseed = 1001\n",
}


INPUT_DTYPE = {"vectoradd_py": "float16", "matmul_py": "float16", "grayscale_py": "float32", "histogram_py": "float32",
               "prefixsum_py": "float32"}


@pytest.mark.slow
@pytest.mark.parametrize("name, candidate, state", [
    ("vectoradd_py", "solutions/correct/submission_triton.py", "correct"),
    ("matmul_py", "submission.py", "correct"),
    ("grayscale_py", "submission.py", "correct"),
    ("histogram_py", "submission.py", "correct"),
    ("grayscale_py", "solutions/wrong/empty.py", "incorrect"),
    ("matmul_py", "solutions/wrong/low-precision.py", "incorrect"),
    # its reference returns float64 from float32 data, its submission float32: GPU MODE's check takes it
    ("prefixsum_py", "submission.py", "correct"),
    ("prefixsum_py", "solutions/wrong/empty.py", "incorrect"),
])
def test_upstream_candidates_score_on_the_cpu(tmp_path, name, candidate, state):
    from trialtui.engine.bench import bench_file

    root = upstream_copy(tmp_path, name, "seeds = 2\n" + SMALL[name])
    path = root / candidate
    if path.parent != root:  # upstream keeps examples in solutions/: score them from the problem dir
        path = shutil.copyfile(path, root / f"example_{path.parent.name}.py")
    result = bench_file(load_problem(root), path, device="cpu", use_cache=False).to_json()
    assert result["state"] == state, result["message"]
    assert result["dtype"] == INPUT_DTYPE[name]  # as generate_input makes them, not trialtui.toml's float32
    if state == "incorrect":
        assert "mismatch" in result["message"] or "values" in result["message"]


def test_a_support_file_the_reference_imports_but_task_yml_points_nowhere_is_named(tmp_path):
    """GPU MODE's `../utils.py` left behind when a task folder is copied alone: the problem says which file."""
    from trialtui.core.problem import ProblemError

    src = Path(__file__).parent / "fixtures" / "gpumode" / "problems" / "pmpp_v2" / "vectoradd_py"
    shutil.copytree(src, tmp_path / "vectoradd", ignore=shutil.ignore_patterns("solutions"))
    with pytest.raises(ProblemError, match=r"lists \.\./utils\.py \(the reference imports it as utils\)"):
        load_problem(tmp_path / "vectoradd")
    shutil.copyfile(src.parent / "utils.py", tmp_path / "utils.py")
    assert (tmp_path / "utils.py").resolve() in load_problem(tmp_path / "vectoradd").support_files
