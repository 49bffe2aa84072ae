"""Held-out cases (issue 38): sizes, layouts and seeds a kernel was never checked on, at finalize and on demand.

The derivation and the card's line are pure (core/heldout.py, core/generalization.py). The CPU runs go
through the real checker under Triton's interpreter at small sizes, on a sample problem, a KernelBench
file and a GPU MODE problem as upstream writes them: an honest kernel passes every case; one that
hard-codes the size it was checked at, drops an unmasked tail or indexes rows as if packed is named
with the case it fails. Every test problem's budget is generous, so a busy machine never cuts a run short.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
from pathlib import Path

import pytest

from trialtui.core import revealed
from trialtui.core.config import ConfigError, parse_config
from trialtui.core.generalization import CaseOutcome, Generalization, Outcome
from trialtui.core.heldout import HeldOutCase, Layout, below_power_of_two, is_prime, plan, prime_above
from trialtui.core.problem_dir import load_problem

from conftest import as_result, write_problem

HERE = Path(__file__).parent
SAMPLE = HERE.parent / "sample_kernels" / "bias_gelu_residual"
KERNELBENCH = HERE / "fixtures" / "kernelbench" / "level1" / "23_Softmax.py"
GPUMODE = HERE / "fixtures" / "gpumode" / "problems" / "pmpp_v2"
# A loaded 2-core machine: never a claim about speed (the cases here take seconds); and not so long that a
# stuck check holds a worker for a quarter of an hour (a job's limit is bench_timeout_s plus this budget)
ROOMY = "\n[generalize]\nbudget_s = 120\n"


def counter():
    seeds = itertools.count(100)
    return lambda: next(seeds)


# -- derivation (pure) -----------------------------------------------------------------------------------

def test_held_out_values_miss_every_block_size():
    assert prime_above(4096) == 4099 and prime_above(1500) == 1511 and prime_above(1) == 2
    assert below_power_of_two(8192) == 4095 and below_power_of_two(1500) == 1023 and below_power_of_two(2) is None
    for n in (7, 64, 256, 1000, 8192, 16384):
        assert is_prime(prime_above(n)) and all(prime_above(n) % block for block in (16, 32, 64, 128))


def test_cases_change_one_size_at_a_time_then_the_layout_then_all_at_once(tmp_path):
    root = write_problem(tmp_path / "kb", config="[test_sizes]\nbatch_size = 4\ndim = 256\n"
                         "[bench_sizes]\nbatch_size = 4096\ndim = 8192\n")
    cases = plan(load_problem(root), on_gpu=False, draw=counter())
    assert [(c.changed, c.layout) for c in cases] == [
        ({}, Layout.CONTIGUOUS), ({"batch_size": 5}, Layout.CONTIGUOUS), ({"dim": 257}, Layout.CONTIGUOUS),
        ({}, Layout.PADDED), ({"batch_size": 1}, Layout.CONTIGUOUS), ({"dim": 127}, Layout.CONTIGUOUS),
        ({}, Layout.OFFSET), ({"batch_size": 1, "dim": 127}, Layout.CONTIGUOUS)]
    assert [c.seed for c in cases] == list(range(100, 108))  # one fresh draw each, when planned
    assert cases[2].sizes == {"batch_size": 4, "dim": 257} and cases[2].label == "dim=257"
    assert cases[3].label == "non-contiguous inputs at the checked sizes"
    on_gpu = plan(load_problem(root), on_gpu=True, draw=counter())
    assert on_gpu[2].changed == {"dim": 8209} and on_gpu[0].sizes == {"batch_size": 4096, "dim": 8192}
    assert HeldOutCase.from_dict(json.loads(json.dumps(cases[3].to_dict()))) == cases[3]


def test_a_value_any_case_already_has_is_not_held_out_and_fixed_sizes_never_change(tmp_path):
    root = write_problem(tmp_path / "kb", config="[[test_sizes]]\nbatch_size = 4\ndim = 256\n"
                         "[[test_sizes]]\nbatch_size = 5\ndim = 256\n[generalize]\nfixed = [\"dim\"]\n")
    changed = [c.changed for c in plan(load_problem(root), on_gpu=False, draw=counter())]
    assert {"batch_size": 5} not in changed and not any("dim" in c for c in changed)
    (root / "trialtui.toml").write_text("[generalize]\nbudget_s = 0\n")
    assert plan(load_problem(root), on_gpu=False, draw=counter()) == []


def test_a_gpu_mode_case_keeps_its_seed_argument_and_varies_the_sizes():
    problem = load_problem(GPUMODE / "vectoradd_py")
    cases = plan(problem, on_gpu=False, draw=counter())
    assert cases[0].sizes == {"size": 127, "seed": 4242}
    assert [c.changed for c in cases if c.changed] == [{"size": 131}, {"size": 63}]  # 128 and 129 are test sizes


def test_generalize_settings_are_checked():
    assert parse_config({"generalize": {"budget_s": 12, "fixed": ["K"]}}).generalize.fixed == ["K"]
    with pytest.raises(ConfigError, match="budget_s"):
        parse_config({"generalize": {"budget_s": -1}})
    with pytest.raises(ConfigError, match="unknown key"):
        parse_config({"generalize": {"sizes": 3}})


# -- the line --------------------------------------------------------------------------------------------

def _case(changed: dict, layout: Layout = Layout.CONTIGUOUS) -> HeldOutCase:
    return HeldOutCase({"dim": 4096, **changed}, changed, layout, 7, "why")


def test_the_line_names_the_first_failure_and_what_was_not_run_or_skipped():
    found = Generalization([
        CaseOutcome(_case({}), Outcome.PASSED),
        CaseOutcome(_case({"dim": 4099}), Outcome.FAILED, "1 of 4099 values differ; first at (4096,)\nmore"),
        CaseOutcome(_case({"dim": 2047}), Outcome.FAILED, "another"),
        CaseOutcome(_case({}, Layout.PADDED), Outcome.SKIPPED, "the reference does not accept it"),
        CaseOutcome(_case({}, Layout.OFFSET), Outcome.NOT_RUN, "the 30 s budget ran out"),
    ])
    assert found.fails and found.line() == (
        "generalizes: 1 of 3 held-out cases; fails at dim=4099 (1 of 4099 values differ; first at (4096,)) "
        "(1 not run: the 30 s budget ran out; 1 the reference does not accept, skipped)")
    clean = Generalization([CaseOutcome(_case({}), Outcome.PASSED)], revealed=True)
    assert not clean.fails
    assert clean.line() == "generalizes: 1 of 1 cases checked on demand before, not held out"
    assert Generalization(off=True).line().startswith("generalizes: not checked")


def test_a_job_without_an_outcome_per_case_is_an_error_never_a_pass():
    found = Generalization.of_result([_case({})], as_result({"state": "error", "message": "loading the reference: boom"}))
    assert found.error and not found.fails and "boom" in found.line()


# -- the report card -------------------------------------------------------------------------------------

def test_a_kernel_failing_a_held_out_case_has_the_line_on_top_and_no_headline_win(kb_problem):
    from trialtui.core.report import build_report
    from trialtui.core.store import Store

    from test_cli_trials import GPU_RESULT

    with Store.open(kb_problem) as store:
        store.record("kernel.py", (kb_problem / "kernel.py").read_bytes())
        trial = store.get("t1")
    failing = Generalization([CaseOutcome(_case({}), Outcome.PASSED),
                              CaseOutcome(_case({"dim": 4099}), Outcome.FAILED, "values differ")])
    text, data = build_report(load_problem(kb_problem), trial, as_result(GPU_RESULT), failing)
    assert text.splitlines()[2] == "**generalizes: 1 of 2 held-out cases; fails at dim=4099 (values differ)**"
    assert "faster than eager at the sizes it was checked at only" in text and "**2.38×" not in text
    assert data["generalizes"] == failing.line() and data["generalization"]["fails"] is True
    assert data["generalization"]["cases"][1]["label"] == "dim=4099"
    passing = Generalization([CaseOutcome(_case({}), Outcome.PASSED)])
    text, data = build_report(load_problem(kb_problem), trial, as_result(GPU_RESULT), passing)
    assert "- generalizes: 1 of 1 held-out cases" in text and "**2.38× faster than eager**" in text


# -- on the CPU, through the checker ---------------------------------------------------------------------

def _check(root: Path, name: str):
    from trialtui.engine.generalize import check_file

    return check_file(load_problem(root), root / name, device="cpu")


def _failed_at(found: Generalization) -> str:
    assert not found.error, found.line()
    assert found.first_failure is not None, found.line()
    return found.first_failure.case.label


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """The bias + GELU + residual sample at sizes its block sizes divide, so tuned kernels pass them."""
    root = tmp_path / "bias_gelu_residual"
    root.mkdir()
    shutil.copy(SAMPLE / "reference.py", root / "reference.py")
    source = (SAMPLE / "kernel.py").read_text()
    (root / "kernel.py").write_text(source)
    (root / "packed.py").write_text(source.replace("        x = x.contiguous()\n", "")
                                    .replace("        residual = residual.contiguous()\n", ""))
    (root / "rows.py").write_text(source.replace("n = x.numel()", "n = 4 * x.shape[1]  # the batch it was checked at"))
    (root / "tail.py").write_text(source.replace("BLOCK = 1024", "BLOCK = 256")
                                  .replace("(triton.cdiv(n, BLOCK),)", "(n // BLOCK,)")
                                  .replace(", mask=mask, other=0.0)", ")").replace(", mask=mask)", ")"))
    (root / "trialtui.toml").write_text('dtype = "float16"\nseeds = 1\n[test_sizes]\nbatch_size = 4\ndim = 256\n'
                                        "[bench_sizes]\nbatch_size = 16384\ndim = 8192\n" + ROOMY)
    return root


@pytest.mark.slow
def test_the_sample_kernel_generalizes(sample):
    found = _check(sample, "kernel.py")
    assert found.line() == "generalizes: 8 of 8 held-out cases", found.text()


@pytest.mark.slow
@pytest.mark.parametrize("name, case", [
    ("rows.py", "batch_size=5"),  # hard-codes the batch it was checked at
    ("tail.py", "dim=257"),  # 4 × 256 is whole blocks of 256: the unmasked tail shows only off them
    ("packed.py", "non-contiguous inputs at the checked sizes"),  # flat offsets over strided rows
])
def test_a_sample_kernel_tuned_to_what_it_saw_is_named_with_the_case_it_fails(sample, name, case):
    found = _check(sample, name)
    assert _failed_at(found) == case, found.text()
    assert not found.first_failure.message.startswith("case 1 "), found.text()  # the case is named once, by its label
    assert found.line().startswith(f"generalizes: {found.count(Outcome.PASSED)} of ")


SOFTMAX = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_o, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride_o + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        softmax_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), out.stride(0),
                                      BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
'''


@pytest.fixture
def kernelbench(tmp_path: Path) -> Path:
    """KernelBench's level-1 softmax file, unmodified, at CPU sizes."""
    root = tmp_path / "softmax"
    root.mkdir()
    shutil.copy(KERNELBENCH, root / "reference.py")
    (root / "general.py").write_text(SOFTMAX)
    (root / "fixed_block.py").write_text(SOFTMAX.replace("BLOCK=triton.next_power_of_2(x.shape[1])", "BLOCK=128")
                                         .replace(", mask=mask, other=-float(\"inf\"))", ")").replace(", mask=mask)", ")"))
    (root / "trialtui.toml").write_text("seeds = 1\n[test_sizes]\nbatch_size = 4\ndim = 128\n" + ROOMY)
    return root


@pytest.mark.slow
def test_a_kernelbench_file_general_kernel_passes_and_a_fixed_block_fails_off_it(kernelbench):
    assert _check(kernelbench, "general.py").line() == "generalizes: 8 of 8 held-out cases"
    assert _failed_at(_check(kernelbench, "fixed_block.py")) == "dim=131"


VECTORADD = '''
import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data: input_t) -> output_t:
    a, b, _ = data
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty_like(a)
    n = a.numel()
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
    return out
'''


@pytest.fixture
def gpumode(tmp_path: Path) -> Path:
    """GPU MODE's vectoradd as upstream lays it out (utils.py one folder up), at CPU sizes."""
    parent = tmp_path / "pmpp_v2"
    parent.mkdir()
    shutil.copyfile(GPUMODE / "utils.py", parent / "utils.py")
    root = parent / "vectoradd_py"
    shutil.copytree(GPUMODE / "vectoradd_py", root)
    (root / "general.py").write_text(VECTORADD)
    (root / "tail.py").write_text(VECTORADD.replace("(triton.cdiv(n, 1024),)", "(n // 1024,)")
                                  .replace(", mask=mask)", ")"))
    (root / "trialtui.toml").write_text("seeds = 1\n[[test_sizes]]\nsize = 64\nseed = 1\n" + ROOMY)
    return root


@pytest.mark.slow
def test_bench_generalize_on_a_gpu_mode_problem_passes_honest_and_names_the_dropped_tail(gpumode):
    from click.testing import CliRunner

    from trialtui.cli import cli
    from trialtui.core.store import sha256_of

    out = CliRunner().invoke(cli, ["bench", str(gpumode / "general.py"), "--generalize", "--device", "cpu", "--json"],
                             catch_exceptions=False)
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["line"] == "generalizes: 5 of 5 held-out cases" and data["fails"] is False
    assert revealed.was_revealed(gpumode / ".trialtui", sha256_of((gpumode / "general.py").read_bytes()))
    out = CliRunner().invoke(cli, ["bench", str(gpumode / "tail.py"), "--generalize", "--device", "cpu"],
                             catch_exceptions=False)
    assert out.exit_code == 1, out.output
    assert re.match(r"generalizes: \d of \d held-out cases; fails at size=67 \(", out.output), out.output


# -- layouts, in-process ---------------------------------------------------------------------------------

def test_layouts_keep_the_values_and_change_only_where_they_live():
    torch = pytest.importorskip("torch")
    from trialtui.runner.layouts import PAD, arrange

    x = torch.randn(5, 7)
    rows = arrange("padded", [x, torch.arange(6)])
    assert torch.equal(rows[0], x) and rows[0].stride() == (7 + PAD, 1) and not rows[0].is_contiguous()
    assert torch.equal(rows[1], torch.arange(6)) and rows[1].stride() == (2,)
    shifted = arrange("offset", x)
    assert torch.equal(shifted, x) and shifted.is_contiguous() and shifted.storage_offset() == 1
    fenced = arrange(None, x)  # no held-out layout: NaN past its end (tests/test_fenced_inputs.py)
    assert torch.equal(fenced, x) and fenced.is_contiguous() and fenced.storage_offset() == 0


def test_a_reference_that_rejects_a_layout_makes_that_case_not_applicable():
    torch = pytest.importorskip("torch")
    from trialtui.runner.forms import ReferenceCall
    from trialtui.runner.heldout import LaidOut, NotApplicable

    class Flat:  # a reference whose forward needs packed rows, as `.view(-1)` does
        def call(self, case, seed):
            return ReferenceCall(lambda inputs: inputs[0].view(-1) * 2, {"weights": {}})

    x = torch.randn(4, 8)
    packed = LaidOut(Flat(), Layout.CONTIGUOUS).call({}, 0)
    assert torch.equal(packed.fn([x]), x.view(-1) * 2) and packed.payload["layout"] == "contiguous"
    with pytest.raises(NotApplicable, match="does not accept non-contiguous inputs"):
        LaidOut(Flat(), Layout.PADDED).call({}, 0).fn([x])
