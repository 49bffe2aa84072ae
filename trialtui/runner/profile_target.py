"""The program ncu profiles: warm the candidate up, then run it once inside the NVTX range.

`python -m trialtui.runner.profile_target SPEC.json` (started by profile_job under ncu, the spec its
`NcuSpec`'s copy). Warm-up runs outside the range so JIT compilation and autotuning never reach the counters.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

import torch

from trialtui.core.job_spec import NcuSpec, ProfileSpec
from trialtui.runner.loader import Candidate, Reference, build_pair
from trialtui.runner.profile_range import RANGE

WARMUP = 3  # calls before the measured ones: JIT compiles and autotuning stay outside


def prepared(spec: ProfileSpec) -> tuple[Callable[[Any], Any], Callable[[Any], Any], Any]:
    """The reference's and the candidate's calls on the GPU at the spec's bench case, and its inputs
    (seed 0): what every profiler job runs."""
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = spec.allow_tf32
    wire = spec.to_wire()
    reference = Reference(wire, "cuda")
    candidate = Candidate(wire, spec.candidate, reference)
    case = spec.bench_cases[spec.case]
    reference_run, run = build_pair(reference, candidate, case, 0)
    return reference_run, run, reference.make_inputs(case, 0)


def main(argv: list[str]) -> int:
    _, run, inputs = prepared(NcuSpec.from_wire(json.loads(Path(argv[1]).read_text())))
    with torch.no_grad():
        for _ in range(WARMUP):
            run(inputs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(RANGE)
        run(inputs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
