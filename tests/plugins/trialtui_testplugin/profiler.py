"""A profiler plug-in: one module and an entry point. It runs no job; its verdicts are the analytic
rules under its own name, so a test can see that the engine picked it and asked it."""

from trialtui.core.verdicts import verdicts_from_analytic


class TestProfiler:
    name = "testprof"
    label = "the test plug-in's profiler"
    rank = 10  # above analytic, below the GPU profilers
    job = None
    timeout_s = 0.0

    def unavailable(self, device):
        return None

    def spec(self, problem, candidate, report):
        raise AssertionError("a profiler without a job is never asked for its spec")

    def verdicts(self, body, context, facts):
        return verdicts_from_analytic(context, facts, source=self.name)

    def kernels(self, body):
        return []

    def dominant(self, body):
        return None


PROFILER = TestProfiler()
