"""Half-precision kernels at the dtype's rounding floor are correct; kernels off by more are not.

The class: an elementwise bf16/fp16 chain (bias + GELU + residual, erf or tanh form) computed in fp32
and rounded once sits a rounding step or two from eager, which rounds after every op, while being as
close to the float32 truth. Real torch bf16/fp16 arithmetic on the CPU reproduces it.
"""

from __future__ import annotations

import pytest
import torch

from trialtui.runner.compare import compare, within_rounding_floor


def chain(dtype, approximate, rel_error=0.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    x, residual = torch.randn(512, 1024, generator=g), torch.randn(512, 1024, generator=g) * 4
    bias = torch.randn(1024, generator=g) * 0.5
    x, residual, bias = x.to(dtype), residual.to(dtype), bias.to(dtype)
    gelu = torch.nn.functional.gelu
    eager = gelu(x + bias, approximate=approximate) + residual  # rounds after every op
    truth = gelu(x.float() + bias.float(), approximate=approximate) + residual.float()
    fused = (truth * (1 + rel_error)).to(dtype)  # fp32 inside, one rounding
    return eager, fused, truth


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_a_fused_half_precision_chain_is_accepted_at_the_rounding_floor(dtype, approximate):
    atol = rtol = 1e-2 if dtype == torch.bfloat16 else 1e-3
    eager, fused, truth = chain(dtype, approximate)
    assert not compare(eager, fused, atol, rtol).passed  # the old verdict: a false rejection
    assert within_rounding_floor(eager, fused, truth, atol, rtol)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_an_error_beyond_the_rounding_floor_is_still_rejected(dtype):
    atol = rtol = 1e-2 if dtype == torch.bfloat16 else 1e-3
    eager, wrong, truth = chain(dtype, "none", rel_error=1.5e-2)
    assert not compare(eager, wrong, atol, rtol).passed
    assert not within_rounding_floor(eager, wrong, truth, atol, rtol)
    eager, one_off, truth = chain(dtype, "none")
    one_off = one_off.clone()
    one_off.view(-1)[7] += 1.0  # one value moved: the rest at the floor does not excuse it
    assert not within_rounding_floor(eager, one_off, truth, atol, rtol)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_timed_calls_are_judged_by_the_same_rules(dtype):
    """A kernel at the rounding floor is not 'incorrect when timed'; one beyond it is."""
    from types import SimpleNamespace

    from trialtui.runner.judging import check_timed
    from trialtui.runner.candidate_requests import CandidateFailed

    tol = 1e-2 if dtype == torch.bfloat16 else 1e-3
    spec = SimpleNamespace(atol=tol, rtol=tol, explicit_tolerance=False)
    reference = SimpleNamespace(kind=SimpleNamespace(judges_values=False), check=lambda data, out: None)
    eager, fused, truth = chain(dtype, "none")
    check_timed(spec, reference, eager, fused, [], lambda: truth, "timed call 1")
    eager, wrong, truth = chain(dtype, "none", rel_error=1.5e-2)
    with pytest.raises(CandidateFailed, match="when timed"):
        check_timed(spec, reference, eager, wrong, [], lambda: truth, "timed call 1")


def test_the_floor_excuses_values_never_structure_or_dtype():
    eager, fused, truth = chain(torch.bfloat16, "none")
    assert not within_rounding_floor(eager, [fused], truth, 1e-2, 1e-2)  # a list where a tensor is expected
    assert not within_rounding_floor(eager, fused.float(), truth, 1e-2, 1e-2)  # the wrong dtype
