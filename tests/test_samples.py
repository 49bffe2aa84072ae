"""The sample problems under sample_kernels/: layout, stories, and each demo version's correctness.

The structural tests read files only. Whether each demo version gives the outcome its
demo/story.toml expects is checked by test_demo.py, which plays every story through trialtui's own
loop and checker on the CPU (at the problem's test sizes, over all its seeds); playing them here
again would double the suite's slowest work. What that play cannot see is checked here: for a
GPU MODE problem, its own check_implementation must agree with the tolerances in trialtui.toml on
every version. The slow test runs one child process per such problem with TRITON_INTERPRET=1 set
before triton is imported (the flag is read at import), checks every demo version on every case,
and compares the outcome with the story's. The child is this file run as a script:
`TRITON_INTERPRET=1 python tests/test_samples.py sample_kernels/softmax`.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_kernels"
PROBLEMS = ("bias_gelu_residual", "softmax", "rmsnorm", "matmul_epilogue")
OUTCOMES = ("correct", "incorrect", "invalid")
BEATS = (
    "first", "improved", "fails_correctness", "fixed", "regressed",
    "branch_back", "plateau", "different_approach", "decisive_win",
)
ALLOWED_IMPORTS = {"torch", "triton", "math"}  # candidates are self-contained
SEEDS = 1  # test_demo.py plays every version over all of the problem's seeds; here the check's agreement is what counts
# the problems whose own check_implementation the interpreter child compares with trialtui.toml
GPUMODE = tuple(name for name in PROBLEMS if (SAMPLES / name / "task.yml").exists())
CHILD_TIMEOUT_S = 300


def load_story(name: str) -> dict:
    return tomllib.loads((SAMPLES / name / "demo" / "story.toml").read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------
# structure (no torch, no triton)


@pytest.mark.parametrize("name", PROBLEMS)
def test_sample_is_a_problem(name):
    from trialtui.core.problem_dir import load_problem

    problem = load_problem(SAMPLES / name)
    story = load_story(name)
    assert problem.config.baselines == ["eager", "compile"]
    assert problem.test_cases and problem.bench_cases
    assert [p.name for p in problem.candidates()] == [story["candidate"]]
    assert problem.entry_point in (SAMPLES / name / story["candidate"]).read_text()


@pytest.mark.parametrize("name", PROBLEMS)
def test_sample_story(name):
    root = SAMPLES / name
    story = load_story(name)
    versions = story["version"]
    assert 5 <= len(versions) <= 9
    files = [v["file"] for v in versions]
    assert len(set(files)) == len(files)
    for i, v in enumerate(versions):
        assert v["expected"] in OUTCOMES, v
        assert v["beat"] in BEATS, v
        assert v.get("parent", "") in ([""] if i == 0 else files[:i]), v
        text = (root / "demo" / v["file"]).read_text(encoding="utf-8")
        assert text.startswith("# strategy: ") and len(text.splitlines()[0]) > len("# strategy: ") + 10
        assert v["expected"] == ("incorrect" if v["beat"] == "fails_correctness" else "correct"), v
    # the candidate file starts as version 1
    assert (root / story["candidate"]).read_text() == (root / "demo" / files[0]).read_text()
    beats = [v["beat"] for v in versions]
    assert beats[0] == "first" and beats[-1] == "decisive_win"
    for before, after in (("fails_correctness", "fixed"), ("regressed", "branch_back"),
                          ("plateau", "different_approach")):
        if before in beats or after == "branch_back":  # a plateau is told only where the numbers show one
            assert beats.index(before) < beats.index(after), (before, after)
    # branching back means building on something other than the regressed version
    back = versions[beats.index("branch_back")]
    assert back["parent"] != versions[beats.index("regressed")]["file"]


@pytest.mark.parametrize("name", PROBLEMS)
def test_sample_imports_are_self_contained(name):
    for path in sorted((SAMPLES / name).glob("**/*.py")):
        if path.name == "reference.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                roots = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            assert roots <= ALLOWED_IMPORTS, f"{path.relative_to(ROOT)} imports {roots}"


# ---------------------------------------------------------------------------------------------
# correctness under the CPU interpreter (one child process per problem)


@pytest.fixture(scope="module")
def children(request):
    """One child per selected problem, all started at once (they are CPU-bound; two cores halve the wait)."""
    names = [
        item.callspec.params["name"] for item in request.session.items
        if getattr(item, "originalname", "") == "test_sample_versions_match_story"
    ]
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONWARNINGS": "ignore"}
    procs = {
        name: subprocess.Popen(
            [sys.executable, __file__, str(SAMPLES / name)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
        )
        for name in dict.fromkeys(names)
    }
    yield procs
    for proc in procs.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_gpumode_sample_is_checked_against_its_own_check_implementation():
    assert "softmax" in GPUMODE


@pytest.mark.slow
@pytest.mark.parametrize("name", GPUMODE)
def test_sample_versions_match_story(name, children):
    proc = children[name]
    try:
        stdout, stderr = proc.communicate(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        pytest.fail(f"{name}: no result after {CHILD_TIMEOUT_S}s\n{stderr[-4000:]}")
    assert proc.returncode == 0, stderr[-4000:]
    results = json.loads(stdout.strip().splitlines()[-1])
    story = load_story(name)
    wrong = [
        f"{v['file']}: expected {v['expected']}, got {results[v['file']]['outcome']}: "
        f"{results[v['file']]['detail']}"
        for v in story["version"]
        if results[v["file"]]["outcome"] != v["expected"]
    ]
    assert not wrong, "\n".join(wrong)


# ---------------------------------------------------------------------------------------------
# child side: runs with TRITON_INTERPRET=1 already in the environment


def _import_path(module_name: str, path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compare(out, expected, atol: float, rtol: float) -> tuple[bool, str, float]:
    """(passed, message, margin): margin is max |out - ref| / (atol + rtol |ref|); pass means <= 1."""
    import torch

    if not isinstance(out, torch.Tensor):
        return False, f"returned {type(out).__name__}, not a tensor", float("inf")
    if out.shape != expected.shape or out.dtype != expected.dtype:
        return False, f"got {out.dtype}{tuple(out.shape)}, want {expected.dtype}{tuple(expected.shape)}", float("inf")
    o, e = out.double(), expected.double()
    if not torch.isfinite(o).all() and torch.isfinite(e).all():
        return False, f"{int((~torch.isfinite(o)).sum())} non-finite values", float("inf")
    margin = float(((o - e).abs() / (atol + rtol * e.abs())).max())
    ok = bool(torch.allclose(out.float(), expected.float(), atol=atol, rtol=rtol))
    return ok, "" if ok else f"max abs err {float((o - e).abs().max()):.3g} (margin {margin:.3g})", margin


def _check_problem(root: Path) -> dict:
    """{version file: {outcome, detail, margin, seconds}} for every version in the story."""
    sys.path.insert(0, str(ROOT))
    import torch
    from trialtui.core.problem_dir import load_problem

    problem = load_problem(root)
    story = tomllib.loads((root / "demo" / "story.toml").read_text(encoding="utf-8"))
    dtype = getattr(torch, problem.config.dtype)
    if dtype == torch.bfloat16:  # as trialtui's runner does: the interpreter misreads bf16 memory
        dtype = torch.float32
    atol, rtol = problem.config.tolerance
    ref = _import_path(f"ref_{root.name}", problem.reference)
    defaults = {k: getattr(ref, k) for k in problem.defaults}
    results = {}
    for v in story["version"]:
        start = time.perf_counter()
        outcome, detail, worst = "correct", "", 0.0
        try:
            cand = _import_path(f"cand_{root.name}_{Path(v['file']).stem}", root / "demo" / v["file"])
            for case in problem.test_cases:
                for s in range(SEEDS):
                    with torch.no_grad():
                        if problem.form == "kernelbench":
                            for key, value in {**defaults, **case}.items():
                                setattr(ref, key, value)
                            torch.manual_seed(s)
                            init = ref.get_init_inputs()
                            model = ref.Model(*init).to(dtype)
                            inputs = [t.to(dtype) if t.is_floating_point() else t for t in ref.get_inputs()]
                            expected = model(*inputs)
                            new = cand.ModelNew(*init).to(dtype)
                            new.load_state_dict(model.state_dict())
                            out = new(*[t.clone() for t in inputs])
                            ok, msg, margin = _compare(out, expected, atol, rtol)
                        else:
                            data = ref.generate_input(**{**case, "seed": case.get("seed", 0) + s})
                            out = cand.custom_kernel(data.clone())
                            ok, msg, margin = _compare(out, ref.ref_kernel(data), atol, rtol)
                            checked, check_msg = ref.check_implementation(data, out)
                            if ok != checked:
                                raise AssertionError(f"check_implementation says {checked} ({check_msg}), "
                                                     f"the toml tolerances say {ok}")
                    worst = max(worst, margin)
                    if not ok and outcome == "correct":
                        outcome, detail = "incorrect", f"{case} seed {s}: {msg}"
        except Exception as exc:  # noqa: BLE001 - any failure to import or run is the "invalid" outcome
            outcome, detail = "invalid", f"{type(exc).__name__}: {exc}"
        results[v["file"]] = {
            "outcome": outcome, "detail": detail, "margin": worst,
            "seconds": round(time.perf_counter() - start, 2),
        }
    return results


if __name__ == "__main__":
    if os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("run with TRITON_INTERPRET=1 (it must be set before triton is imported)")
    print(json.dumps(_check_problem(Path(sys.argv[1]).resolve())))
