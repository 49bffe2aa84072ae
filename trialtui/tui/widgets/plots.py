"""Small plots drawn with Unicode braille and block characters: no plotting dependency.

textual-plotext was measured against these at 2,000 trials (benches/tui.py, BENCHMARKS.md): it
costs more CPU at every plot (about 6 ms more per key press) and fits the history pane worse.

SpeedupHistory: every GPU result's speedup with the best-so-far step line and the 1.00× line.
TimingSpread: the selected trial's min/p20/median/p80 beside its baselines', on one scale.
RooflinePlot: the trial on its GPU's memory and compute roofs (log-log), with the ridge point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from trialtui.core.model import Trial, TrialState
from trialtui.core.text import fmt_us
from trialtui.tui import describe
from trialtui.tui.cut import cut
from trialtui.tui.palette import Themed

_DOTS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row][col] within a cell


class BrailleCanvas:
    """A grid of braille cells, 2×4 dots each; each cell takes the colour of its top layer."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = max(1, width), max(1, height)
        self.bits = [[0] * self.width for _ in range(self.height)]
        self.layer = [[-1] * self.width for _ in range(self.height)]

    @property
    def dots(self) -> tuple[int, int]:
        return self.width * 2, self.height * 4

    def point(self, x: float, y: float, layer: int = 0) -> None:
        """Dot (x, y), y counted from the bottom."""
        xi, yi = round(x), round(y)
        w, h = self.dots
        if not (0 <= xi < w and 0 <= yi < h):
            return
        row = self.height - 1 - yi // 4
        col = xi // 2
        self.bits[row][col] |= _DOTS[3 - yi % 4][xi % 2]
        self.layer[row][col] = max(self.layer[row][col], layer)

    def line(self, x0: float, y0: float, x1: float, y1: float, layer: int = 0, step: int = 1) -> None:
        n = max(1, int(max(abs(x1 - x0), abs(y1 - y0))))
        for i in range(0, n + 1, step):
            t = i / n
            self.point(x0 + (x1 - x0) * t, y0 + (y1 - y0) * t, layer)

    def rows(self, styles: list[Style]) -> list[Text]:
        lines = []
        for bits, layers in zip(self.bits, self.layer):
            text = Text(no_wrap=True)
            for b, layer in zip(bits, layers):
                text.append(chr(0x2800 + b) if b else " ", styles[layer] if b and layer >= 0 else Style())
            lines.append(text)
        return lines


class Plot(Themed, Widget):
    """A plot re-renders from its data at whatever size it is given."""

    DEFAULT_CSS = "Plot { height: auto; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._drawn: tuple[tuple, Text] | None = None

    def draw(self) -> Text:
        """The plot at the current width; subclasses draw, render() caches."""
        raise NotImplementedError

    def _key(self) -> tuple:
        return (self.size.width, self.size.height, self.app.theme)

    def render(self) -> Text:
        key = self._key()
        if self._drawn is None or self._drawn[0] != key:
            self._drawn = (key, self.draw())
        return self._drawn[1]

    def _repaint(self) -> None:
        """A layout pass only when the plot's height changes: the usual update is a repaint."""
        self._drawn = None
        lines = len(self.render().plain.splitlines()) if self.size.width else -1
        self.refresh(layout=lines != self.size.height)


    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._repaint())


@dataclass(frozen=True)
class Point:
    trial_id: str
    speedup: float | None  # None: a GPU trial that failed
    best_so_far: float | None


class SpeedupHistory(Plot):
    """Speedup of every GPU-timed trial in save order, and the best so far as a step line."""

    DEFAULT_CSS = "SpeedupHistory { height: 7; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.points: list[Point] = []
        self.baseline = "eager"
        self.gpu = ""
        self.cpu = False

    def update(self, trials: list[Trial], baseline: str, cpu: bool) -> None:
        self.baseline, self.cpu = baseline, cpu
        points, top = [], None
        for trial in trials:
            state = trial.state_enum
            speed = trial.speedup(baseline)
            if speed is not None:
                top = speed if top is None else max(top, speed)
                points.append(Point(trial.id, speed, top))
                self.gpu = describe.measured_on(trial.result)
            elif state in (TrialState.INCORRECT, TrialState.ERROR, TrialState.TIMEOUT) and not describe.cpu_run(trial):
                if trial.result and (trial.result.env or {}).get("device") == "cuda":
                    points.append(Point(trial.id, None, top))
        self.points = points
        self.border_subtitle = self.gpu
        self._drawn = None
        self.refresh()

    def draw(self) -> Text:
        width, height = self.size.width, self.size.height
        title = Text(f"speedup vs {self.baseline}", style=Style(bold=True))
        speeds = [p.speedup for p in self.points if p.speedup is not None]
        if not speeds:
            why = ("CPU interpreter: correctness only, no speedups to plot" if self.cpu
                   else "no GPU speedups yet: the plot starts with the first correct GPU result")
            title.append(f"  {why}", self.color("trial-muted"))
            return title
        top = max(p.best_so_far or 0 for p in self.points)
        title.append(f"  best {top:.2f}×", self.color("trial-best", bold=True))
        title.append(f"  {len(speeds)} timed", self.color("trial-muted"))
        axis = 7
        chart_h = max(1, height - 1)
        canvas = BrailleCanvas(width - axis, chart_h)
        dot_w, dot_h = canvas.dots
        lo = min(min(speeds), 1.0) * 0.9
        hi = max(max(speeds), 1.0) * 1.05
        span = hi - lo or 1.0

        def y_of(value: float) -> float:
            return (value - lo) / span * (dot_h - 1)

        n = len(self.points)

        def x_of(i: int) -> float:
            return 0 if n == 1 else i * (dot_w - 1) / (n - 1)

        canvas.line(0, y_of(1.0), dot_w - 1, y_of(1.0), layer=0, step=3)
        prev = None
        for i, p in enumerate(self.points):
            if p.best_so_far is not None:
                x, y = x_of(i), y_of(p.best_so_far)
                if prev is not None:
                    canvas.line(prev[0], prev[1], x, prev[1], layer=1)
                    canvas.line(x, prev[1], x, y, layer=1)
                prev = (x, y)
        if prev is not None:
            canvas.line(prev[0], prev[1], dot_w - 1, prev[1], layer=1)
        for i, p in enumerate(self.points):
            if p.speedup is None:
                canvas.point(x_of(i), 0, layer=3)
            else:
                canvas.point(x_of(i), y_of(p.speedup), layer=2)
                canvas.point(x_of(i), y_of(p.speedup) + 1, layer=2)
        styles = [self.color("trial-muted"), self.color("trial-best"), self.color("success"), self.color("trial-failure")]
        rows = canvas.rows(styles)
        out = Text("\n").join([title, *[self._axis(i, chart_h, lo, hi, axis) + row for i, row in enumerate(rows)]])
        out.no_wrap, out.overflow = True, "ellipsis"  # a narrow pane cuts the title, never adds a line
        return out

    def _axis(self, row: int, rows: int, lo: float, hi: float, width: int) -> Text:
        if row == 0:
            label = f"{hi:.2f}×"
        elif row == rows - 1:
            label = f"{lo:.2f}×"
        else:
            label = ""
        return Text(label.rjust(width - 1) + "┤" if label else " " * (width - 1) + "│", self.color("trial-muted"))


class TimingSpread(Plot):
    """min ├── p20 ▐███┃███▌ p80 for the trial and each baseline, on one axis."""

    DEFAULT_CSS = "TimingSpread { height: auto; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.trial: Trial | None = None

    def show(self, trial: Trial | None) -> None:
        self.trial = trial
        self._repaint()

    def _rows(self) -> list[tuple[str, dict[str, Any], str]]:
        trial = self.trial
        if trial is None or trial.gpu_timing is None:
            return []
        rows = [(trial.id, trial.gpu_timing, "trial-running")]
        for kind, base in ((trial.result.baselines if trial.result else None) or {}).items():
            if base.get("median_us") is not None:
                rows.append((kind, base, "trial-muted"))
        return rows

    def draw(self) -> Text:
        trial = self.trial
        rows = self._rows()
        if trial is None:
            return Text("")
        if not rows:
            why = describe.CPU_CORRECT if describe.cpu_run(trial) else "no GPU timing for this trial"
            return Text(f"timing  {why}", self.color("trial-muted"))
        values = [v for _, t, _ in rows for v in (t.get("min_us"), t.get("p20_us"), t.get("median_us"),
                                                   t.get("p80_us")) if v is not None]
        lo, hi = min(values), max(values)
        pad = (hi - lo) * 0.05 or hi * 0.05 or 1.0
        lo, hi = lo - pad, hi + pad
        name_w, num_w = 8, 11
        width = max(10, self.size.width - name_w - num_w - 1)

        def col(v: float) -> int:
            return min(width - 1, max(0, round((v - lo) / (hi - lo) * (width - 1))))

        title = Text("timing  ", Style(bold=True))
        title.append("├─ min  █ p20–p80  ┃ median", self.color("trial-muted"))
        lines = [title]
        for name, t, var in rows:
            cells = [" "] * width
            styles = [Style()] * width
            med = t.get("median_us")
            p20, p80, low = t.get("p20_us", med), t.get("p80_us", med), t.get("min_us", med)
            for c in range(col(low), col(p20)):
                cells[c], styles[c] = "─", self.color("trial-muted")
            cells[col(low)] = "├"
            for c in range(col(p20), col(p80) + 1):
                cells[c], styles[c] = "█", self.color(var)
            cells[col(med)], styles[col(med)] = "┃", self.color("foreground", bold=True, bgcolor=None)
            line = Text(f"{cut(name, name_w - 1):<{name_w}}", Style(bold=name == trial.id))
            for ch, st in zip(cells, styles):
                line.append(ch, st)
            line.append(f" {fmt_us(med):>{num_w - 1}}", Style(bold=name == trial.id))
            lines.append(line)
        axis = Text(" " * name_w + fmt_us(lo).ljust(width - len(fmt_us(hi))) + fmt_us(hi), self.color("trial-muted"))
        lines.append(axis)
        return Text("\n").join(lines)


def roofline_of(trial: Trial) -> dict[str, Any] | None:
    """The trial's roofline (core.roofline.Roofline as a dict), from its profile or its result."""
    for roof in (trial.profile.extra.get("roofline") if trial.profile else None,  # a profiler's own
                 trial.result.roofline if trial.result else None):
        if isinstance(roof, dict) and roof.get("hbm_gbps"):
            return roof
    return None


def achieved(trial: Trial, roof: dict[str, Any]) -> tuple[float | None, float | None]:
    """(useful bytes/s, FLOP/s) at the trial's median GPU time: minimum traffic and FLOPs over time."""
    us = trial.median_us
    if not us:
        return None, None
    seconds = us * 1e-6
    bandwidth = (roof.get("min_bytes") or 0) / seconds or None
    flops = (roof.get("flops") or 0) / seconds or None
    return bandwidth, flops


def si(value: float, unit: str) -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


class RooflinePlot(Plot):
    """Where the trial sits under its GPU's roofs; a bandwidth gauge when it does no FLOPs that count."""

    DEFAULT_CSS = "RooflinePlot { height: auto; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.trial: Trial | None = None

    def show(self, trial: Trial | None) -> None:
        self.trial = trial
        self._repaint()

    def draw(self) -> Text:
        trial = self.trial
        if trial is None:
            return Text("")
        roof = roofline_of(trial)
        title = Text("roofline  ", Style(bold=True))
        if roof is None:
            title.append("no roofline yet: it comes with the profile (p profiles now)", self.color("trial-muted"))
            return title
        if trial.median_us is None:
            title.append(describe.CPU_CORRECT if describe.cpu_run(trial) else "no GPU timing for this trial",
                         self.color("trial-muted"))
            return title
        bandwidth, flops = achieved(trial, roof)
        peak_bw = roof["hbm_gbps"] * 1e9
        where = f"{roof.get('gpu', '?')} {roof.get('source', 'datasheet')}"
        if not roof.get("flops") or not roof.get("intensity"):
            title.append(f"memory roof {si(peak_bw, 'B/s')} ({where})", self.color("trial-muted"))
            frac = (bandwidth or 0) / peak_bw
            width = max(10, self.size.width - 24)
            gauge = Text("bytes   ")
            gauge.append(describe.bar(frac, width), self.color("trial-running"))
            gauge.append(f" {si(bandwidth or 0, 'B/s')} {frac:.0%}", Style(bold=True))
            return Text("\n").join([title, gauge])
        return self._loglog(trial, roof, title, flops or 0.0, where)

    def _loglog(self, trial: Trial, roof: dict[str, Any], title: Text, flops: float, where: str) -> Text:
        peak_bw = roof["hbm_gbps"] * 1e9
        peak = (roof.get("peak_tflops") or 0) * 1e12 or None
        intensity = roof["intensity"]
        ridge = roof.get("ridge") or (peak / peak_bw if peak else None)
        roof_at = min(peak_bw * intensity, peak) if peak else peak_bw * intensity
        frac = flops / roof_at if roof_at else 0
        title.append(f"{trial.id} at {intensity:.3g} FLOP/B: {si(flops, 'FLOP/s')}, {frac:.0%} of the roof "
                     f"({roof.get('compute_dtype', '')} {where})", self.color("trial-muted"))
        xs = [intensity, ridge or intensity]
        x_lo = 10 ** math.floor(math.log10(min(xs)) - 0.5)
        x_hi = 10 ** math.ceil(math.log10(max(xs)) + 0.5)
        y_hi = (peak or peak_bw * x_hi) * 1.5
        y_lo = min(flops or y_hi, peak_bw * x_lo) / 2
        axis = 9
        canvas = BrailleCanvas(max(10, self.size.width - axis), 7)
        dot_w, dot_h = canvas.dots

        def px(x: float) -> float:
            return (math.log10(x) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo)) * (dot_w - 1)

        def py(y: float) -> float:
            y = max(y, y_lo)
            return (math.log10(y) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo)) * (dot_h - 1)

        steps = dot_w
        for i in range(steps):
            x = 10 ** (math.log10(x_lo) + i / (steps - 1) * (math.log10(x_hi) - math.log10(x_lo)))
            y = min(peak_bw * x, peak) if peak else peak_bw * x
            canvas.point(px(x), py(y), layer=0)
        if ridge:
            canvas.line(px(ridge), 0, px(ridge), py(peak or peak_bw * ridge), layer=1, step=2)
        if flops:
            for dx in (-1, 0, 1):
                for dy in (-1, 0, 1):
                    canvas.point(px(intensity) + dx, py(flops) + dy, layer=2)
        rows = canvas.rows([self.color("trial-muted"), self.color("trial-muted"), self.color("trial-best")])
        labels = {0: si(y_hi, "F/s"), len(rows) - 1: si(y_lo, "F/s")}
        out = [title]
        for i, row in enumerate(rows):
            out.append(Text(labels.get(i, "").rjust(axis - 1) + "│", self.color("trial-muted")) + row)
        ridge_text = f"ridge {ridge:.3g} FLOP/B" if ridge else "no compute roof for this dtype"
        out.append(Text(" " * axis + f"{x_lo:.3g} … {x_hi:.3g} FLOP/B (log)   {ridge_text}", self.color("trial-muted")))
        return Text("\n").join(out)
