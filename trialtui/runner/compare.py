"""Compare a candidate's output with the reference's: structure, shape, dtype, values.

A check reports the numbers a kernel engineer reads first: max abs and relative error, the
fraction of mismatches and where the first one is.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import torch

# Normwise check: the candidate's ||out - ref_hp|| / ||ref_hp|| may be this many times the reference's
# own error against the same higher-precision run, but never needs to beat the dtype's floor.
NORM_MULTIPLE = 8.0
NORM_FLOOR = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 8e-3}
NORM_FLOOR_TF32 = 2e-3
# The higher-precision run: float64 under float32 (and wider), float32 under the half types.
HIGHER = {torch.float32: torch.float64, torch.float64: torch.float64, torch.float16: torch.float32, torch.bfloat16: torch.float32}


@contextmanager
def poisoned_allocations() -> Iterator[None]:
    """Fresh allocations filled with NaN, so outputs the kernel never wrote cannot pass.

    The C switch under torch.use_deterministic_algorithms does the same without importing
    torch._inductor (1.5 s of CPU). Warn-only: the candidate's own nondeterministic ops still run.
    """
    import torch.utils.deterministic as deterministic

    was = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    was_fill = deterministic.fill_uninitialized_memory
    torch._C._set_deterministic_algorithms(True, warn_only=True)
    deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        deterministic.fill_uninitialized_memory = was_fill
        torch._C._set_deterministic_algorithms(was[0], warn_only=was[1])


@dataclass
class Comparison:
    passed: bool = True
    message: str = ""
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    mismatch_frac: float = 0.0
    first_mismatch: list[int] | None = None
    tf32_like: bool = False
    notes: list[str] = field(default_factory=list)

    def fail(self, message: str) -> Comparison:
        if self.passed:
            self.passed = False
            self.message = message
        return self


def _flatten(value: Any, path: str = "output") -> list[tuple[str, Any]]:
    if isinstance(value, (tuple, list)):
        items: list[tuple[str, Any]] = []
        for i, v in enumerate(value):
            items += _flatten(v, f"{path}[{i}]")
        return items
    if isinstance(value, dict):
        items = []
        for k in sorted(value, key=str):
            items += _flatten(value[k], f"{path}[{k!r}]")
        return items
    return [(path, value)]


def handed_dtype(output: torch.Tensor, handed: Any) -> str:
    """The floating dtype, other than `output`'s, of an input of its shape (GPU MODE's output buffer, handed in): what
    a candidate that writes that buffer returns, and the problem's own check judges; '' where there is none."""
    if handed is None or not output.is_floating_point():
        return ""
    found = (t.dtype for _, t in _flatten(handed) if isinstance(t, torch.Tensor) and t.shape == output.shape
             and t.is_floating_point() and t.dtype != output.dtype)
    return str(next(found, "")).removeprefix("torch.")


def same_value(r: Any, o: Any) -> bool:
    """A leaf that is no tensor (a Python number, a string), equal as the reference's: NaN where it is NaN too."""
    return bool(r == o) or (isinstance(r, float) and isinstance(o, float) and math.isnan(r) and math.isnan(o))


def _structure(value: Any) -> Any:
    if isinstance(value, (tuple, list)):  # a list where the reference returns a tuple holds the same tensors, in order
        return ("sequence", [_structure(v) for v in value])
    if isinstance(value, dict):
        return ("dict", sorted((str(k), _structure(v)) for k, v in value.items()))
    return "tensor" if isinstance(value, torch.Tensor) else type(value).__name__


def compare(ref: Any, out: Any, atol: float | None, rtol: float | None, handed: Any = None) -> Comparison:
    """Compare nested outputs; the first failing leaf sets the message.

    With atol/rtol None only the structure is checked: shapes, dtypes, devices, and NaN or Inf where
    the reference is finite (GPU MODE problems, whose own check_implementation judges the values).
    `handed`: the inputs, where the problem's own check judges the values: a floating output of the dtype of an input
    of its shape, its output buffer, is that check's to judge (GPU MODE's prefix sum: its reference returns float64,
    its own submission the float32 buffer generate_input hands it).
    """
    result = Comparison()
    if _structure(ref) != _structure(out):
        return result.fail(f"output structure differs: expected {_describe(ref)}, got {_describe(out)}")
    total = mismatched = 0
    for (path, r), (_, o) in zip(_flatten(ref), _flatten(out)):
        if not isinstance(r, torch.Tensor):
            if not same_value(r, o):
                result.fail(f"{path}: expected {r!r}, got {o!r}")
            continue
        if r.shape != o.shape:
            result.fail(f"{path}: shape expected {tuple(r.shape)}, got {tuple(o.shape)}")
            continue
        if r.dtype != o.dtype and not (r.is_floating_point() and handed_dtype(r, handed) == str(o.dtype).removeprefix("torch.")):
            result.fail(f"{path}: dtype {o.dtype}, expected {r.dtype}")
            continue
        sent_from = getattr(o, "sent_from_device", o.device.type)  # set by runner/wire.py on arrival
        if r.device.type != o.device.type or sent_from != r.device.type:
            result.fail(f"{path}: on device {sent_from if sent_from != r.device.type else o.device.type}, "
                        f"expected {r.device.type}")
            continue
        total += parts(r).numel()
        mismatched += _compare_tensor(path, r, o, atol, rtol, result)
    if total:
        result.mismatch_frac = mismatched / total
    return result


def close_at_once(expected: Any, output: Any, atol: float, rtol: float) -> bool:
    """`compare`'s structure, dtype, shape and device rules, and every value within the tolerance, in one
    fused pass per tensor (the timed calls' quick check); NaN never passes: the full judge says why."""
    if _structure(expected) != _structure(output):
        return False
    for (_, r), (_, o) in zip(_flatten(expected), _flatten(output)):
        if not isinstance(r, torch.Tensor):
            if not same_value(r, o):
                return False
            continue
        sent_from = getattr(o, "sent_from_device", o.device.type)
        if r.shape != o.shape or r.dtype != o.dtype or r.device != o.device or sent_from != r.device.type:
            return False
        if not (r.is_floating_point() or r.is_complex()):
            if not torch.equal(r, o):
                return False
        elif not torch.allclose(o, r, atol=atol, rtol=rtol):
            return False
    return True


CHUNK = 1 << 24  # elements compared at a time: the check's own memory stays bounded at any output size


def parts(t: torch.Tensor) -> torch.Tensor:
    """A complex tensor as its real and imaginary parts (a last dimension of two), which every rule here judges
    alike (a cast to float64 would drop the imaginary part); any other tensor as it is."""
    return torch.view_as_real(t.detach().resolve_conj()) if t.is_complex() else t


def _compare_tensor(path: str, r: torch.Tensor, o: torch.Tensor, atol: float | None, rtol: float | None, result: Comparison) -> int:
    """Compare in float64 chunk by chunk on the tensors' own device; returns the number of mismatches."""
    if r.numel() == 0:
        return 0
    r, o = parts(r), parts(o)
    rf, of = r.detach().reshape(-1), o.detach().to(r.device).reshape(-1)
    floating = r.is_floating_point()
    nonfinite = mismatched = 0
    first_bad = first_nan = None
    saw_nan = False
    for lo in range(0, rf.numel(), CHUNK):
        r64, o64 = rf[lo:lo + CHUNK], of[lo:lo + CHUNK]
        if not floating:
            bad = r64 != o64
        else:
            r64, o64 = r64.to(torch.float64), o64.to(torch.float64)
            ref_finite, out_finite = torch.isfinite(r64), torch.isfinite(o64)
            lost = ref_finite & ~out_finite
            count = int(lost.sum())
            if count:
                nonfinite += count
                saw_nan = saw_nan or bool(torch.isnan(o64[lost]).any())
                first_nan = first_nan if first_nan is not None else lo + int(torch.nonzero(lost)[0])
            diff = torch.where(ref_finite & out_finite, (r64 - o64).abs(), 0.0)
            result.max_abs_err = max(result.max_abs_err, float(diff.max()))
            floor = atol if atol is not None else 0.0
            rel = torch.where(r64.abs() > floor, diff / r64.abs().clamp_min(1e-12), 0.0)
            result.max_rel_err = max(result.max_rel_err, float(rel.max()))
            if atol is None or rtol is None:
                continue
            bad = ~torch.isclose(o64, r64, rtol=rtol, atol=atol, equal_nan=True)
        count = int(bad.sum())
        if count:
            mismatched += count
            first_bad = first_bad if first_bad is not None else lo + int(torch.nonzero(bad)[0])
    if nonfinite:
        kind = "NaN" if saw_nan else "Inf"
        result.fail(
            f"{path}: {kind} where the reference is finite ({nonfinite} values)"
            + ("; unwritten output, or a read past an input's end? fresh allocations, and the memory after each "
               "input up to 64 MB, are NaN" if kind == "NaN" else "")
        )
        _first(first_nan, r.shape, result)
    if not floating and mismatched:
        result.fail(f"{path}: {mismatched} of {r.numel()} values differ")
    elif mismatched:
        result.fail(
            f"{path}: {mismatched} of {r.numel()} values ({mismatched / r.numel():.2%}) outside atol={atol:g} rtol={rtol:g}; "
            f"max abs err {result.max_abs_err:.3g}"
        )
    _first(first_bad, r.shape, result)
    return mismatched if (atol is not None or not floating) else nonfinite


MANTISSA_BITS = {torch.float16: 10, torch.bfloat16: 7}


def ulp(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of `dtype` at each |x| (its smallest normal spacing below that): one rounding step."""
    bits = MANTISSA_BITS[dtype]
    _, exponent = torch.frexp(x.abs().clamp_min(torch.finfo(dtype).tiny))
    return torch.ldexp(torch.ones_like(x), (exponent - 1 - bits).to(torch.int32))


def within_rounding_floor(expected: Any, output: Any, truth: Any, atol: float, rtol: float) -> bool:
    """Half-precision outputs that miss the elementwise tolerance only where the reference itself is off:
    each value is within the tolerance of the reference, or no farther from the higher-precision truth
    than the reference is, plus one rounding step of the dtype at that value.

    An eager half-precision reference rounds after every op; a fused kernel computing in fp32 rounds
    once, so it can sit a step or two from eager while being closer to the truth (GELU in bf16: 5,788 of
    67 M values 0.0625 off eager on the H200). A kernel that is wrong is far from the truth too.
    """
    if _structure(expected) != _structure(output):
        return False  # only values are excused, never a wrong structure, dtype, shape or device
    leaves = list(zip(_flatten(expected), _flatten(output), _flatten(truth)))
    for (_, r), (_, o), (_, t) in leaves:
        if not isinstance(r, torch.Tensor) or r.dtype not in MANTISSA_BITS or not isinstance(o, torch.Tensor) \
                or not isinstance(t, torch.Tensor) or o.dtype != r.dtype or o.shape != r.shape or t.shape != r.shape \
                or getattr(o, "sent_from_device", o.device.type) != r.device.type:
            return False
        r32, o32, t32 = r.float(), o.float(), t.to(r.device).float()
        near_ref = (o32 - r32).abs() <= atol + rtol * r32.abs()
        near_truth = (o32 - t32).abs() <= (r32 - t32).abs() + ulp(t32, r.dtype)
        if not bool((near_ref | near_truth).all()):
            return False
    return bool(leaves)


def _first(flat_index: int | None, shape: torch.Size, result: Comparison) -> None:
    """The first mismatch as an index into the output's own shape."""
    if result.first_mismatch is None and flat_index is not None:
        index = []
        for size in reversed(shape):
            index.append(flat_index % size)
            flat_index //= size
        result.first_mismatch = list(reversed(index))


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor{tuple(value.shape)}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__} of {len(value)}"
    if isinstance(value, dict):
        return f"dict with keys {sorted(map(str, value))}"
    return type(value).__name__


def float_dtypes(value: Any) -> set[torch.dtype]:
    """The floating dtypes of a nested output: what its tolerances and hints must be about."""
    return {t.dtype for _, t in _flatten(value) if isinstance(t, torch.Tensor) and t.is_floating_point()}


def looks_like_tf32(result: Comparison, expected: Any, allow_tf32: bool, declared: torch.dtype | None = None) -> bool:
    """fp32 outputs failing with relative error near TF32's ~1e-3 rounding: say so and name allow_tf32.

    Decided by the reference output's own dtype: fp16 rounding is not TF32's fault.
    """
    return (
        not result.passed
        and declared in (None, torch.float32)
        and float_dtypes(expected) == {torch.float32}
        and not allow_tf32
        and 2e-4 <= result.max_rel_err <= 2e-2
    )


@dataclass
class Normwise:
    """||out - ref_hp|| / ||ref_hp|| for the candidate and for the reference itself, and the bound, of the output leaf
    farthest over its bound: each floating leaf is held to its own (pooled, a small leaf in bf16 hid beside a large
    exact one: s27's red team)."""

    err: float
    ref_err: float
    bound: float
    leaf: str = ""  # that leaf's path, where the output has several floating leaves
    bounds: tuple[float, ...] = ()  # every floating leaf's bound, in the output's order: its timed calls' (TimedNorm)

    @property
    def passed(self) -> bool:
        return self.err <= self.bound

    def message(self) -> str:
        return (
            f"{self.leaf + ': ' if self.leaf else ''}normwise error {self.err:.2e} is over the bound {self.bound:.2e} "
            f"({NORM_MULTIPLE:g}× the reference's own error {self.ref_err:.2e} against a higher-precision run, "
            "or the dtype's floor): a systematic error the elementwise check cannot see"
        )


def _floating(leaf: Any) -> bool:
    return isinstance(leaf, torch.Tensor) and (leaf.is_floating_point() or leaf.is_complex())


def normwise(expected: Any, output: Any, truth: Any, allow_tf32: bool, declared: torch.dtype | None = None) -> Normwise | None:
    """Both errors against the higher-precision run, leaf by floating leaf; None when there are none.

    `declared` is the problem's dtype where the run used another (bf16 emulated as fp32 on the CPU):
    the floor is the declared dtype's, as its tolerances are."""
    leaves = []  # (path, err, ref_err, bound) of each floating leaf
    for (path, r), (_, o), (_, h) in zip(_flatten(expected), _flatten(output), _flatten(truth)):
        if not _floating(r):
            continue
        if not isinstance(h, torch.Tensor):  # no truth for this leaf: no bound either
            leaves.append((path, 0.0, 0.0, math.inf))
            continue
        r, o, h = parts(r), parts(o), parts(h)
        hf, rf = h.detach().reshape(-1), r.detach().reshape(-1)
        of = o.detach().to(h.device).reshape(-1)
        num_out = num_ref = den = 0.0
        for lo in range(0, hf.numel(), CHUNK):
            h64 = hf[lo:lo + CHUNK].to(torch.float64)
            finite = torch.isfinite(h64)
            h64 = torch.where(finite, h64, 0.0)
            r64 = torch.where(finite, rf[lo:lo + CHUNK].to(device=h64.device, dtype=torch.float64), 0.0)
            o64 = torch.nan_to_num(torch.where(finite, of[lo:lo + CHUNK].to(torch.float64), 0.0), nan=0.0, posinf=0.0, neginf=0.0)
            num_out += float(torch.linalg.vector_norm(o64 - h64)) ** 2
            num_ref += float(torch.linalg.vector_norm(r64 - h64)) ** 2
            den += float(torch.linalg.vector_norm(h64)) ** 2
        scale = den**0.5 if den > 0 else 1.0
        floor = NORM_FLOOR.get(declared if declared is not None else r.dtype, 0.0)
        if allow_tf32 and r.dtype == torch.float32:
            floor = max(floor, NORM_FLOOR_TF32)
        ref_err = num_ref**0.5 / scale
        leaves.append((path, num_out**0.5 / scale, ref_err, max(NORM_MULTIPLE * ref_err, floor)))
    if not leaves:
        return None
    path, err, ref_err, bound = max(leaves, key=lambda leaf: leaf[1] / leaf[3] if leaf[3] > 0 else (math.inf if leaf[1] > 0 else 0.0))
    return Normwise(err, ref_err, bound, path if len(leaves) > 1 else "", tuple(leaf[3] for leaf in leaves))


def distances(expected: Any, output: Any) -> list[tuple[str, float]]:
    """||out - ref|| / ||ref|| of each floating or complex leaf (where the reference is finite), in the output's order
    (`Normwise.bounds`'s), chunk by chunk: a timed call's normwise distances from the reference's output for its input."""
    found = []
    for (path, r), (_, o) in zip(_flatten(expected), _flatten(output)):
        if not _floating(r):
            continue
        if not isinstance(o, torch.Tensor):
            found.append((path, math.inf))
            continue
        rf, of = parts(r).reshape(-1), parts(o).to(r.device).reshape(-1)
        wide = torch.float64 if rf.dtype == torch.float64 else torch.float32
        num = den = 0.0
        for lo in range(0, rf.numel(), CHUNK):
            rc, oc = rf[lo:lo + CHUNK].to(wide), of[lo:lo + CHUNK].to(wide)
            # where the reference is not finite: no distance where the output matches it (inf - inf, NaN), past any
            # limit where it is finite (the judge has failed it already); five passes, every timed call pays them
            dc = torch.nan_to_num(oc - rc, nan=0.0)
            rc = torch.nan_to_num(rc, nan=0.0, posinf=0.0, neginf=0.0)
            pair = torch.stack((torch.linalg.vector_norm(dc), torch.linalg.vector_norm(rc))).tolist()
            if not all(map(math.isfinite, pair)):  # squares past float32's range: the same sums in float64
                pair = [float(torch.linalg.vector_norm(x.double())) for x in (dc, rc)]
            num, den = num + pair[0] ** 2, den + pair[1] ** 2
        found.append((path, num**0.5 / den**0.5 if den > 0 else (0.0 if num == 0 else math.inf)))
    return found


def is_trivial(ref: Any) -> bool:
    """A reference output that is constant or all zero cannot tell a right kernel from a trivial one."""
    tensors = [t for _, t in _flatten(ref) if isinstance(t, torch.Tensor) and t.numel() > 1]
    if not tensors:
        return False
    for t in tensors:
        t = parts(t).float()
        if not bool(torch.isfinite(t).all()):
            return False
        if float(t.max() - t.min()) > 0:
            return False
    return True


def inputs_changed(before: Any, after: Any) -> str | None:
    """Name the first input the candidate modified, or None."""
    for (path, b), (_, a) in zip(_flatten(before, "input"), _flatten(after, "input")):
        if isinstance(b, torch.Tensor) and isinstance(a, torch.Tensor):
            if b.shape != a.shape:
                return path
            a = a.to(b.device)
            if not torch.equal(b, a) and not _equal_with_nan(b, a):
                return path
    return None


def _equal_with_nan(b: torch.Tensor, a: torch.Tensor) -> bool:
    """Equal, NaN where NaN was (a NaN input compares equal to itself; a value written over with NaN does not)."""
    if not (b.is_floating_point() or b.is_complex()):
        return False
    b, a = parts(b), parts(a)
    nan = torch.isnan(b)
    return torch.equal(nan, torch.isnan(a)) and torch.equal(torch.where(nan, 0, b), torch.where(nan, 0, a))
