"""Child job: the Triton trace (runner/triton_trace.py) on its own, outside the compile job that forks it.

`python -m trialtui.runner.trace_job`, its spec a `TraceSpec`; the result is the trace's: launches, the
CPU preview, or the stage that failed and why.
"""

from __future__ import annotations

import sys

from trialtui.core.job_spec import TraceSpec
from trialtui.runner.child import serve
from trialtui.runner.triton_trace import run

if __name__ == "__main__":
    serve(run, sys.argv, spec_type=TraceSpec)
