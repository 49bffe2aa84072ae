"""Correctness rules of the output comparison, each with a passing and a failing case."""

import torch

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


def test_dtype_mismatch_fails():
    r = compare(torch.zeros(4), torch.zeros(4, dtype=torch.float16), 1e-2, 1e-2)
    assert not r.passed and "dtype" in r.message


def test_nested_structures_compared_leaf_by_leaf():
    a = {"y": (torch.ones(2), [torch.zeros(3)])}
    assert compare(a, {"y": (torch.ones(2), [torch.zeros(3)])}, 1e-4, 1e-4).passed
    bad = compare(a, {"y": (torch.ones(2), [torch.ones(3)])}, 1e-4, 1e-4)
    assert not bad.passed and "output['y'][1][0]" in bad.message


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
    assert looks_like_tf32(r, torch.float32, allow_tf32=False)
    assert not looks_like_tf32(r, torch.float32, allow_tf32=True)
    assert not looks_like_tf32(compare(x, x + 5, 1e-4, 1e-4), torch.float32, allow_tf32=False)


def test_constant_reference_is_trivial_and_varied_one_is_not():
    assert is_trivial(torch.zeros(10))
    assert is_trivial((torch.full((3,), 2.0),))
    assert not is_trivial(torch.arange(10.0))


def test_modified_input_is_named():
    before = [torch.ones(3), torch.ones(3)]
    after = [torch.ones(3), torch.tensor([1.0, 0.0, 1.0])]
    assert inputs_changed(before, after) == "input[1]"
    assert inputs_changed(before, [t.clone() for t in before]) is None
