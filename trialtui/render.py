"""Plain-text renderings of results for the CLI and the headless watcher.

Every speed figure names its GPU, dtype, shapes and baseline kind, so a pasted line stays honest.
"""

from __future__ import annotations

from typing import Any

from trialtui.core.analysis_result import AnalysisResult
from trialtui.core.bench_result import BenchResult
from trialtui.core.calibration_result import CalibrationResult
from trialtui.core.gpus import datasheet
from trialtui.core.kernel_split import KernelSplit, short_name
from trialtui.core.model import NEEDS_RUNNER
from trialtui.core.profile_report import ProfileReport
from trialtui.core.result import CPU_TIMING_LABEL
from trialtui.core.text import fmt_us, label, sizes_label, wrong_output
from trialtui.core.validation_report import ValidationReport
from trialtui.engine.validate import finding_message


def render_bench(result: BenchResult, problem=None, file: str = "") -> str:
    """`trialtui bench`'s text; `file` is the candidate's name, where a refusal points into it."""
    state = result.state
    corr = result.correctness or {}
    lines = [_header(result)]
    if corr:
        numbers = (f"max abs err {corr.get('max_abs_err', 0):.3g}, max rel err {corr.get('max_rel_err', 0):.3g}, "
                   f"mismatches {corr.get('mismatch_frac', 0):.2%}")
        if not corr.get("passed") and not corr.get("max_abs_err"):  # no value differed: say what did
            numbers = wrong_output(corr, result.message)
        lines.append(
            f"  correctness: {'pass' if corr.get('passed') else 'FAIL'} over {corr.get('seeds')} seeds × "
            f"{corr.get('cases', 1)} case(s); {numbers}"
        )
    report = ValidationReport.from_json(result.validation) if state == "invalid" and result.validation else None
    if report is not None and report.errors:
        lines += _refusal(report.errors[0], file)
    elif result.message:
        lines.append(f"  {result.message}")
    timing = result.timing
    if timing and state == "correct":
        if timing.get("label") == CPU_TIMING_LABEL:
            lines.append(f"  time: {fmt_us(timing['median_us'])} ({CPU_TIMING_LABEL}); no speedup computed")
        else:
            kernel = f"; kernel time {fmt_us(timing['kernel_us'])}" if timing.get("kernel_us") is not None else ""
            lines.append(
                f"  candidate: median {fmt_us(timing['median_us'])} (p20 {fmt_us(timing['p20_us'])}, "
                f"p80 {fmt_us(timing['p80_us'])}, n={timing['n']}, rse {timing['rse']:.2%}){kernel}"
            )
            if timing.get("label"):
                lines.append(f"  timed: {timing['label']}")
            lines += _library_line(timing.get("kernels"))
            for kind, base in (result.baselines or {}).items():
                source = "given" if base.get("given") else ("cached" if base.get("cached") else "measured")
                speed = (result.speedup or {}).get(kind)
                lines.append(
                    f"  vs {kind} ({source}): {fmt_us(base['median_us'])} → "
                    f"{speed:.3f}×" if speed is not None else f"  vs {kind}: {fmt_us(base['median_us'])}"
                )
    for item in result.flags or []:
        lines.append(f"  ! {item['code']}: {item['message']}")
    if result.log:
        lines.append(f"  log: {result.log}")
    return "\n".join(lines)


def _library_line(split: Any) -> list[str]:
    """The torch functions' share of the timed calls' GPU time, as the bench's recorder weighed it (a library
    reached around torch is weighed on kernel records: `trialtui profile`, and at finalize)."""
    if not isinstance(split, dict) or split.get("own_share") is None:
        return []
    top = ", ".join(str(name).split("(")[0][:40] for name, _ in (split.get("library_top") or [])[:3])
    return [f"  library: torch's compute functions {1 - split['own_share']:.0%} of the timed calls' GPU time"
            + (f" ({top})" if top else "") + "; kernel records weigh it in `trialtui profile` and at finalize"]


def _header(result: BenchResult) -> str:
    """The state, and the context its numbers need; a file the static checks refused ran nowhere, so it has none."""
    if result.state == "invalid":
        return "INVALID  (refused by the static checks: not run)"
    return f"{result.state.upper()}  [{label(result)}]"


def _refusal(error: dict, file: str) -> list[str]:
    """The static checks' first error where an editor jumps to it (`kernel.py:22: …`), and its fix."""
    return [f"  {finding_message(error, file)}", *([f"  hint: {error['hint']}"] if error.get("hint") else [])]


def render_validation(report: ValidationReport, name: str) -> str:
    if report.ok:
        verdict = "ok"
    elif any(f.get("code") == NEEDS_RUNNER for f in report.errors):
        verdict = "NOT CHECKED: this machine cannot run jobs (nothing is wrong with the candidate)"
    elif report.rejects_file:
        verdict = "INVALID"
    else:  # only errors of running it on the CPU: the benchmark job decides error or timeout
        verdict = "FAILS WHEN RUN on the CPU (not invalid: the benchmark says error or timeout)"
    lines = [f"{name}: {verdict} ({report.elapsed_ms or 0:.0f} ms)"]
    for finding in report.errors + report.warnings:
        where = f"{name}:{finding['line']}" if finding.get("line") else name
        lines.append(f"  {finding['severity']:<7} {where} [{finding['code']}] {finding['message']}")
        if finding.get("hint"):
            lines.append(f"          hint: {finding['hint']}")
    for kernel in report.kernels or []:
        lines.append(
            f"  kernel {kernel['name']} ({kernel['arch']}): {kernel['registers']} regs, "
            f"{kernel['spills']} spills, {kernel['shared_bytes']} B shared, "
            f"tensor cores {'yes' if kernel.get('tensor_cores') else 'no'}"
        )
    preview = report.preview
    if preview and preview.get("correct") is None:  # not run (a CUDA C++ candidate), or it could not run
        lines.append(f"  CPU preview: none ({preview.get('message', '')})")
    elif preview:
        if preview.get("correct"):
            verdict = f"correct, max abs err {preview.get('max_abs_err') or 0:.3g}"
        else:
            verdict = f"INCORRECT ({wrong_output(preview)}): {preview.get('message', '')}"
        lines.append(f"  CPU preview (interpreter, test sizes): {verdict}")
    if report.log:  # where "the log has the traceback" is
        lines.append(f"  log: {report.log}")
    return "\n".join(lines)


def _bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def render_analysis(result: AnalysisResult, problem=None) -> str:
    if not result.ok:
        return f"analyze failed: {result.message}"
    roof = result.roofline or {}
    case = result.case or {}
    lines = [
        f"reference at bench sizes ({sizes_label([case]) if case else 'defaults'}, {result.dtype}"
        f"{', scaled from test sizes: approximate' if result.scaled else ''}):",
        f"  FLOPs {f'{result.flops:.3g}' if result.flops else 'none counted (torch counts matmuls and convolutions)'}; "
        f"minimum bytes {_bytes(result.min_bytes or 0)} (each input read once, each "
        f"output written once); eager moves ≈ {_bytes(result.eager_bytes or 0)}",
    ]
    if roof:
        lines.append(
            f"  intensity {roof['intensity']:.1f} FLOP/B vs ridge {roof['ridge']:.1f} on {roof['gpu']} ({roof['source']}): "
            f"{roof['bound']}-bound; floor {fmt_us(roof['floor_us'])} "
            f"(compute {fmt_us(roof['compute_us'])}, memory {fmt_us(roof['memory_us'])})"
        )
    lines.append("  ops:")
    for op in (result.ops or [])[:20]:
        shapes = " ".join("×".join(map(str, s)) for s in op.get("inputs", []))
        flops = f", {op['flops']:.3g} FLOPs" if op.get("flops") else ""
        lines.append(f"    {op['op']:<24} {op['kind']:<12} {shapes}{flops}")
    for chance in result.fusion or []:
        lines.append(f"  fusion: {chance['message']}")
    return "\n".join(lines)


def render_verdicts(out: ProfileReport) -> str:
    env = out.env or {}
    profile = out.profile
    source = out.label or (profile.label if profile is not None else None) or "the roofline and compile facts"
    if out.median_us is None:  # a CPU run: no speed, and the label says whose roofline
        lines = [f"ANALYTIC VERDICTS for {out.gpu} — {source}"]
        roof = out.roofline
        if roof:
            lines.append(f"  roofline: {roof['bound']}-bound at bench sizes; a kernel at the roof would take "
                         f"{fmt_us(roof['floor_us'])} on {roof['gpu']} ({roof['source']})")
    else:
        sol = f", {out.sol:.0%} of speed-of-light" if out.sol else ""
        lines = [f"{env.get('gpu')}: median {fmt_us(out.median_us)}{sol}; verdicts from {source}"]
    if profile is not None and profile.report:
        lines.append(f"  report: {profile.report}")
    if out.library:
        split = KernelSplit.from_dict(out.library)
        top = ", ".join(short_name(name)[:60] for name, _ in split.library_top[:3])
        lines.append(f"  library: {split.line()}" + (f"; largest: {top}" if top else "")
                     + ("; under half its own: `fallback`, never best or finalized" if split.fallback() else ""))
    for v in out.verdicts:
        lines.append(f"  [{v.severity}] {v.title} — {v.evidence}")
        lines.append(f"      → {v.hint}")
    return "\n".join(lines)


def render_calibration(result: CalibrationResult) -> str:
    """`trialtui calibrate` as a table: what was measured on this GPU, beside its datasheet."""
    c = result.measured
    if not result.ok or c is None:
        return f"calibrate failed: {result.message or result.state}"
    sheet = datasheet(c.gpu)
    rows = [("copy bandwidth", f"{c.hbm_gbps:,.0f} GB/s", f"{sheet.hbm_gbps:,.0f} GB/s" if sheet else "—")]
    for dtype, rate in c.tflops.items():
        peak = sheet.peak_tflops(dtype) if sheet else None
        rows.append((f"matmul {dtype}", f"{rate:.1f} TFLOP/s" if rate else "—",
                     f"{peak:.1f} TFLOP/s" if peak else "—"))
    width = max(len(r[0]) for r in rows)
    lines = [f"{c.gpu} (driver {c.driver})",
             f"  {'':<{width}}  {'measured':>16}  {'datasheet':>16}"]
    lines += [f"  {name:<{width}}  {got:>16}  {peak:>16}" for name, got, peak in rows]
    if result.cache:
        lines.append(f"  cached in {result.cache}: rooflines on this GPU and driver use these numbers")
    return "\n".join(lines)
