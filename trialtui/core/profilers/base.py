"""The Profiler type: what a profiler plug-in tells the engine and the UI.

A profiler is pure: it says whether it can run here, which child job runs it (a module under
`trialtui.runner`, or a third party's, started like every job so user kernels stay in child
processes), and how the body that job returns becomes verdicts and a kernel list. The engine
runs the best available one (highest `rank`) and records its `name` as the profile's `source`.

A job's body holds at least `available` (bool) and, when false, `reason`; `blocked: true` means
the reason holds for the whole machine (the engine then skips this profiler for the session).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from trialtui.core.model import Verdict
from trialtui.core.verdicts import Context

if TYPE_CHECKING:
    from trialtui.core.job_spec import ProfileSpec
    from trialtui.core.problem import Problem

GROUP = "trialtui.profilers"


@runtime_checkable
class Profiler(Protocol):
    name: str  # registry key and the profile's `source`; also Verdict.source of its verdicts
    label: str  # what the UI and the CLI call its numbers
    rank: int  # preference among the available ones: higher first
    job: str | None  # the child job's module (`python -m <job>`), or None when nothing runs
    timeout_s: float

    def unavailable(self, device: str) -> str | None:
        """Why it cannot run on this machine ("cuda" or "cpu"), or None when it can."""

    def spec(self, problem: Problem, candidate: str, report: str) -> ProfileSpec:
        """Its job's spec for the candidate's file (`report`: a path stem under .trialtui/profiles/ for
        files worth keeping); a third party's job subclasses ProfileSpec for keys of its own."""

    def verdicts(self, body: Mapping[str, Any], context: Context, facts: dict[str, Any] | None) -> list[Verdict]:
        """Verdicts from an available body; `facts` is the compile job's entry for the kernel."""

    def kernels(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Per-kernel rows for the raw view: `name`, optional `duration_ns`, `launches`, `grid`,
        `block`, `metrics` (name → value) and `rules` (NVIDIA's, for ncu)."""

    def dominant(self, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """The kernel row whose verdicts matter most (the longest), or None."""
