"""Timed calls get inputs no earlier call had: a kept answer is an answer to another input.

The checker and the candidate's process build each call's input from the same draw (runner/canaries.py);
the timed call's quick check accepts only what the full judge would (compare.close_at_once).
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from trialtui.runner import canaries  # noqa: E402
from trialtui.runner.compare import close_at_once  # noqa: E402


def sets_of(*shapes):
    return [[torch.randn(*shape), torch.arange(7)] for shape in shapes]


def test_every_call_of_a_batch_sees_the_input_the_checker_rebuilds_and_the_sets_come_back_untouched():
    sets = sets_of((64, 33), (64, 33))
    untouched = [[t.clone() for t in s] for s in sets]
    draw = canaries.Draw.make(2026, 11, sets[0][0].numel())
    targets = canaries.Targets()
    writer = canaries.Writer(sets, draw, targets)
    seen = []
    for call in range(11):
        writer.before(call)
        rebuilt = canaries.input_of(untouched[call % 2], draw, call, canaries.Targets())
        assert torch.equal(rebuilt[0], sets[call % 2][0]) and torch.equal(rebuilt[1], sets[call % 2][1])
        seen.append(rebuilt[0].clone())
    writer.restore()
    assert all(torch.equal(a[0], b[0]) for a, b in zip(sets, untouched))
    # no two calls had the same input, and none had the set as the untimed calls saw it
    assert all(not torch.equal(seen[i], seen[j]) for i in range(11) for j in range(i))
    assert all(not torch.equal(x, untouched[i % 2][0]) for i, x in enumerate(seen))


def test_a_memo_of_the_untimed_answer_is_wrong_for_a_timed_call():
    x = torch.randn(16, 257)
    kept = torch.softmax(x, -1)  # what a memoizing kernel hands back: its answer from the untimed calls
    draw = canaries.Draw.make(7, 2, x.numel())
    timed = canaries.input_of([x], draw, 1, canaries.Targets())[0]
    assert not close_at_once(torch.softmax(timed, -1), kept, 1e-5, 1e-5)


def test_the_values_put_in_come_from_the_tensor_itself_and_integer_tensors_are_never_touched():
    x = torch.rand(4096) + 1.0  # a domain: every value in [1, 2)
    rebuilt = canaries.input_of([x, torch.arange(5)], canaries.Draw.make(3, 1, x.numel()), 0, canaries.Targets())
    assert rebuilt[0].min() >= 1.0 and rebuilt[0].max() < 2.0 and torch.equal(rebuilt[1], torch.arange(5))
    assert canaries.target([torch.arange(100)]) is None


def test_the_quick_check_passes_only_what_is_within_the_tolerance_in_the_same_structure():
    a = torch.arange(6.0).reshape(2, 3) + 1
    assert close_at_once((a, [a.clone(), 3]), (a.clone(), [a.clone() + 1e-7, 3]), 1e-5, 1e-5)
    assert not close_at_once(a, a + 1e-3, 1e-5, 1e-5)
    assert not close_at_once(a, a.double(), 1e-5, 1e-5)
    assert not close_at_once(a, a.reshape(3, 2), 1e-5, 1e-5)
    assert not close_at_once(a, [a], 1e-5, 1e-5)
    assert not close_at_once(a, a.clone().fill_(math.nan), 1e-5, 1e-5)
    cuda_like = a.clone()
    cuda_like.sent_from_device = "cuda"
    assert not close_at_once(a, cuda_like, 1e-5, 1e-5)


def test_a_tensor_too_small_for_distinct_positions_gets_fewer_canaries_or_none():
    assert [len(p) for p in canaries.Draw.make(1, 40, 100).positions] == [2] * 40
    assert canaries.Draw.make(1, 40, 39) is None


class FakeEvent:
    def record(self):
        pass

    def elapsed_time(self, end):
        return 0.1


class FakeBencher:
    """time_round as runner/timing.Bencher does it, without CUDA events (the calls run on the CPU)."""

    def time_round(self, calls, outputs=None):
        pairs = []
        for fn in calls:
            out = fn()
            if outputs is not None:
                outputs.append(out)
            pairs.append((FakeEvent(), FakeEvent()))
        return pairs


@pytest.mark.parametrize("forward", [lambda x: x, lambda x: x * 2, lambda x: torch.softmax(x, -1)],
                         ids=["returns-its-input", "elementwise", "softmax"])
def test_the_timed_calls_a_checker_checks_are_the_answers_to_the_inputs_it_rebuilds(monkeypatch, forward):
    """The candidate's side of a timed batch (candidate.Session.op_time) against the checker's
    (canaries.input_of): a passthrough's kept output is its input as that call saw it, not as the
    batch left it (on the H200 returns_input.py was 'incorrect when timed' until it was)."""
    from trialtui.runner.candidate import Session

    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    sets = [[torch.randn(8, 64)], [torch.randn(8, 64)]]
    untouched = [[t.clone() for t in s] for s in sets]
    session = Session(channel=None)
    session.input_sets = sets
    session.canary_targets = canaries.Targets()
    session.calls = [(lambda inputs=inputs: forward(inputs[0])) for inputs in sets]
    session.bencher = FakeBencher()
    monkeypatch.setattr(session, "facts", lambda scan=False: {})
    start, n, seed = 2, 10, 99
    reply, kept = session.op_time({"start": start, "n": n, "canaries": seed}, None)
    assert len(reply["samples"]) == n and len(kept) == 2
    draw = canaries.Draw.make(seed, n, sets[0][0].numel())
    for call, output in zip((0, n - 1), kept):
        rebuilt = canaries.input_of(untouched[(start + call) % 2], draw, call, canaries.Targets())
        assert torch.equal(output, forward(rebuilt[0]))
    assert all(torch.equal(a[0], b[0]) for a, b in zip(sets, untouched))  # the sets as they were


@pytest.mark.parametrize("make", [
    lambda: torch.triu(torch.randn(64, 64)),  # a kernel may skip the zero triangle
    lambda: (lambda a: a + a.T)(torch.randn(64, 64)),  # ... or read one half of a symmetric matrix
    lambda: torch.sort(torch.randn(8, 64), -1).values,  # ... or binary-search sorted rows
    lambda: torch.softmax(torch.randn(8, 64), -1),  # ... or rely on rows summing to one
    lambda: (torch.rand(8, 64) > 0.5).float(),  # a mask
    lambda: torch.randint(0, 9, (8, 64)).float(),  # whole numbers: indices or counts stored as floats
    lambda: torch.randn(8, 64).masked_fill(torch.rand(8, 64) < 0.05, float("nan")),  # values that are not finite
])
def test_a_tensor_with_structure_a_kernel_may_rely_on_gets_no_canaries(make):
    tensor = make()
    plain = torch.randn(4, 33)  # smaller, no structure: the one chosen instead
    assert canaries.target([tensor, plain]) is plain
    assert canaries.target([tensor]) is None


def test_plain_random_inputs_get_canaries():
    x = torch.randn(64, 64)
    assert canaries.target([x]) is x


def test_a_set_whose_chosen_tensor_differs_in_size_gets_no_canaries_on_either_side():
    """Sets of one case whose structure test chose different tensors: positions drawn for one never
    index the other (out of range on a GPU is a device-side assert)."""
    big_mask = (torch.rand(64, 64) > 0.5).float()
    sets = [[torch.randn(64, 64), torch.randn(4, 33)], [big_mask, torch.randn(4, 33)]]
    targets = canaries.Targets()
    draw = canaries.Draw.make(5, 4, targets.of(sets[0]).numel())
    writer = canaries.Writer(sets, draw, targets)
    before = [t.clone() for t in sets[1]]
    writer.before(1)  # set 2's call: its chosen tensor is the small one, not what the draw was for
    assert all(torch.equal(a, b) for a, b in zip(sets[1], before))
    assert all(torch.equal(a, b) for a, b in zip(canaries.input_of(sets[1], draw, 1, targets), before))
