"""The Metrics tab's grid: where a trial was measured, its timing against the baselines with the spread, its
correctness, its kernels and every flag, each number naming the GPU, dtype and sizes it was measured with.

Split from widgets/detail.py, which holds the tabs and renders this one through it.
"""

from __future__ import annotations

from typing import Callable

from rich.console import RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text

from trialtui.core import provenance, tree
from trialtui.core.bench_result import BenchResult
from trialtui.core.config import Config
from trialtui.core.executor import ran_on
from trialtui.core.kernel_split import LIBRARY_SHARE, short_name
from trialtui.core.model import Trial, TrialState
from trialtui.core.text import fmt_us
from trialtui.tui import describe
from trialtui.tui.cut import cut
from trialtui.tui.widgets.plots import achieved, roofline_of, si


def _span(low: float, high: float) -> str:
    """`193.55–200.43 µs`: two times in one unit."""
    if high >= 1000:
        return f"{low / 1000:.3f}–{high / 1000:.3f} ms"
    return f"{low:.2f}–{high:.2f} µs"


class MetricsGrid:
    """One trial's metrics as a grid, in the widget's theme colours (`color`, palette.Themed's)."""

    def __init__(self, color: Callable[..., Style], baseline: str, config: Config) -> None:
        self.color = color
        self.baseline = baseline
        self.config = config

    def render(self, trial: Trial) -> RenderableType:
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(style=self.color("trial-muted"), justify="right", no_wrap=True, width=12)
        grid.add_column(ratio=1)
        result = trial.result
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
            grid.add_row(state.value, Text((result.message if result else None) or "no message (see the Log tab)",
                                           self.color("trial-failure")))
        elif not state.is_final:
            grid.add_row("state", Text(f"{state.value}: the result comes when the job ends", self.color("trial-running")))
        elif state is not TrialState.INCORRECT:
            grid.add_row("state", Text(f"{state.value}: no result (r re-runs it)", self.color("trial-muted")))
        self._correctness_rows(grid, trial)
        self._kernel_rows(grid, trial)
        for item in (result.flags if result else None) or []:
            grid.add_row("flag", Text(f"{item.get('code')}: {item.get('message')}", self.color("warning")))
        for why in tree.disqualified(trial):
            grid.add_row("never best", Text(f"⚑ {why}", self.color("trial-failure", bold=True)))
        if trial.stale:
            grid.add_row("stale", Text("reference.py changed since this was measured; r re-runs it", self.color("warning")))
        return grid

    def _timing_rows(self, grid: Table, trial: Trial) -> None:
        result = trial.result
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
        split = timing.get("kernels")
        if isinstance(split, dict) and isinstance(split.get("own_share"), (int, float)):  # the library's share
            top = ", ".join(f"{cut(short_name(str(name)), 40)} {fmt_us(us)}" for name, us in (split.get("library_top") or [])[:2])
            line = Text(f"own kernels {split['own_share']:.0%} of the GPU time, library {1 - split['own_share']:.0%}"
                        + (f" ({top})" if top else ""), self.color("warning" if split["own_share"] < LIBRARY_SHARE else "trial-muted"))
            grid.add_row("GPU work", line)
        for kind, base in ((result.baselines if result else None) or {}).items():
            speed = ((result.speedup if result else None) or {}).get(kind)
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
            physical = ((trial.result.timing if trial.result else None) or {}).get("work") or {}
            if trial.sol > 1 and roof and physical.get("floor_us") and trial.median_us:  # the floor decides (core/flags.py)
                past = ("the rate this GPU measured" if roof.get("source") == "calibrated"
                        else "every byte at the DRAM rate")
                line.append(f" past {past}; {physical['floor_us'] / trial.median_us:.0%} of the speed its physical floor "
                            "allows", self.color("trial-muted"))
            grid.add_row("SoL", line)

    def _origin_rows(self, grid: Table, result: BenchResult) -> None:
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
        corr = (trial.result.correctness if trial.result else None) or {}
        if not corr:
            preview = trial.validation.preview if trial.validation else None
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
        tol, judge = self.config.tolerance, corr.get("judged_by")
        head.append(f" (judged by reference.py's {judge})" if judge else f" (atol {tol[0]:g}, rtol {tol[1]:g})",
                    self.color("trial-muted"))
        grid.add_row("correctness", head)
        errs = []
        for key, name in (("max_abs_err", "max abs err"), ("max_rel_err", "max rel err")):
            # a failed check's 0: no value differed finitely (NaN, a wrong shape), which is no near miss
            if corr.get(key) is not None and (passed or corr[key]):
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
        report = trial.validation
        if report is None:
            return
        for finding in report.errors:
            where = f"line {finding['line']}: " if finding.get("line") else ""
            text = Text(f"{where}{finding.get('message')}", self.color("trial-invalid"))
            text.append(f"  [{finding.get('code')}]", self.color("trial-muted"))
            if finding.get("hint"):
                text.append(f"\n→ {finding['hint']}")
            grid.add_row("invalid", text)
        for finding in report.warnings[:5]:
            where = f"line {finding['line']}: " if finding.get("line") else ""
            grid.add_row("warning", Text(f"{where}{finding.get('message')}", self.color("warning")))

    def _kernel_rows(self, grid: Table, trial: Trial) -> None:
        for kernel in (trial.validation.kernels if trial.validation else None) or []:
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
