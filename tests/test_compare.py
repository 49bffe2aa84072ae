import pytest
"""Correctness rules of the output comparison, each with a passing and a failing case."""

import pytest
import torch

from conftest import as_result

from trialtui.core.validation_report import ValidationReport
from trialtui.core.config import Config
from trialtui.core.decide import decide
from trialtui.core.model import Trial
from trialtui.core.text import wrong_output
from trialtui.render import render_bench, render_validation
from trialtui.runner.compare import compare, inputs_changed, is_trivial, looks_like_tf32


def test_identical_outputs_pass():
    x = torch.randn(4, 5)
    assert compare(x, x.clone(), 1e-4, 1e-4).passed


def test_value_mismatch_reports_errors_and_first_index():
    x = torch.randn(4, 5)
    y = x.clone()
    y[2, 3] += 1.0
    r = compare(x, y, 1e-4, 1e-4)
    assert not r.passed
    assert r.first_mismatch == [2, 3]
    assert abs(r.max_abs_err - 1.0) < 1e-5
    assert r.mismatch_frac == 1 / 20


def test_shape_mismatch_fails_before_values():
    r = compare(torch.zeros(4, 5), torch.zeros(5, 4), 1e-4, 1e-4)
    assert not r.passed and "shape" in r.message


def test_a_wrong_shape_says_both_shapes_wherever_the_verdict_is_rendered():
    """Issue 36, point 8: no value was compared, so an error of 0 must never stand for the verdict."""
    r = compare(torch.zeros(4, 5), torch.zeros(4, 3), 1e-4, 1e-4)
    assert r.message == "output: shape expected (4, 5), got (4, 3)" and r.max_abs_err == 0.0
    corr = {"seeds": 5, "cases": 1, "passed": False, "max_abs_err": r.max_abs_err, "max_rel_err": 0.0,
            "mismatch_frac": 0.0, "message": f"case 1 (defaults) seed 0: {r.message}"}
    assert wrong_output(corr) == "wrong shape: expected (4, 5), got (4, 3)"
    cli = render_bench(as_result({"state": "incorrect", "correctness": corr, "message": corr["message"], "env": {}}))
    assert "FAIL over 5 seeds × 1 case(s); wrong shape: expected (4, 5), got (4, 3)" in cli
    assert "max abs err 0" not in cli
    preview = render_validation(ValidationReport(ok=False, invalid=False, preview={"correct": False, "max_abs_err": 0.0,
                                                                                 "message": r.message}), "k.py")
    assert "wrong shape: expected (4, 5), got (4, 3)" in preview and "max abs err" not in preview
    trial = Trial("t1", "k.py", "0" * 64, 0.0, state="incorrect",
                  result=as_result({"state": "incorrect", "correctness": corr, "message": corr["message"]}))
    fix = decide([trial], trial, [], Config())
    assert "shape expected (4, 5), got (4, 3)" in fix.reason and not any("e+00" in e for e in fix.evidence)


def test_a_value_mismatch_keeps_its_error_and_nan_says_what_it_is():
    assert wrong_output({"max_abs_err": 41.3, "message": "output: 3 of 20 values outside"}) == "wrong (err 4.1e+01)"
    nan = compare(torch.zeros(4), torch.full((4,), float("nan")), 1e-4, 1e-4)
    assert wrong_output({"max_abs_err": nan.max_abs_err, "message": f"case 1 (defaults) seed 3: {nan.message}"}) \
        .startswith("wrong: output: NaN where the reference is finite")


def test_dtype_mismatch_fails():
    r = compare(torch.zeros(4), torch.zeros(4, dtype=torch.float16), 1e-2, 1e-2)
    assert not r.passed and "dtype" in r.message


def test_nested_structures_compared_leaf_by_leaf():
    a = {"y": (torch.ones(2), [torch.zeros(3)])}
    assert compare(a, {"y": (torch.ones(2), [torch.zeros(3)])}, 1e-4, 1e-4).passed
    bad = compare(a, {"y": (torch.ones(2), [torch.ones(3)])}, 1e-4, 1e-4)
    assert not bad.passed and "output['y'][1][0]" in bad.message


def test_a_list_where_the_reference_returns_a_tuple_holds_the_same_outputs():
    a, b = torch.randn(3), torch.randn(2)
    assert compare((a, b), [a.clone(), b.clone()], 1e-4, 1e-4).passed
    assert not compare((a, b), [b.clone(), a.clone()], 1e-4, 1e-4).passed


def test_another_floating_dtype_is_the_problems_own_check_to_judge_only_as_its_output_buffers():
    """GPU MODE's prefix sum: its reference returns float64, its own submission the float32 buffer generate_input
    hands it, and its evaluator takes that; an output of a dtype no input of its shape has stays a mismatch."""
    ref, x = torch.randn(5, dtype=torch.float64), torch.randn(5)
    handed = (x, torch.empty(5))
    assert compare(ref, ref.float(), None, None, handed).passed and compare(ref, ref.float(), 1e-4, 1e-4, handed).passed
    for out, given in ((ref.float(), None), (ref.half(), handed), (ref.float(), (x.half(), torch.empty(6)))):
        r = compare(ref, out, None, None, given)
        assert not r.passed and "dtype" in r.message
    r = compare(torch.arange(5), torch.arange(5).double(), None, None, (torch.empty(5, dtype=torch.float64),))
    assert not r.passed and "dtype" in r.message  # integers stay integers


def test_structure_mismatch_fails():
    r = compare((torch.ones(2), torch.ones(2)), torch.ones(2), 1e-4, 1e-4)
    assert not r.passed and "structure" in r.message


def test_nan_where_reference_is_finite_fails():
    y = torch.ones(4)
    y[1] = float("nan")
    r = compare(torch.ones(4), y, 1e-4, 1e-4)
    assert not r.passed and "NaN" in r.message


def test_nan_where_reference_has_nan_passes():
    x = torch.tensor([1.0, float("nan")])
    assert compare(x, x.clone(), 1e-4, 1e-4).passed


def test_inf_where_reference_is_finite_fails():
    r = compare(torch.ones(3), torch.tensor([1.0, float("inf"), 1.0]), 1e-4, 1e-4)
    assert not r.passed and "Inf" in r.message


def test_tf32_like_error_is_recognised_only_for_fp32_without_tf32():
    x = torch.randn(64) + 3
    r = compare(x, x * (1 + 1e-3), 1e-4, 1e-4)
    assert looks_like_tf32(r, x, allow_tf32=False)
    assert not looks_like_tf32(r, x, allow_tf32=True)
    assert not looks_like_tf32(compare(x, x + 5, 1e-4, 1e-4), x, allow_tf32=False)
    # fp16 rounding is not TF32's fault, whatever the problem's configured dtype says
    h = x.half()
    rh = compare(h, (h.float() * (1 + 1e-3)).half(), 1e-4, 1e-4)
    assert not rh.passed and not looks_like_tf32(rh, h, allow_tf32=False)


def test_chunked_comparison_equals_one_pass(monkeypatch):
    import trialtui.runner.compare as cmp

    torch.manual_seed(0)
    ref = torch.randn(5, 13)
    out = ref.clone()
    out[3, 7] += 1.0
    out[4, 2] = float("nan")
    whole = cmp.compare(ref, out, 1e-4, 1e-4)
    monkeypatch.setattr(cmp, "CHUNK", 7)
    chunked = cmp.compare(ref, out, 1e-4, 1e-4)
    assert (chunked.message, chunked.first_mismatch, chunked.mismatch_frac) == (whole.message, whole.first_mismatch, whole.mismatch_frac)
    assert chunked.first_mismatch == [4, 2]  # the message is about the NaN: point at it
    assert chunked.max_abs_err == whole.max_abs_err
    truth = ref.double()
    chunked_norm = cmp.normwise(ref, out.nan_to_num(), truth, False).err
    monkeypatch.setattr(cmp, "CHUNK", 1 << 24)
    assert chunked_norm == pytest.approx(cmp.normwise(ref, out.nan_to_num(), truth, False).err)


def test_normwise_catches_what_elementwise_cannot():
    from trialtui.runner.compare import normwise

    torch.manual_seed(1)
    ref64 = torch.randn(8, 4096, dtype=torch.float64)
    ref64 = ref64 / ref64.norm(dim=-1, keepdim=True)
    ref = ref64.float()
    off = ref * (1 + 2e-4)
    assert compare(ref, off, 1e-4, 1e-4).passed  # every element inside atol
    n = normwise(ref, off, ref64, allow_tf32=False)
    assert not n.passed and n.err == pytest.approx(2e-4, rel=0.01)
    assert "normwise" in n.message()
    assert normwise(ref, ref, ref64, allow_tf32=False).passed
    # TF32 allowed: the fp32 floor rises to TF32's rounding
    assert normwise(ref, off, ref64, allow_tf32=True).passed


def test_structure_only_comparison_for_gpumode_still_catches_unwritten_output():
    x = torch.randn(10)
    y = x * 1.5
    assert compare(x, y, None, None).passed
    y[3] = float("nan")
    r = compare(x, y, None, None)
    assert not r.passed and "NaN where the reference is finite" in r.message


def test_output_on_another_device_type_is_named():
    x = torch.randn(3)
    y = torch.empty(3, device="meta")
    r = compare(x, y, 1e-4, 1e-4)
    assert not r.passed and "device" in r.message


def test_constant_reference_is_trivial_and_varied_one_is_not():
    assert is_trivial(torch.zeros(10))
    assert is_trivial((torch.full((3,), 2.0),))
    assert not is_trivial(torch.arange(10.0))


def test_modified_input_is_named():
    before = [torch.ones(3), torch.ones(3)]
    after = [torch.ones(3), torch.tensor([1.0, 0.0, 1.0])]
    assert inputs_changed(before, after) == "input[1]"
    assert inputs_changed(before, [t.clone() for t in before]) is None


def test_a_cpu_result_names_the_interpreter_only_where_a_kernel_of_its_own_ran():
    from trialtui.core.text import label

    def on_cpu(launches):
        return as_result({"state": "correct", "env": {"device": "cpu"}, "dtype": "float32", "sizes": [{"n": 8}],
                          "correctness": {"passed": True, "launches": launches}})

    assert label(on_cpu(2)).startswith("CPU (Triton interpreter) · float32")
    assert label(on_cpu(0)).startswith("CPU · float32")  # pure PyTorch: nothing was interpreted


def test_the_tuis_error_row_of_a_nan_output_is_no_near_miss():
    """An output of NaN where the reference is finite: no value differed finitely, so its error of 0 is not shown
    beside the mismatch share as if the kernel were off by nothing; a passing trial's 0 is shown."""
    from rich.style import Style
    from rich.table import Table

    from trialtui.tui.widgets.metrics_grid import MetricsGrid

    nan = compare(torch.zeros(4), torch.full((4,), float("nan")), 1e-4, 1e-4)

    def errors(passed: bool, max_abs_err: float, frac: float) -> str:
        corr = {"passed": passed, "seeds": 2, "max_abs_err": max_abs_err, "max_rel_err": 0.0, "mismatch_frac": frac,
                "message": "" if passed else nan.message}
        trial = Trial("t1", "k.py", "", 0.0, "correct" if passed else "incorrect",
                      result=as_result({"state": "correct" if passed else "incorrect", "correctness": corr}))
        grid = Table()
        grid.add_column()
        grid.add_column()
        MetricsGrid(lambda var, **extra: Style(), "eager", Config())._correctness_rows(grid, trial)
        return str(grid.columns[1]._cells[1])

    failed = errors(False, nan.max_abs_err, 1.0)
    assert "max abs err" not in failed and "mismatches 100.00%" in failed
    assert "max abs err 0 · max rel err 0" in errors(True, 0.0, 0.0)
    assert "max abs err 0.5" in errors(False, 0.5, 0.25)


def test_a_complex_output_is_judged_on_both_parts():
    """A cast to float64 drops the imaginary part: a real FFT with the imaginary part zeroed, or garbage, passed."""
    from trialtui.runner.compare import normwise

    ref = torch.fft.rfft(torch.randn(8, 64, generator=torch.Generator().manual_seed(0)))
    assert compare(ref, ref.clone(), 1e-4, 1e-4).passed
    real_only = torch.complex(ref.real, torch.zeros_like(ref.imag))
    r = compare(ref, real_only, 1e-4, 1e-4)
    assert not r.passed and r.max_abs_err > 1.0 and len(r.first_mismatch) == 3  # (row, column, part)
    assert not compare(ref, torch.complex(ref.real, ref.imag + 1e6), 1e-4, 1e-4).passed
    truth = ref.to(torch.complex128)
    assert normwise(ref, real_only, truth, allow_tf32=False).err > 0.5  # the imaginary half of the norm, missing
    assert normwise(ref, ref.clone(), truth, allow_tf32=False).bound == pytest.approx(1e-5)  # complex64: float32's floor
    assert not is_trivial(torch.complex(torch.ones(6), torch.arange(6.0)))


def test_the_timed_calls_keep_the_untimed_normwise_bound():
    """Exact when checked, a bias inside the elementwise tolerance when timed: the untimed normwise bound (twice it,
    against the reference's own output) holds on every timed call; an honest call's reordering passes."""
    from types import SimpleNamespace

    from trialtui.runner.candidate_requests import CandidateFailed
    from trialtui.runner.compare import distances
    from trialtui.runner.judging import TimedNorm, check_timed

    spec = SimpleNamespace(atol=1e-4, rtol=1e-4, explicit_tolerance=False)
    reference = SimpleNamespace(kind=SimpleNamespace(judges_values=False))
    expected = torch.softmax(torch.randn(64, 512, generator=torch.Generator().manual_seed(1)), -1).relu() + 0.5
    biased, reordered = expected + 5e-5, expected * (1 + 1e-7)
    norm = TimedNorm(bounds=(1e-5,), err=3e-8)
    assert distances(expected, biased)[0][1] == pytest.approx(5e-5 / expected.norm().item() * expected.numel() ** 0.5,
                                                              rel=1e-3)
    check_timed(spec, reference, expected, reordered, [], lambda: None, "timed call 1", norm)
    check_timed(spec, reference, expected, biased, [], lambda: None, "timed call 2", None)  # no bound: the tolerance
    with pytest.raises(CandidateFailed, match=r"timed call 3 is 9\.\d+e-05 .* over 2\.00e-05.* less precisely") as caught:
        check_timed(spec, reference, expected, biased, [], lambda: None, "timed call 3", norm)
    assert caught.value.state == "incorrect"
    assert norm.merged((2e-5,), 1e-7) == TimedNorm((1e-5,), 1e-7)
    assert distances([expected, 3], [expected.clone(), 3]) == [("output[0]", 0.0)] and distances(3, 3) == []


def test_an_input_written_over_with_nan_is_a_changed_input_and_nan_inputs_left_alone_are_not():
    before = torch.tensor([0.0, float("nan"), 1.0])
    assert inputs_changed([before], [before.clone()]) is None
    assert inputs_changed([before], [torch.tensor([float("nan"), float("nan"), 1.0])]) == "input[0]"
    assert inputs_changed([before], [torch.tensor([0.0, 2.0, 1.0])]) == "input[0]"


def test_the_timed_distance_leaves_out_only_what_matches_a_non_finite_reference():
    from trialtui.runner.compare import distances

    def distance(ref, out):
        return distances(ref, out)[0][1]

    ref = torch.tensor([1.0, float("inf"), float("nan"), 2.0])
    assert distance(ref, ref.clone()) == 0.0
    assert distance(ref, torch.tensor([1.0, float("inf"), 5.0, 2.0])) == 0.0  # NaN in the reference: not measured
    assert distance(ref, torch.tensor([1.0, 3.0, float("nan"), 2.0])) > 1e30  # a finite answer for an inf one
    assert distance(ref, torch.tensor([1.0, float("inf"), float("nan"), float("inf")])) > 1e30
    assert distance(ref, torch.tensor([1.0, float("inf"), float("nan"), 2.5])) == pytest.approx(0.5 / 5 ** 0.5)



def test_each_output_leaf_is_held_to_its_own_normwise_bound_untimed_and_timed():
    """A softmax in bf16 beside its exact log-sum-exp (300 times its norm) passed pooled: its 1.7e-3 drowned in the
    whole (s27's red team). Each floating leaf has its own bound; the message names the leaf."""
    from types import SimpleNamespace

    from trialtui.runner.candidate_requests import CandidateFailed
    from trialtui.runner.compare import normwise
    from trialtui.runner.judging import TimedNorm, check_timed

    x = torch.randn(3, 4099, generator=torch.Generator().manual_seed(2))
    truth = (torch.softmax(x.double(), -1), torch.logsumexp(x.double(), -1))
    expected = (torch.softmax(x, -1), torch.logsumexp(x, -1))
    rounded = (expected[0].bfloat16().float(), expected[1].clone())
    exact = normwise(expected, (expected[0].clone(), expected[1].clone()), truth, allow_tf32=False)
    assert exact.passed and exact.leaf.startswith("output[") and len(exact.bounds) == 2
    norm = normwise(expected, rounded, truth, allow_tf32=False)
    assert not norm.passed and norm.message().startswith("output[0]: normwise error 1.")
    spec = SimpleNamespace(atol=1e-4, rtol=1e-4, explicit_tolerance=False)
    reference = SimpleNamespace(kind=SimpleNamespace(judges_values=False))
    with pytest.raises(CandidateFailed, match=r"timed call 1 is 1\.\d+e-03 from .*\(normwise, output\[0\]\)"):
        check_timed(spec, reference, expected, rounded, [], lambda: None, "timed call 1", TimedNorm(exact.bounds, exact.err))


def test_leaves_that_are_not_tensors_compare_as_values_nan_as_nan():
    from trialtui.runner.compare import same_value

    x = torch.ones(3)
    assert compare((x, float("nan")), (x.clone(), float("nan")), 1e-4, 1e-4).passed
    assert not compare((x, float("nan")), (x.clone(), 1.0), 1e-4, 1e-4).passed
    assert same_value(3, 3.0) and not same_value(1.0, float("nan")) and not same_value("a", "b")


@pytest.mark.parametrize("dtype, coarse", [(torch.float32, torch.bfloat16), (torch.float16, torch.float8_e5m2),
                                           (torch.bfloat16, torch.float8_e5m2)], ids=["fp32", "fp16", "bf16"])
def test_every_dtypes_timed_calls_keep_its_untimed_bound_an_honest_rounding_passes(dtype, coarse):
    """The class beyond fp32: the bound the untimed calls found (8× the reference's own error, or the dtype's floor)
    holds a timed call computed a format coarser, and lets through a kernel that computes in fp32 and rounds once."""
    from trialtui.runner.candidate_requests import CandidateFailed
    from trialtui.runner.compare import normwise
    from trialtui.runner.judging import TimedNorm

    x = torch.randn(64, 512, generator=torch.Generator().manual_seed(3))

    def f(t):
        return torch.nn.functional.gelu(t) * 1.5 + t.sin()

    expected, honest = f(x.to(dtype)), f(x.float()).to(dtype)
    untimed = normwise(expected, honest, f(x.double()), allow_tf32=False)
    assert untimed.passed
    norm = TimedNorm(untimed.bounds, untimed.err)
    norm.hold(expected, honest, "timed call 1")
    with pytest.raises(CandidateFailed, match="less precisely when timed"):
        norm.hold(expected, expected.to(coarse).to(dtype), "timed call 2")
