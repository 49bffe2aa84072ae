"""The selected trial in four tabs that stay chosen as the cursor moves: Metrics, Profile, Source, Log.

Only the visible tab is rendered; the others catch up when they are shown. Each number names the
GPU, dtype and sizes it was measured with, and where it came from when not measured here (the
recording, each import); a CPU run shows correctness and no speed.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.style import Style
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static, TabbedContent, TabPane

from trialtui.core import provenance, tree
from trialtui.core.config import Config
from trialtui.core.executor import ran_on
from trialtui.core.model import Trial, TrialState
from trialtui.core.phases import breakdown_lines
from trialtui.core.profilers import get_profiler, source_of
from trialtui.core.store import Store
from trialtui.core.text import fmt_us
from trialtui.tui import describe
from trialtui.tui.palette import Themed
from trialtui.tui.widgets.plots import RooflinePlot, TimingSpread, achieved, roofline_of, si

TABS = ("metrics", "profile", "source", "log")
LOG_TAIL_BYTES = 64 * 1024
_SEVERITY = {"error": ("✗", "trial-failure"), "warning": ("▲", "warning"), "info": ("●", "accent")}


def _span(low: float, high: float) -> str:
    """`193.55–200.43 µs`: two times in one unit."""
    if high >= 1000:
        return f"{low / 1000:.3f}–{high / 1000:.3f} ms"
    return f"{low:.2f}–{high:.2f} µs"


class TrialDetail(Themed, Vertical):
    """Header line plus tabs for one trial; `show` swaps the trial, `refresh_trial` repaints it."""

    def __init__(self, store: Store, config: Config, **kwargs) -> None:
        super().__init__(**kwargs)
        self.store = store
        self.config = config
        self.trial: Trial | None = None
        self.parent_trial: Trial | None = None
        self.best_id: str | None = None
        self.head_ids: set[str] = set()
        self.diff = False
        self.raw = False
        self._fresh: set[str] = set()

    def compose(self) -> ComposeResult:
        yield Static(id="detail-header")
        with TabbedContent(id="tabs", initial="metrics"):
            with TabPane("Metrics", id="metrics"):
                with VerticalScroll(id="metrics-scroll"):
                    yield Static(id="metrics-text")
                    yield TimingSpread(id="timing-plot")
                    yield RooflinePlot(id="roofline-plot")
            with TabPane("Profile", id="profile"):
                with VerticalScroll(id="profile-scroll"):
                    yield Static(id="profile-text")
            with TabPane("Source", id="source"):
                with VerticalScroll(id="source-scroll"):
                    yield Static(id="source-text")
            with TabPane("Log", id="log"):
                with VerticalScroll(id="log-scroll"):
                    yield Static(id="log-text")

    # Driving it

    @property
    def active(self) -> str:
        return self.query_one(TabbedContent).active

    def show(self, trial: Trial | None, parent: Trial | None) -> None:
        changed = self.trial is None or trial is None or trial.id != self.trial.id
        self.trial, self.parent_trial = trial, parent
        self._fresh.clear()
        self._render_header()
        self._render_tab(self.active)
        if changed:
            for scroll in self.query(VerticalScroll):
                scroll.scroll_home(animate=False, immediate=True)

    def refresh_trial(self, trial: Trial, parent: Trial | None = None) -> None:
        """The same trial, newer data (a state change, a result): repaint without moving anything."""
        if self.trial is not None and trial.id == self.trial.id:
            self.trial = trial
            self.parent_trial = parent if parent is not None else self.parent_trial
            self._fresh.clear()
            self._render_header()
            self._render_tab(self.active)

    def set_marks(self, best_id: str | None, head_ids: set[str]) -> None:
        if (best_id, head_ids) != (self.best_id, self.head_ids):
            self.best_id, self.head_ids = best_id, head_ids
            self._render_header()

    def activate(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self._render_tab(tab)

    def toggle_diff(self) -> None:
        self.diff = not self.diff if self.active == "source" else True
        self._fresh.discard("source")
        self.activate("source")

    def toggle_raw(self) -> None:
        self.raw = not self.raw if self.active == "profile" else self.raw
        self._fresh.discard("profile")
        self.activate("profile")

    def reload_log(self) -> None:
        if self.active == "log":
            self._fresh.discard("log")
            self._render_tab("log")

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        event.stop()
        self._render_tab(event.pane.id or "metrics")

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._restyle())

    def _restyle(self) -> None:
        self._fresh.clear()
        self._render_header()
        self._render_tab(self.active)

    # Rendering


    @property
    def baseline(self) -> str:
        return self.config.primary_baseline

    def _render_header(self) -> None:
        header = self.query_one("#detail-header", Static)
        trial = self.trial
        if trial is None:
            header.update(Text("No trial yet: save a candidate file and it appears here.", self.color("trial-muted")),
                          layout=False)
            return
        mark, var = describe.glyph(trial.state_enum)
        best = trial.id == self.best_id
        top = Text(no_wrap=True, overflow="ellipsis")
        top.append(f"{'★' if best else mark} ", self.color("trial-best" if best else var, bold=True))
        top.append(trial.id, Style(bold=True))
        if best:
            top.append(" best", self.color("trial-best", bold=True))
        if trial.id in self.head_ids:
            top.append(" ▸ head", self.color("accent"))
        top.append(f"  {tree.label(trial) or '(no strategy comment)'}", Style(bold=True))
        line = Text(no_wrap=True, overflow="ellipsis")
        state = trial.state_enum
        if state is TrialState.CORRECT:
            line.append(describe.speed_text(trial, self.baseline), self.color("success"))
        elif state.is_failure:
            line.append(f"{state.value}: {describe.failing_check(trial)}",
                        self.color("trial-invalid" if state is TrialState.INVALID else "trial-failure"))
        else:
            line.append(state.value, self.color(var))
        line.append(f" · {trial.file} from {trial.parent or 'nothing (root)'} · saved {describe.saved_at(trial)}",
                    self.color("trial-muted"))
        header.update(Text("\n").join([top, line]), layout=False)  # fixed height: no layout pass

    def _render_tab(self, tab: str) -> None:
        if tab in self._fresh or not self.is_mounted:
            return
        self._fresh.add(tab)
        trial = self.trial
        if tab == "metrics":
            self.query_one("#metrics-text", Static).update(self.metrics(trial) if trial else "")
            timed = trial is not None and trial.state_enum is TrialState.CORRECT and not describe.cpu_run(trial)
            timing, roof = self.query_one(TimingSpread), self.query_one(RooflinePlot)
            timing.display = roof.display = timed
            timing.show(trial if timed else None)
            roof.show(trial if timed else None)
        elif tab == "profile":
            self.query_one("#profile-text", Static).update(self.profile(trial) if trial else "")
        elif tab == "source":
            self.query_one("#source-text", Static).update(self.source(trial) if trial else "")
        elif tab == "log":
            self.query_one("#log-text", Static).update(self.log(trial) if trial else "")

    # Metrics

    def metrics(self, trial: Trial) -> RenderableType:
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(style=self.color("trial-muted"), justify="right", no_wrap=True, width=12)
        grid.add_column(ratio=1)
        result = trial.result or {}
        state = trial.state_enum
        if result:
            here = provenance.measured_here(result)
            grid.add_row(describe.origin_word(result), Text(describe.measured_on(result),
                                                            Style(bold=True) + (Style() if here else self.color("warning"))))
            self._origin_rows(grid, result)
        if ran_on(result):  # off this machine: the host, its GPU and the executor
            grid.add_row("ran on", ran_on(result))
        if state is TrialState.CORRECT and describe.cpu_run(trial):
            grid.add_row("result", Text(describe.CPU_CORRECT, self.color("success")))
        elif state is TrialState.CORRECT:
            self._timing_rows(grid, trial)
        elif state is TrialState.INVALID:
            self._validation_rows(grid, trial)
        elif state in (TrialState.ERROR, TrialState.TIMEOUT):
            grid.add_row(state.value, Text(result.get("message") or "no message (see the Log tab)",
                                           self.color("trial-failure")))
        elif not state.is_final:
            grid.add_row("state", Text(f"{state.value}: the result comes when the job ends", self.color("trial-running")))
        elif state is not TrialState.INCORRECT:
            grid.add_row("state", Text(f"{state.value}: no result (r re-runs it)", self.color("trial-muted")))
        self._correctness_rows(grid, trial)
        self._kernel_rows(grid, trial)
        for item in result.get("flags") or []:
            grid.add_row("flag", Text(f"{item.get('code')}: {item.get('message')}", self.color("warning")))
        for why in tree.disqualified(trial):
            grid.add_row("never best", Text(f"⚑ {why}", self.color("trial-failure", bold=True)))
        if trial.stale:
            grid.add_row("stale", Text("reference.py changed since this was measured; r re-runs it", self.color("warning")))
        return grid

    def _timing_rows(self, grid: Table, trial: Trial) -> None:
        result = trial.result or {}
        timing = trial.gpu_timing or {}
        med = timing.get("median_us")
        spread = ""
        if med and timing.get("p20_us") is not None and timing.get("p80_us") is not None:
            spread = f" (±{(timing['p80_us'] - timing['p20_us']) / med / 2:.1%})"
        time_line = Text()
        time_line.append(f"{fmt_us(med)} median", Style(bold=True))
        if timing.get("p20_us") is not None and timing.get("p80_us") is not None:
            time_line.append(f" · p20–p80 {_span(timing['p20_us'], timing['p80_us'])}{spread}")
        time_line.append(f" · min {fmt_us(timing.get('min_us'))} · n={timing.get('n', '?')}", self.color("trial-muted"))
        if timing.get("rse") is not None:
            time_line.append(f" · rse {timing['rse']:.1%}", self.color("trial-muted"))
        grid.add_row("time", time_line)
        if timing.get("kernel_us") is not None:  # CUPTI names only a number measured here and now
            origin = provenance.of_result(result)
            if origin is None or origin.measured_here:
                how = "CUPTI, kernels only"
            elif origin.origin is provenance.Origin.REPLAYED:
                how = "kernels only, in the recording"
            else:
                how = f"kernels only, {origin.short()}"
            grid.add_row("kernel time", f"{fmt_us(timing['kernel_us'])} ({how})")
        for kind, base in (result.get("baselines") or {}).items():
            speed = (result.get("speedup") or {}).get(kind)
            how = "given" if base.get("given") else ("cached" if base.get("cached") else "measured")
            line = Text()
            if speed is not None:
                line.append(f"{speed:.2f}×", self.color("success" if speed >= 1 else "warning", bold=True))
                line.append(f" vs {kind}")
            else:
                line.append(f"{kind}")
            line.append(f" ({how} baseline {fmt_us(base.get('median_us'))})", self.color("trial-muted"))
            grid.add_row("speedup" if kind == self.baseline else "", line)
        roof = roofline_of(trial)
        if roof:
            bandwidth, flops = achieved(trial, roof)
            where = f"{roof.get('source', 'datasheet')} {roof.get('gpu', '')}".strip()
            if bandwidth:
                peak = roof["hbm_gbps"] * 1e9
                grid.add_row("bandwidth", f"{si(bandwidth, 'B/s')} useful ({bandwidth / peak:.0%} of "
                                          f"{si(peak, 'B/s')} HBM, {where})")
            if flops and roof.get("peak_tflops"):
                peak = roof["peak_tflops"] * 1e12
                grid.add_row("compute", f"{si(flops, 'FLOP/s')} ({flops / peak:.0%} of {si(peak, 'FLOP/s')} "
                                        f"{roof.get('compute_dtype', '')}, {where})")
        if trial.sol is not None:
            line = Text()
            line.append(describe.bar(trial.sol, 16), self.color("trial-best"))
            line.append(f" {trial.sol:.0%} of speed-of-light", Style(bold=True))
            if roof:
                line.append(f" (floor {fmt_us(roof.get('floor_us'))}, {roof.get('bound', '?')}-bound)",
                            self.color("trial-muted"))
            grid.add_row("SoL", line)

    def _origin_rows(self, grid: Table, result: dict[str, Any]) -> None:
        """The recording a replayed number came from and every import it went through, paths included."""
        found = provenance.of_result(result)
        if found is None or found.measured_here:
            return
        muted = self.color("trial-muted")
        if found.recording:
            grid.add_row("recording", Text(found.recording, muted))
        for hop in found.imports:
            grid.add_row("via", Text(f"{hop.format} from {hop.source}" + (f" ({hop.at[:10]})" if hop.at else ""), muted))

    def _correctness_rows(self, grid: Table, trial: Trial) -> None:
        corr = (trial.result or {}).get("correctness") or {}
        if not corr:
            preview = (trial.validation or {}).get("preview")
            if preview:
                ok = preview.get("correct")
                text = "correct" if ok else f"INCORRECT: {describe.first_line(preview.get('message'), 200)}"
                grid.add_row("CPU preview", Text(f"{text} (interpreter, test sizes)",
                                                 self.color("success" if ok else "trial-failure")))
            return
        passed = corr.get("passed")
        head = Text()
        head.append("pass" if passed else "FAIL", self.color("success" if passed else "trial-failure", bold=True))
        head.append(f" over {corr.get('seeds', '?')} seeds × {corr.get('cases', 1)} case(s)")
        tol = self.config.tolerance
        head.append(f" (atol {tol[0]:g}, rtol {tol[1]:g})", self.color("trial-muted"))
        grid.add_row("correctness", head)
        errs = []
        for key, name in (("max_abs_err", "max abs err"), ("max_rel_err", "max rel err")):
            if corr.get(key) is not None:
                errs.append(f"{name} {corr[key]:.3g}")
        frac = corr.get("mismatch_frac")
        if frac:
            errs.append(f"mismatches {frac:.2%}" if frac >= 1e-4 else f"mismatches {frac:.1e} of values")
        if corr.get("first_mismatch") is not None and not passed:
            errs.append(f"first at {corr['first_mismatch']}")
        if errs:
            grid.add_row("errors", " · ".join(errs))
        if corr.get("message") and not passed:
            grid.add_row("check", Text(corr["message"], self.color("trial-failure")))

    def _validation_rows(self, grid: Table, trial: Trial) -> None:
        report = trial.validation or {}
        for finding in report.get("errors") or []:
            where = f"line {finding['line']}: " if finding.get("line") else ""
            text = Text(f"{where}{finding.get('message')}", self.color("trial-invalid"))
            text.append(f"  [{finding.get('code')}]", self.color("trial-muted"))
            if finding.get("hint"):
                text.append(f"\n→ {finding['hint']}")
            grid.add_row("invalid", text)
        for finding in (report.get("warnings") or [])[:5]:
            where = f"line {finding['line']}: " if finding.get("line") else ""
            grid.add_row("warning", Text(f"{where}{finding.get('message')}", self.color("warning")))

    def _kernel_rows(self, grid: Table, trial: Trial) -> None:
        for kernel in (trial.validation or {}).get("kernels") or []:
            line = Text()
            line.append(kernel.get("name", "?"), Style(bold=True))
            line.append(f" {kernel.get('arch', '')}: ", self.color("trial-muted"))
            spills = kernel.get("spills") or 0
            line.append(f"{kernel.get('registers', '?')} regs · ")
            line.append(f"{spills} spills", self.color("trial-failure") if spills else Style())
            line.append(f" · {kernel.get('shared_bytes', 0):,} B shared")
            if kernel.get("num_warps") is not None:  # unknown for a CUDA kernel whose host code computes its block
                line.append(f" · {kernel['num_warps']} warps")
            if kernel.get("num_stages") is not None:  # Triton's software pipelining; CUDA has none
                line.append(f" · {kernel['num_stages']} stages")
            if kernel.get("tensor_cores"):
                line.append(f" · tensor cores ({kernel.get('tensor_core_op') or 'yes'})", self.color("success"))
            grid.add_row("kernel", line)

    # Profile

    def profile(self, trial: Trial) -> RenderableType:
        profile = trial.profile or {}
        if self.raw:
            return self._raw_profile(trial, profile)
        verdicts = trial.verdicts or []
        if not verdicts:
            if describe.cpu_run(trial):
                why = f"{describe.CPU_CORRECT}: counters and roofline verdicts come from a GPU run."
            elif trial.state_enum is TrialState.CORRECT:
                why = ("No profile yet: correct GPU trials are profiled on the first correct result, a new best "
                       "and a plateau. p profiles this one now.")
            else:
                why = f"Nothing to profile: {trial.id} is {trial.state}."
            return Text(why, self.color("trial-muted"))
        sources = {v.get("source") for v in verdicts}
        title = Text(f"{len(verdicts)} verdict(s) for {trial.id}", Style(bold=True))
        title.append(f" from {' and '.join(sorted(s for s in sources if s))}", self.color("trial-muted"))
        if trial.result:
            title.append(f" · {describe.measured_on(trial.result)}", self.color("trial-muted"))
        title.append("   s: raw profile", self.color("trial-muted"))
        table = Table.grid(padding=(0, 1), expand=True)
        table.add_column(width=1, no_wrap=True)
        table.add_column(ratio=1)
        for verdict in verdicts:
            mark, var = _SEVERITY.get(verdict.get("severity", "info"), ("●", "accent"))
            evidence = verdict.get("evidence")
            if isinstance(evidence, list):
                evidence = "; ".join(str(e) for e in evidence)
            body = Text(verdict.get("title", "?"), self.color(var, bold=True))
            body.append(f"  {verdict.get('severity', '')} · {verdict.get('source', '')}", self.color("trial-muted"))
            if evidence:
                body.append(f"\n{evidence}", self.color("trial-muted"))
            if verdict.get("hint"):
                body.append("\n→ ", self.color(var))
                body.append(verdict["hint"])
            table.add_row(Text(mark, self.color(var, bold=True)), body)
            table.add_row("", "")
        return Group(title, Text(""), table)

    def _raw_profile(self, trial: Trial, profile: dict[str, Any]) -> RenderableType:
        title = Text(f"raw profile of {trial.id}", Style(bold=True))
        title.append("   s: back to verdicts", self.color("trial-muted"))
        if not profile:
            return Group(title, Text("No profile recorded.", self.color("trial-muted")))
        parts: list[RenderableType] = [title]
        for skipped in profile.get("skipped") or []:
            parts.append(Text(f"{skipped.get('source')} unavailable: {skipped.get('reason')}", self.color("warning")))
        if not profile.get("available", True) or profile.get("reason"):
            parts.append(Text(f"counters unavailable: {profile.get('reason') or profile.get('message')}",
                              self.color("warning")))
        profiler = get_profiler(source_of(profile))
        if profiler is not None:
            parts.append(Text(f"profiler: {profiler.label}", self.color("trial-muted")))
        if profile.get("report"):
            parts.append(Text(f"report: {profile['report']}", self.color("trial-muted")))
        kernels = profiler.kernels(profile) if profiler is not None else []
        main = profiler.dominant(profile) if kernels else None
        for kernel in kernels:
            head = Text(kernel.get("name", "?"), Style(bold=True))
            if kernel == main:
                head.append(" (dominant)", self.color("trial-best"))
            if kernel.get("grid") is not None:
                head.append(f"  grid {kernel.get('grid')} block {kernel.get('block')}", self.color("trial-muted"))
            if kernel.get("duration_ns") is not None:
                head.append(f"  {fmt_us(kernel['duration_ns'] / 1000)}")
            table = Table(box=box.SIMPLE, show_header=False, show_edge=False, pad_edge=False, expand=True)
            table.add_column(style=self.color("trial-muted"), ratio=3)
            table.add_column(justify="right", ratio=1)
            for name, value in sorted((kernel.get("metrics") or {}).items()):
                table.add_row(name, (f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:.4g}") if isinstance(value, float) else str(value))
            parts += [Text(""), head, table]
            for rule in kernel.get("rules") or []:
                line = Text(f"{rule.get('rule')} [{rule.get('type')}] ", self.color("warning"))
                line.append(rule.get("description", ""))
                parts.append(line)
        if not kernels:
            shown = {k: v for k, v in profile.items() if k not in ("kernels", "roofline")}
            parts.append(Text("\n".join(f"{k}: {v}" for k, v in shown.items()), self.color("trial-muted")))
        return Group(*parts)

    # Source

    def _syntax_theme(self) -> str:
        return "monokai" if self.app.current_theme.dark else "default"

    def source(self, trial: Trial) -> RenderableType:
        try:
            text = self.store.read_source(trial)
        except OSError as exc:
            return Text(f"The snapshot of {trial.id} is missing: {exc}", self.color("trial-failure"))
        if self.diff:
            return self._diff(trial, text)
        lines = {f["line"] for f in (trial.validation or {}).get("errors") or [] if f.get("line")}
        title = Text(f"{trial.file} @ {trial.id}", Style(bold=True))
        title.append(f"  sha {trial.sha256[:12]}   d: diff vs {trial.parent or 'nothing (a root)'}",
                     self.color("trial-muted"))
        syntax = Syntax(text, "python", theme=self._syntax_theme(), line_numbers=True, word_wrap=False,
                        background_color="default", highlight_lines=lines)
        return Group(title, syntax)

    def _diff(self, trial: Trial, text: str) -> RenderableType:
        parent = self.parent_trial
        try:
            old = self.store.read_source(parent) if parent else ""
        except OSError:
            old = ""
        lines = list(difflib.unified_diff(old.splitlines(), text.splitlines(), lineterm="", n=3,
                                          fromfile=f"{parent.id}/{parent.file}" if parent else "/dev/null",
                                          tofile=f"{trial.id}/{trial.file}"))
        added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
        title = Text(f"diff {parent.id if parent else '(root)'} → {trial.id}", Style(bold=True))
        title.append(f"  +{added}", self.color("success"))
        title.append(f" −{removed}", self.color("trial-failure"))
        title.append("   d: back to source", self.color("trial-muted"))
        if not lines:
            return Group(title, Text("No change from the parent.", self.color("trial-muted")))
        body = Text()
        for line in lines[2:]:
            if line.startswith("@@"):
                body.append(line + "\n", self.color("accent"))
            elif line.startswith("+"):
                body.append(line + "\n", self.color("success"))
            elif line.startswith("-"):
                body.append(line + "\n", self.color("trial-failure"))
            else:
                body.append(line + "\n", self.color("trial-muted"))
        return Group(title, body)

    # Log

    def log_path(self, trial: Trial) -> Path | None:
        """The job's captured output; a running job writes to logs/<id>.log before the trial records it."""
        rel = trial.log or (f"logs/{trial.id}.log" if trial.state_enum.reached_gpu else None)
        if rel:
            return self.store.state_dir / rel
        validation_log = (trial.validation or {}).get("log")
        return Path(validation_log) if validation_log else None

    def log(self, trial: Trial) -> RenderableType:
        path = self.log_path(trial)
        if path is None:
            return Text(f"No job log for {trial.id}: it is {trial.state}.", self.color("trial-muted"))
        try:
            with path.open("rb") as handle:
                size = handle.seek(0, 2)
                handle.seek(max(0, size - LOG_TAIL_BYTES))
                data = handle.read().decode("utf-8", errors="replace")
        except OSError:
            return Text(f"{path.name}: no output yet", self.color("trial-muted"))
        title = Text(str(path.relative_to(self.store.state_dir) if path.is_relative_to(self.store.state_dir) else path),
                     Style(bold=True))
        if size > LOG_TAIL_BYTES:
            title.append(f"  (last {LOG_TAIL_BYTES // 1024} KiB of {size // 1024} KiB)", self.color("trial-muted"))
        phases = breakdown_lines((trial.result or {}).get("phases_s"))
        timeline = Text("\n".join(["Where the seconds went", *phases]) + "\n", self.color("trial-muted")) if phases else Text()
        return Group(timeline, title, Text(data.rstrip() or "(empty)"))
