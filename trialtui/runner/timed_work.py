"""The timed case's work: the least traffic any kernel must make and the reference's FLOPs, from which the
physical floor of a headline follows (core/roofline.physical_floor)."""

from __future__ import annotations

from typing import Any

import torch

from trialtui.runner.tensors import clone, distinct_bytes


def output_and_bytes(ref_call, inputs) -> tuple[Any, dict[str, float]]:
    """The reference once at the timed size, on `inputs` (a copy it may write): its output (whose layout is the
    timed calls' slots) and the least traffic any kernel must make (every input and weight read once, every
    output written once; each byte once, so an output written into an input's buffer, as GPU MODE's is, counts
    once: runner/tensors.distinct_bytes), and the bytes the output spans (written, wherever its buffer came from)."""
    model = ref_call.model
    weights = list(model.parameters()) + list(model.buffers()) if model is not None else []
    with torch.no_grad():
        output = ref_call.fn(inputs)
    return output, {"flops": 0.0, "min_bytes": float(distinct_bytes(inputs, weights, output)),
                    "written_bytes": float(distinct_bytes(output))}


def flops(ref_call, inputs) -> float:
    """The reference's FLOPs at the timed size, counted by torch; only a candidate faster than every
    baseline asks (no floor lies above a baseline that did the work)."""
    from torch.utils import flop_counter

    _count_without_dynamo(flop_counter)
    with torch.no_grad(), flop_counter.FlopCounterMode(display=False) as counter:
        ref_call.fn(clone(inputs))
    return float(counter.get_total_flops())


def _count_without_dynamo(flop_counter) -> None:
    """torch wraps its counting mode's dispatch so that dynamo never traces it, and that wrapper imports
    torch._dynamo on first use: 5 s on a 2-core CPU, 2.3 s on the H200 (a cold bench of a softmax that
    beat eager spent 3.7 s of its timing phase after its last step, 2026-12-02). Nothing here is compiled, so the wrapper is handed the function
    itself as its dynamo-disabled form (where this torch has the wrapper; else it pays the import)."""
    mode = getattr(flop_counter, "_FlopCounterMode", None)
    raw = getattr(getattr(mode, "__torch_dispatch__", None), "__wrapped__", None)
    if raw is not None and getattr(raw, "__dynamo_disable", None) is None:
        raw.__dynamo_disable = raw
