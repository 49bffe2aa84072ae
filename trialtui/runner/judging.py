"""One output against the reference's: the tolerance, the dtype's rounding floor against a higher-precision
truth, the normwise bound, the problem's own check; the same rules for the untimed calls and every timed one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from trialtui.core.job_spec import BenchSpec
from trialtui.runner.candidate_requests import CandidateFailed


def higher_precision(reference, ref_model, inputs):
    """The reference again on upcast inputs (float64 under fp32, float32 under fp16/bf16), TF32 off."""
    import copy

    import torch

    from trialtui.runner.compare import HIGHER
    from trialtui.runner.tensors import map_tensors

    wide = HIGHER.get(reference.dtype, torch.float64)
    up = map_tensors(inputs, lambda t: t.to(wide) if t.is_floating_point() else t)
    inputs.clear()  # the caller's list: the device keeps one copy of the inputs, the wide one
    was = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        model = copy.deepcopy(ref_model).to(wide)
        with torch.no_grad():
            return model(*up)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = was


class ReferenceFailed(Exception):
    """reference.py fails at a case, or gives two outputs for one input: the problem's failure, not a candidate's."""


def random_reference(fn: Callable[[Any], Any], model: Any, inputs: Any, atol: float | None, rtol: float | None) -> str | None:
    """Why the reference is random, or None: two calls on one input, no reseeding between them, that differ beyond
    the tolerance. Its untimed calls, each seeded as a candidate's is, could agree by luck of the draw (nn.Dropout in
    a KernelBench model in training mode), and its timed calls then differ from a candidate's for no fault of it."""
    import torch

    from trialtui.runner.compare import compare
    from trialtui.runner.tensors import clone

    with torch.no_grad():
        first, second = fn(clone(inputs)), fn(clone(inputs))
    again = compare(first, second, 1e-5 if atol is None else atol, 1e-5 if rtol is None else rtol)
    if again.passed:
        return None
    dropouts = [name for name, m in (model.named_modules() if model is not None else ())
                if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.training and m.p > 0]
    cause = f"its {', '.join(dropouts)} (nn.Dropout in training mode)" if dropouts else "a random op in its forward"
    return (f"reference.py is random: two calls on the same input differ ({again.message}); {cause} draws from the "
            "random number generator, so no kernel can match it call for call. Make it deterministic: a dropout "
            "probability of 0 (in trialtui.toml's sizes where it is one), self.eval() in Model.__init__, or no "
            "random op in forward")


def first_look(reference, spec: BenchSpec, case: Any, seed: int) -> str:
    """The reference at one case before any candidate is judged: raises `ReferenceFailed` where it raises or is
    random; else the problem's dtype as its inputs name it. Once per problem where a warm checker prepares it."""
    from trialtui.runner.candidate_errors import describe

    try:
        call, inputs = reference.call(case, seed), reference.make_inputs(case, seed)
        why = random_reference(call.fn, call.model, inputs, spec.atol, spec.rtol)
    except Exception as exc:  # noqa: BLE001 - reference.py may raise anything
        raise ReferenceFailed(f"reference.py fails at {case or 'its defaults'}: {describe(exc)}") from exc
    if why:
        raise ReferenceFailed(why)
    return reference.kind.dtype_of(reference, inputs)


def tolerance(spec: BenchSpec, kind) -> tuple[float | None, float | None]:
    """Where the problem's own check judges values (GPU MODE), trialtui's dtype defaults do not apply."""
    if kind.judges_values and not spec.explicit_tolerance:
        return None, None
    return spec.atol, spec.rtol


def judge(spec: BenchSpec, reference, expected, output, inputs, truth, floor_notes: list[str] | None = None, where: str = ""):
    """One output against the reference's, by the same rules for untimed and timed calls: the tolerance,
    the dtype's rounding floor against the higher-precision truth, the problem's own check."""
    from trialtui.runner.compare import Comparison, compare, within_rounding_floor
    from trialtui.runner.tensors import clone

    atol, rtol = tolerance(spec, reference.kind)
    result = compare(expected, output, atol, rtol, inputs if reference.kind.judges_values else None)
    if not result.passed and atol is not None and truth is not None and within_rounding_floor(expected, output, truth, atol, rtol):
        if floor_notes is not None:  # every value off eager is no farther from the truth than eager is, plus a step
            floor_notes.append(f"{where}: {result.message}")
        result = Comparison()
    own = reference.check(clone(inputs), output) if result.passed else None
    if own is not None and not own[0]:
        result.fail(f"check_implementation: {own[1]}")
    return result


TIMED_NORM_SLACK = 2.0  # a timed call's normwise distance from the reference's output, against the untimed bound


@dataclass(frozen=True)
class TimedNorm:
    """The normwise rule the untimed calls at the timed case were held to, carried to every timed call there: a
    candidate that computes exactly when it is checked and in a lower precision when it is timed (each value within
    the elementwise tolerance, the whole far off) is incorrect. The untimed calls are judged against a higher-precision
    run (compare.normwise), each floating leaf of the output against its own bound; a timed call's leaves against the
    reference's own output for its input, since a float64 run per call would cost more than the call: an honest
    kernel within a bound is within it plus the reference's own error (an eighth of it) of that output, so the limit
    is twice the bound."""

    bounds: tuple[float, ...]  # compare.Normwise.bounds at the timed case (each the least over its seeds)
    err: float  # the candidate's normwise error there (the most over its seeds and leaves)

    def merged(self, bounds: tuple[float, ...], err: float) -> TimedNorm:
        same = len(bounds) == len(self.bounds)
        return TimedNorm(tuple(map(min, self.bounds, bounds)) if same else self.bounds, max(self.err, err))

    def hold(self, expected: Any, output: Any, where: str) -> None:
        from trialtui.runner.compare import distances

        found = distances(expected, output)
        for (leaf, far), bound in zip(found, self.bounds):
            if far > TIMED_NORM_SLACK * bound:
                named = f", {leaf}" if len(found) > 1 else ""
                raise CandidateFailed(f"{where} is {far:.2e} from the reference's output for the same input (normwise"
                                      f"{named}), over {TIMED_NORM_SLACK * bound:.2e}, twice the bound its untimed calls "
                                      f"at this size were held to (their normwise error {self.err:.2e}): it computes "
                                      "less precisely when timed", state="incorrect")


def check_timed(spec: BenchSpec, reference, expected, output, inputs, truth_of: Callable[[], Any], where: str,
                norm: TimedNorm | None = None) -> None:
    """A timed call's output against the reference's for the same input (on a GPU, made new for that call):
    a candidate that computes something else when it is timed, or hands back an answer it kept, is
    incorrect, whatever its untimed calls returned. Within the tolerance at once is a pass (1.5 ms for
    256 MB on the H200); anything else gets the full judge, with the higher-precision truth made then. Either way
    `norm`, the untimed calls' normwise rule where they had one, holds too."""
    atol, rtol = tolerance(spec, reference.kind)
    from trialtui.runner.compare import close_at_once

    quick = atol is not None and not reference.kind.judges_values and close_at_once(expected, output, atol, rtol)
    result = None if quick else judge(spec, reference, expected, output, inputs, truth_of())
    if result is not None and not result.passed:
        raise CandidateFailed(f"{where} differs from the reference's output for the same input, though its "
                              f"untimed calls passed: it computes something else when timed, or reads its input before the "
                              f"input is written (work on a stream that does not wait for the current one) ({result.message})",
                              state="incorrect")
    if norm is not None:
        norm.hold(expected, output, where)


def timing_truth(reference, call, inputs):
    """The higher-precision run for a timing input set (KernelBench's module), or None (GPU MODE, no float64 kernel)."""
    if call.model is None:
        return None
    try:
        return higher_precision(reference, call.model, list(inputs))  # a copy of the list: it is emptied
    except Exception:  # noqa: BLE001 - the timed check then holds to the tolerance alone
        return None

