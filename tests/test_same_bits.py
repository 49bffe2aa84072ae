"""The timed-call check's shortcut: only an output bit for bit equal to one that passed skips the full check."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from trialtui.runner.bench_job import same_bits  # noqa: E402


def test_equal_bits_in_the_same_structure_skip():
    a = torch.arange(6.0).reshape(2, 3)
    assert same_bits((a, [a.clone(), 3]), (a.clone(), [a.clone(), 3]))


@pytest.mark.parametrize("other", [
    lambda a: a.clone().add_(1e-7),  # one value off by a rounding step
    lambda a: a.double(),  # same values, another dtype
    lambda a: a.reshape(3, 2),  # same values, another shape
    lambda a: [a.clone()],  # another structure
    lambda a: a.clone().fill_(math.nan),  # NaN never equals: the full check decides
])
def test_anything_else_gets_the_full_check(other):
    a = torch.arange(6.0).reshape(2, 3) + 1
    assert not same_bits(other(a), a)


def test_a_tensor_that_crossed_from_another_device_is_not_the_same():
    a, b = torch.ones(4), torch.ones(4)
    a.sent_from_device, b.sent_from_device = "cuda", "cpu"
    assert not same_bits(a, b)
