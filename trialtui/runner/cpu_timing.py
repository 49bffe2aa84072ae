"""Without a GPU: three host-timed calls in the candidate's process, a CPU figure labelled as such, never a
GPU number."""

from __future__ import annotations

import time
from typing import Any

import torch

from trialtui.core.job_spec import BenchSpec
from trialtui.core.result import CPU_TIMING_LABEL
from trialtui.runner.candidate_requests import CandidateFailed, CandidateLink
from trialtui.runner.judging import TimedNorm, check_timed, timing_truth
from trialtui.runner.tensors import clone, nbytes
from trialtui.runner.timing import CONFIRM_SLACK_US, Band, confirmed_stats, summarize

# On the CPU one request holds the three calls and its reply: the samples stand unless under a tenth of the checker's figure (a busy machine stretches the reply, never the calls).
CPU_BAND = Band(CONFIRM_SLACK_US, 0.9)


def cpu_timing(spec: BenchSpec, reference, link: CandidateLink, case, deadline, facts, norm: TimedNorm | None) -> dict[str, Any]:
    """Three host-timed calls in the candidate's process: a CPU figure, labelled as such, never a GPU number.

    Its samples are claims: they stand only where the checker's own clock around the request bears
    them out (runner/timing.py, confirmed_stats); the timed calls' outputs are checked, by the untimed calls' rules
    (`norm`: their normwise bound at this case) included.
    """
    inputs = reference.make_inputs(case, 0)
    call = reference.call(case, 0)
    with torch.no_grad():
        expected = call.fn(clone(inputs))
    payload: dict[str, Any] = {"inputs": inputs, "seed": 0, **call.payload}
    reply, _ = link.request("cpu_prepare", payload, timeout_s=deadline.left())
    facts.see(reply)
    t0 = time.perf_counter()
    reply, outputs = link.request("cpu_time", timeout_s=deadline.left(), max_bytes=2 * 64 * nbytes(expected) + 2**20)
    wall_us = (time.perf_counter() - t0) * 1e6
    facts.see(reply)
    if not isinstance(outputs, list) or len(outputs) != 3:
        raise CandidateFailed("the candidate's process did not send the outputs of its timed calls")
    for where, output in zip(("timed call 1", "timed call 2", "timed call 3"), outputs):
        check_timed(spec, reference, expected, output, inputs, lambda: timing_truth(reference, call, inputs), where, norm)
    samples = [float(x) for x in reply.get("samples") or [] if isinstance(x, (int, float)) and x >= 0][:3] or [0.0]
    stats = confirmed_stats(summarize(samples), [(wall_us, len(samples), samples)], 0.0, CPU_BAND)
    return {**stats, "kernel_us": None, "label": CPU_TIMING_LABEL}

