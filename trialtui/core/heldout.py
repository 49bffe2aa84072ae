"""Held-out cases: inputs a finalized kernel was never checked on, derived from the problem alone.

A kernel tuned against the sizes it can read (trialtui.toml, the reference, task.yml) can learn them:
hard-code the shape, drop the tail a block size does not cover, index rows as if they were packed.
These cases change one size at a time to a value that is no multiple of a common block size (a prime
just above it, one below a power of two under it), lay the inputs out non-contiguously or at an odd
offset, and draw every seed when the check runs. Pure data: the runner makes the inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from trialtui.core.forms import get_form

if TYPE_CHECKING:
    from trialtui.core.problem import Problem


class Layout(str, Enum):
    """How a case's input tensors are laid out in memory (the runner's `runner/layouts.py` makes them)."""

    CONTIGUOUS = "contiguous"
    PADDED = "padded"  # each row inside a wider buffer (a stride over the last dim that is not its size); 1-D: every other element
    OFFSET = "offset"  # packed, but one element into its storage (a pointer not 16-byte aligned)

    @property
    def says(self) -> str:
        return _LAYOUT_SAYS[self]


_LAYOUT_SAYS = {
    Layout.CONTIGUOUS: "contiguous inputs",
    Layout.PADDED: "non-contiguous inputs",
    Layout.OFFSET: "inputs at an unaligned offset",
}


@dataclass(frozen=True)
class HeldOutCase:
    """One held-out check: the full sizes, what differs from the sizes the candidate was checked at, the
    layout and a seed drawn when the check was planned."""

    sizes: dict[str, Any]
    changed: dict[str, int]
    layout: Layout
    seed: int
    why: str

    @property
    def label(self) -> str:
        """`dim=4099`, `non-contiguous inputs at batch_size=37, dim=1500`: what the card names."""
        changed = ", ".join(f"{k}={v}" for k, v in self.changed.items())
        if self.layout is not Layout.CONTIGUOUS:
            return f"{self.layout.says} at {changed or 'the checked sizes'}"
        return changed or f"seed {self.seed} at the checked sizes"

    def to_dict(self) -> dict[str, Any]:
        return {"sizes": self.sizes, "changed": self.changed, "layout": self.layout.value, "seed": self.seed,
                "why": self.why, "label": self.label}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HeldOutCase:
        return cls(dict(data["sizes"]), dict(data.get("changed") or {}), Layout(data.get("layout", "contiguous")),
                   int(data["seed"]), str(data.get("why") or ""))


def is_prime(n: int) -> bool:
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    k = 3
    while k * k <= n:
        if n % k == 0:
            return False
        k += 2
    return True


def prime_above(n: int) -> int:
    """The smallest prime larger than `n`: no multiple of any block size, a tail for every tile."""
    k = n + 1
    while not is_prime(k):
        k += 1
    return k


def below_power_of_two(n: int) -> int | None:
    """One less than the largest power of two under `n` (8192 → 4095, 1500 → 1023), or None below 3."""
    if n < 3:
        return None
    return (1 << ((n - 1).bit_length() - 1)) - 1


def base_case(problem: Problem, on_gpu: bool) -> dict[str, Any]:
    """The sizes held-out cases start from: the first bench case on a GPU, the first test case on the CPU."""
    cases = (problem.bench_cases if on_gpu else problem.test_cases) or [{}]
    return dict(cases[0])


def plan(problem: Problem, on_gpu: bool, draw: Callable[[], int]) -> list[HeldOutCase]:
    """The held-out cases for a problem, most telling first (a budget may stop the run part way).

    `draw` gives the seeds, called now: a seed is never stored before the check that uses it.
    Order: a fresh seed at the checked sizes; each size a prime just above its value (the unmasked
    tail); non-contiguous inputs; each size one below a power of two under its value; an odd offset;
    every size at that smaller value at once. A value any test or bench case already has is skipped.
    """
    settings = problem.config.generalize
    if settings.budget_s <= 0:
        return []
    form = get_form(problem.form)
    base = base_case(problem, on_gpu)
    base = {**form.held_out_sizes(problem, base), **base}  # spelled out: the card names every size
    sizes = {k: v for k, v in form.held_out_sizes(problem, base).items() if k not in settings.fixed}
    known: dict[str, set[int]] = {name: set() for name in sizes}
    for case in problem.test_cases + problem.bench_cases:
        for name, value in form.held_out_sizes(problem, case).items():
            known.setdefault(name, set()).add(value)

    def unseen(name: str, value: int | None) -> int | None:
        return value if value is not None and value not in known[name] else None

    larger = {name: found for name, value in sizes.items() if (found := unseen(name, prime_above(value))) is not None}
    smaller = {name: found for name, value in sizes.items()
               if (found := unseen(name, below_power_of_two(value))) is not None}
    cases: list[HeldOutCase] = []

    def add(changed: dict[str, int], layout: Layout, why: str) -> None:
        cases.append(HeldOutCase({**base, **changed}, changed, layout, draw(), why))

    add({}, Layout.CONTIGUOUS, "a seed drawn now, at the sizes it was checked at")
    for name, value in larger.items():
        add({name: value}, Layout.CONTIGUOUS, f"a prime just above {sizes[name]}: a tail no block size covers")
    add({}, Layout.PADDED, "rows with a stride that is not their length")
    for name, value in smaller.items():
        add({name: value}, Layout.CONTIGUOUS, f"one below a power of two under {sizes[name]}")
    add({}, Layout.OFFSET, "a data pointer that is not 16-byte aligned")
    if len(smaller) > 1:
        add(smaller, Layout.CONTIGUOUS, "every size smaller at once")
    return cases
