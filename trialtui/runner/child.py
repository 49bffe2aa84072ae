"""Every child job's entry point: the spec on stdin, the result written to a pipe the supervisor holds.

The spec arrives on stdin and names the result pipe's descriptor (`result_fd`), so neither argv, the
environment nor the working directory holds a path that leads to the result. A warm process
(`--warm`) imports torch and triton first (or the job's own list) and then blocks on stdin until the engine has a job.
The exit skips interpreter teardown: threads a candidate started, or a CUDA context an illegal
access broke, must not keep the result waiting or turn it into a hang.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from trialtui.core.job_spec import JobSpec
from trialtui.core.result import RESULT_VERSION

WARM_FLAG = "--warm"  # the supervisor starts a warm process with it (runner/supervisor.py)
SPEC_COPY = "job-spec.json"


WARM_IMPORTS = ("torch", "triton", "triton.language")


def typed(run: Callable[[Any], dict[str, Any]], spec_type: type[JobSpec], data: dict[str, Any]) -> dict[str, Any]:
    """The job on its spec read once into its type; a spec it cannot read is an error result that names the key."""
    try:
        spec = spec_type.from_wire(data)
    except ValueError as exc:  # the engine and this runner disagree on the spec: say so, rather than guess
        return {"version": RESULT_VERSION, "state": "error", "message": f"the job's spec: {exc}"}
    return run(spec)


def read_spec(argv: list[str], prewarm: Callable[[], None] | None = None,
              prepare: Callable[[dict[str, Any]], None] | None = None,
              warm_imports: tuple[str, ...] = WARM_IMPORTS) -> tuple[dict[str, Any], int]:
    """The job's spec and its result descriptor; stdin is left on /dev/null for the job's own code.

    A warm process imports torch and triton, and runs the job's `prewarm` (the checker starts its
    candidate's process), before it blocks on stdin. Lines `{"prepare": {...}, "progress": ...}` that
    come before the spec (the engine sends them while the lane is idle) go to the job's `prepare`; the
    spec is last."""
    if WARM_FLAG in argv[1:]:
        import importlib

        for name in warm_imports:  # the job's own list: the compile job must not import triton before its fork
            importlib.import_module(name)
        if prewarm is not None:
            prewarm()
    spec = None
    for line in iter(sys.stdin.buffer.readline, b""):
        message = json.loads(line)
        if isinstance(message, dict) and "prepare" in message:
            if prepare is not None and isinstance(message["prepare"], dict):
                prepare(message)
            continue
        spec = message
    if not isinstance(spec, dict):
        sys.exit("no job spec on stdin: child jobs are started by trialtui's supervisor")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    result_fd = int(spec.pop("result_fd"))
    # profile_job hands the problem to a grandchild under ncu, which reads it from a file
    Path(SPEC_COPY).write_text(json.dumps({k: v for k, v in spec.items() if k != "progress"}))
    spec["spec_path"] = str(Path(SPEC_COPY).resolve())
    return spec, result_fd


def serve(run: Callable[[Any], dict[str, Any]], argv: list[str],
          prewarm: Callable[[], None] | None = None,
          prepare: Callable[[dict[str, Any]], None] | None = None,
          warm_imports: tuple[str, ...] = WARM_IMPORTS, spec_type: type[JobSpec] | None = None) -> None:
    """Run the job on its spec, read into `spec_type` where it has one (every job of trialtui's; a
    plug-in's may read the JSON itself), and write its result."""
    data, result_fd = read_spec(argv, prewarm, prepare, warm_imports)
    result = run(data) if spec_type is None else typed(run, spec_type, data)
    data = json.dumps(result, default=str).encode()
    while data:
        data = data[os.write(result_fd, data):]
    os.close(result_fd)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
