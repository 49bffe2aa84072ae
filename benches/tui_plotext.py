"""The TUI's three plots drawn with textual-plotext instead of trialtui's braille canvas (issue 18, point 8).

benches/tui.py swaps these in (`--plots plotext`) to measure the library at 2,000 trials against the
hand-written widgets in trialtui/tui/widgets/plots.py: same data, same updates, same places on screen.
"""

from __future__ import annotations

from textual.color import Color
from textual_plotext import PlotextPlot

from trialtui.core.model import Trial, TrialState
from trialtui.tui import describe
from trialtui.tui.widgets.plots import achieved, roofline_of


class LibraryPlot(PlotextPlot):
    """A PlotextPlot coloured from the app's theme variables, like the hand-written plots."""

    def rgb(self, var: str) -> tuple[int, int, int]:
        variables = self.app.theme_variables
        return Color.parse(variables.get(var) or variables.get("foreground", "white")).rgb

    def fresh(self) -> None:
        self.plt.clear_figure()


class SpeedupHistory(LibraryPlot):
    """Every GPU result's speedup as a scatter, the best so far as a step line, the 1.00× line."""

    DEFAULT_CSS = "SpeedupHistory { height: 7; width: 1fr; }"

    def update(self, trials: list[Trial], baseline: str, cpu: bool) -> None:
        xs, speeds, best_x, best_y, failed, top = [], [], [], [], [], None
        gpu = ""
        for i, trial in enumerate(trials):
            speed = trial.speedup(baseline)
            if speed is not None:
                if top is not None and speed > top:  # the step: across at the old best, then up
                    best_x.append(i)
                    best_y.append(top)
                top = speed if top is None else max(top, speed)
                xs.append(i)
                speeds.append(speed)
                best_x.append(i)
                best_y.append(top)
                gpu = describe.measured_on(trial.result)
            elif (trial.state_enum in (TrialState.INCORRECT, TrialState.ERROR, TrialState.TIMEOUT)
                  and not describe.cpu_run(trial) and (trial.result or {}).get("env", {}).get("device") == "cuda"):
                failed.append(i)
        self.border_subtitle = gpu
        self.fresh()
        plt = self.plt
        if not speeds:
            plt.title("CPU interpreter: correctness only, no speedups to plot" if cpu
                      else "no GPU speedups yet: the plot starts with the first correct GPU result")
        else:
            plt.title(f"speedup vs {baseline}  best {top:.2f}×  {len(speeds)} timed")
            plt.hline(1.0, self.rgb("trial-muted"))
            plt.plot(best_x, best_y, marker="braille", color=self.rgb("trial-best"))
            plt.scatter(xs, speeds, marker="braille", color=self.rgb("success"))
            if failed:
                plt.scatter(failed, [min(min(speeds), 1.0) * 0.9] * len(failed), marker="braille",
                            color=self.rgb("trial-failure"))
            plt.xticks([])
        self.refresh()


class TimingSpread(LibraryPlot):
    """min–p80 as a line and the median as a marker, for the trial and each baseline, on one axis."""

    DEFAULT_CSS = "TimingSpread { height: 9; width: 1fr; }"

    def show(self, trial: Trial | None) -> None:
        self.fresh()
        plt = self.plt
        rows = []
        if trial is not None and trial.gpu_timing is not None:
            rows.append((trial.id, trial.gpu_timing, "trial-running"))
            for kind, base in ((trial.result or {}).get("baselines") or {}).items():
                if base.get("median_us") is not None:
                    rows.append((kind, base, "trial-muted"))
        if trial is not None and not rows:
            plt.title("timing  " + (describe.CPU_CORRECT if describe.cpu_run(trial) else "no GPU timing for this trial"))
        for y, (name, t, var) in enumerate(rows):
            med = t["median_us"]
            low, p20, p80 = t.get("min_us", med), t.get("p20_us", med), t.get("p80_us", med)
            plt.plot([low, p20], [y, y], marker="braille", color=self.rgb("trial-muted"))
            plt.plot([p20, p80], [y, y], marker="hd", color=self.rgb(var))
            plt.scatter([med], [y], marker="┃", color=self.rgb("foreground"))
        if rows:
            plt.title("timing  min–p20 · p20–p80 ┃ median (µs)")
            plt.yticks(list(range(len(rows))), [name for name, _, _ in rows])
            plt.ylim(-0.5, len(rows) - 0.5)
        self.refresh()


class RooflinePlot(LibraryPlot):
    """The trial on its GPU's memory and compute roofs, log-log, with the ridge point."""

    DEFAULT_CSS = "RooflinePlot { height: 10; width: 1fr; }"

    def show(self, trial: Trial | None) -> None:
        self.fresh()
        plt = self.plt
        roof = roofline_of(trial) if trial is not None else None
        if trial is not None and roof is None:
            plt.title("roofline  no roofline yet: it comes with the profile (p profiles now)")
        elif roof is not None and roof.get("intensity"):
            _, flops = achieved(trial, roof)
            peak_bw = roof["hbm_gbps"] * 1e9
            peak = (roof.get("peak_tflops") or 0) * 1e12 or None
            intensity = roof["intensity"]
            ridge = roof.get("ridge") or (peak / peak_bw if peak else intensity)
            lo, hi = min(intensity, ridge) / 10, max(intensity, ridge) * 10
            xs = [lo * (hi / lo) ** (i / 63) for i in range(64)]
            plt.xscale("log")
            plt.yscale("log")
            plt.plot(xs, [min(peak_bw * x, peak) if peak else peak_bw * x for x in xs], marker="braille",
                     color=self.rgb("trial-muted"))
            plt.vline(ridge, self.rgb("trial-muted"))
            if flops:
                plt.scatter([intensity], [flops], marker="●", color=self.rgb("trial-best"))
            plt.title(f"roofline  {trial.id} at {intensity:.3g} FLOP/B ({roof.get('gpu', '?')})")
        self.refresh()
