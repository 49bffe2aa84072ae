"""`trialtui profile`'s answer as a type (issue 35): what engine/profile.py's `profile_candidate` gives the CLI,
read by field there and by `render_verdicts`; `to_json` is key for key what `--json` printed as a dict."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trialtui.core.model import Verdict
from trialtui.core.profile_result import ProfileResult


@dataclass(frozen=True)
class ProfileReport:
    """The check's state, then, only for a correct candidate, its verdicts and whose numbers they read."""

    state: str  # the check's (the bench result's): only "correct" carries verdicts
    env: dict[str, Any] | None  # where the candidate ran (the bench result's env)
    message: str | None = None  # why it is not correct
    analytic: bool = False  # the verdicts are the roofline's and the compile's: no profiler read the kernel
    label: str | None = None  # whose numbers the verdicts are, and why better profilers gave none
    profile: ProfileResult | None = None  # the profiler's body, without its log tail
    verdicts: list[Verdict] = field(default_factory=list)  # most severe first
    sol: float | None = None  # the fraction of speed-of-light; None when nothing was timed
    roofline: dict[str, Any] | None = None  # the roofline at the ceilings of `gpu`
    median_us: float | None = None  # the candidate's median; None on the CPU
    gpu: str | None = None  # the GPU whose ceilings the verdicts used (the one it ran on, or --gpu)
    reused_from: str | None = None  # the stored trial whose correct result stood in for a second benchmark
    phases_s: dict[str, float] = field(default_factory=dict)  # seconds per step of the command
    library: dict[str, Any] | None = None  # its own kernels' share of the GPU time from the records (KernelSplit)

    @property
    def correct(self) -> bool:
        return self.state == "correct"

    def to_json(self) -> dict[str, Any]:
        """The JSON `trialtui profile --json` prints: for a candidate that is not correct, its state only."""
        if not self.correct:
            return {"state": self.state, "message": self.message, "env": self.env}
        return {"state": self.state, "analytic": self.analytic, "label": self.label,
                "profile": self.profile.to_json() if self.profile is not None else None, "verdicts": [v.to_dict() for v in self.verdicts],
                "sol": self.sol, "roofline": self.roofline, "median_us": self.median_us, "env": self.env,
                "gpu": self.gpu, "reused_from": self.reused_from, "phases_s": self.phases_s, "library": self.library}
