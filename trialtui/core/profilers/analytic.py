"""The analytic profiler: nothing runs; the roofline against the measured time and the compile
facts give the verdicts. Always available, so it is the last resort on any machine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trialtui.core import plugins
from trialtui.core.model import Verdict
from trialtui.core.verdicts import Context, verdicts_from_analytic


class AnalyticProfiler:
    name = "analytic"
    label = "the roofline and compile facts (no profiler run)"
    rank = 0
    job = None
    timeout_s = 0.0

    def unavailable(self, device: str) -> str | None:
        return None

    def spec(self, report: str) -> dict[str, Any]:
        return {}

    def verdicts(self, body: Mapping[str, Any], context: Context, facts: dict[str, Any] | None) -> list[Verdict]:
        return verdicts_from_analytic(context, facts)

    def kernels(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        return []

    def dominant(self, body: Mapping[str, Any]) -> dict[str, Any] | None:
        return None


plugins.register("trialtui.profilers", AnalyticProfiler.name, AnalyticProfiler())
