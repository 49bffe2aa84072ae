"""Every KernelBench level-1 and level-2 file loads as it is (issue 13, item 8).

Each file becomes reference.py of a problem directory, unmodified. With its own sizes it loads and
its inputs are built on the meta device; with small sizes overridden, the child-side override
(`Reference.sizes`) agrees with the AST-only one in core for every constant, derived ones included,
and the model is built and run on the CPU. All in this one process: torch is imported once.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from trialtui.core.problem import literal_sizes, size_constants
from trialtui.core.problem_dir import load_problem

torch = pytest.importorskip("torch")

from trialtui.runner.loader import Reference  # noqa: E402 - after the torch check

FIXTURES = Path(__file__).parent / "fixtures" / "kernelbench"
FILES = sorted(FIXTURES.glob("level[12]/*.py"))
IDS = [f"{f.parent.name}/{f.stem}" for f in FILES]

# Small sizes the generic rule below cannot find: relations between sizes that these files leave
# implicit. Each one is what the file needs, not a way around a loader limitation.
SMALL = {
    "level1/100_HingeLoss": {"batch_size": 16, "input_shape": [16]},  # (B, *input_shape) * (B,) broadcasts only if equal
    "level1/80_conv_standard_2D_square_input_asymmetric_kernel___dilated____padded__":
        {"batch_size": 2, "out_channels": 16, "height": 16, "width": 32},  # dilated kernel spans 25 columns
    "level2/3_ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU":
        {"batch_size": 2, "in_channels": 4, "depth": 4, "height": 8},  # LayerNorm over W needs 2·width = out_channels
    "level2/34_ConvTranspose3d_LayerNorm_GELU_Scaling":
        {"batch_size": 2, "in_channels": 4, "D": 4, "H": 8},  # the same relation: 2·W = out_channels
}


def _shrink(name: str, value: int) -> int:
    if name == "batch_size":
        return 2
    return value if value <= 16 else 16 + value % 16


def small_case(file: Path, tree: ast.Module) -> dict[str, object]:
    """Every literal integer size above 16 scaled down (batch to 2), as a TOML config would give it."""
    key = f"{file.parent.name}/{file.stem}"
    if key in SMALL:
        return SMALL[key]
    case: dict[str, object] = {}
    for name, value in literal_sizes(tree).items():
        if isinstance(value, bool) or not isinstance(value, (int, tuple)):
            continue
        if isinstance(value, tuple):
            if not all(isinstance(v, int) for v in value):
                continue
            small: object = [_shrink(name, v) for v in value]
            changed = small != list(value)
        else:
            small = _shrink(name, value)
            changed = small != value
        if changed:
            case[name] = small
    return case


def _toml(case: dict[str, object]) -> str:
    return "\n".join(f"{k} = {json.dumps(v)}" for k, v in case.items())


def _as_toml_value(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


def problem_dir(tmp_path: Path, file: Path) -> tuple[Path, ast.Module, dict[str, object]]:
    """The file as reference.py, unmodified; trialtui.toml: small test sizes, the file's own bench sizes."""
    root = tmp_path / "p"
    root.mkdir()
    shutil.copyfile(file, root / "reference.py")
    tree = ast.parse(file.read_bytes())
    own = {k: _as_toml_value(v) for k, v in literal_sizes(tree).items()}
    case = small_case(file, tree)
    (root / "trialtui.toml").write_text(f"seeds = 1\n[test_sizes]\n{_toml(case)}\n[bench_sizes]\n{_toml(own)}\n")
    return root, tree, case


def _tensors(value) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def test_every_level_1_and_2_file_is_here():
    assert len([f for f in FILES if f.parent.name == "level1"]) == 100
    assert len([f for f in FILES if f.parent.name == "level2"]) == 100


@pytest.mark.parametrize("file", FILES, ids=IDS)
def test_loads_unmodified_at_its_own_sizes(tmp_path, file):
    root, tree, case = problem_dir(tmp_path, file)
    problem = load_problem(root)
    assert problem.form == "kernelbench"
    assert problem.test_cases == [case]
    own = problem.bench_cases[0]
    assert own and set(own) <= set(problem.defaults)
    reference = Reference(problem.job_spec(), "meta")
    plain = reference.make_inputs({}, 0)
    overridden = reference.make_inputs(own, 0)  # its own sizes given back: nothing may change
    assert [t.shape for t in _tensors(overridden)] == [t.shape for t in _tensors(plain)]
    assert reference.init_inputs(own) == reference.init_inputs({})


@pytest.mark.parametrize("file", FILES, ids=IDS)
def test_small_sizes_reach_inputs_derived_constants_and_the_model(tmp_path, file):
    root, tree, case = problem_dir(tmp_path, file)
    problem = load_problem(root)
    assert case, f"{file.name}: no size to override"
    reference = Reference(problem.job_spec(), "cpu")
    namespace = vars(reference.module)
    expected = size_constants(tree, case)  # the AST twin: derived constants recomputed
    with reference.sizes(case):
        assert {k: namespace[k] for k in expected} == expected
    assert {k: namespace[k] for k in problem.defaults} == problem.defaults  # restored afterwards
    inputs = _tensors(reference.make_inputs(case, 0))
    full = _tensors(Reference(problem.job_spec(), "meta").make_inputs({}, 0))
    assert sum(t.numel() for t in inputs) < sum(t.numel() for t in full)
    if "batch_size" in case and full[0].dim() and full[0].shape[0] == problem.defaults["batch_size"]:
        assert inputs[0].shape[0] == case["batch_size"]
    model = reference.model(case, 0)
    with torch.no_grad():
        model(*reference.make_inputs(case, 0))


def test_a_derived_constant_follows_its_size(tmp_path):
    """76_Gemm_Add_ReLU: `bias_shape = (out_features,)`; overriding out_features alone must resize the bias."""
    file = FIXTURES / "level2" / "76_Gemm_Add_ReLU.py"
    root = tmp_path / "p"
    root.mkdir()
    shutil.copyfile(file, root / "reference.py")
    (root / "trialtui.toml").write_text("[test_sizes]\nbatch_size = 3\nin_features = 5\nout_features = 7\n")
    problem = load_problem(root)
    reference = Reference(problem.job_spec(), "cpu")
    case = problem.test_cases[0]
    assert size_constants(ast.parse(file.read_bytes()), case)["bias_shape"] == (7,)
    model = reference.model(case, 0)
    assert model.bias.shape == (7,)
    with torch.no_grad():
        assert model(*reference.make_inputs(case, 0)).shape == (3, 7)


def test_the_constant_block_reruns_what_depends_on_the_case_and_restores_it(tmp_path):
    from trialtui.runner import constants

    source = tmp_path / "reference.py"
    source.write_text("height = width = 128\nn = 4\nn += height\nshape = (height, width)\nshape = (1, 2)\n"
                      "calls = []\ntag = calls.append(width) or 'tag'\n")
    namespace: dict = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    before = {k: namespace[k] for k in ("height", "width", "n", "shape", "tag")}
    block = constants.constant_block(source)
    saved = constants.apply(namespace, block, {"height": 8, "extra": 1})
    assert (namespace["height"], namespace["width"]) == (8, 128)  # one name of a chain, the other kept
    assert namespace["n"] == 12  # `n += height` from n = 4 again, not from the old 132
    assert namespace["shape"] == (1, 2)  # the later plain assignment still wins
    assert namespace["calls"] == [128]  # a statement that depends on nothing changed did not run again
    twin = size_constants(ast.parse(source.read_text()), {"height": 8})
    assert {k: namespace[k] for k in ("height", "width", "n", "shape")} == {k: twin[k] for k in ("height", "width", "n", "shape")}
    constants.restore(namespace, saved)
    assert {k: namespace[k] for k in before} == before and "extra" not in namespace
