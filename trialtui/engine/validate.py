"""`trialtui validate`: static checks in-process, then the compile stage in one child job.

The compile job (trialtui.runner.compile_job) imports torch once and forks: one process traces
the candidate under Triton's interpreter on CPU tensors (launches and a CPU correctness preview),
the other imports the candidate uncompiled and builds each traced launch with `triton.compile` for
sm_90/sm_80, no GPU needed. Everything either of them can do wrong comes back here as a finding.
The JSON returned is `trialtui validate --json` and the trial's `validation` record.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from trialtui.core import job_kinds
from trialtui.core.compile_result import CompileResult
from trialtui.core.forms import get_form
from trialtui.core.gpus import sm_limits
from trialtui.core.languages import DEFAULT, Language, get_language, language_of_file
from trialtui.core.model import NEEDS_RUNNER, Finding, Severity
from trialtui.core.problem import Problem, ProblemError
from trialtui.core.problem_dir import load_problem
from trialtui.core.static_checks import check_source
from trialtui.core.text import HANG_HINTS
from trialtui.core.validation_report import ValidationReport
from trialtui.core.job_spec import CompileSpec
from trialtui.engine.jobs import ChildHandle, WarmChildren, run_child

COMPILE_JOB = job_kinds.TRITON_COMPILE.module
ERROR, WARNING = Severity.ERROR.value, Severity.WARNING.value
ARCH = re.compile(r"^sm_(\d+)a?$")
# The architectures the ptxas bundled with Triton accepts (`ptxas --help`, --gpu-name).
KNOWN_ARCHS = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121)
# Shared memory a block may opt into: the SM's shared memory less the 1 KB the driver reserves per block.
RESERVED_SHARED_PER_BLOCK = 1024
TIMEOUT_PHASES = {
    "starting": ("starting the job (importing torch) did not finish", "is the machine overloaded?"),
    "reference": ("loading the reference did not finish", "check reference.py for long work at import"),
    "import": ("importing the candidate did not finish", HANG_HINTS["import"]),
    "run": ("running the candidate once on the CPU (Triton interpreter) did not finish", HANG_HINTS["run"]),
    "compare": ("running the reference on the CPU did not finish", "set small [test_sizes] in trialtui.toml"),
    "compile": ("compiling the kernels did not finish", "very large BLOCK sizes or unrolled loops compile slowly"),
}


def finding(severity: str, code: str, message: str, line: int | None = None, hint: str = "") -> dict[str, Any]:
    return Finding(severity, code, message, line, None, hint).to_dict()


def parse_archs(arch: str | list[str] | tuple[str, ...] | None, default: list[str]) -> list[str]:
    """"sm_90,sm_80", ["sm_90"], "90" → ["sm_90", "sm_80"]; a ValueError names a bad entry."""
    items = default if arch is None else (arch.split(",") if isinstance(arch, str) else list(arch))
    archs = []
    for item in items:
        name = str(item).strip().lower()
        name = name if name.startswith("sm_") else f"sm_{name.replace('.', '')}"
        match = ARCH.match(name)
        if not match or int(match.group(1)) not in KNOWN_ARCHS:
            known = ", ".join(f"sm_{cc}" for cc in KNOWN_ARCHS)
            raise ValueError(f"unknown architecture {str(item).strip()} (known: {known})")
        if name not in archs:
            archs.append(name)
    return archs


def validate_file(
    problem: Problem | str | Path,
    path: str | Path,
    *,
    arch: str | list[str] | None = None,
    compile: bool = True,
    timeout_s: float | None = None,
    name: str | None = None,
    warm: WarmChildren | None = None,
    handle: ChildHandle | None = None,
) -> ValidationReport:
    """Validate one candidate: static findings, then (unless they hold an error) the compile stage.

    `name` is what messages call the file (the engine validates a snapshot named by its hash, and
    the user knows it as kernel.py). `invalid` is True when an error says the file is malformed;
    errors about running it on the CPU (marked `runtime`) leave it False.

    Never raises for bad input: an unreadable file, a broken problem directory, a candidate that
    hangs or exits all become findings. `arch` defaults to the problem's `arch` setting,
    `timeout_s` to its `validate_timeout_s`; `handle` cancels the compile stage from another thread.

    Returns a ValidationReport (core/validation_report.py): `ok` (no error), `errors` and `warnings`
    (Finding dicts: severity, code, message, line, col, hint), `kernels` (per traced launch and arch:
    name, arch, line, registers, spills in 4-byte
    words of local memory per thread as Triton's n_spills, local_bytes, shared_bytes, tensor_cores,
    tensor_core_op, vector_width = the widest global load per thread in bits, widest_load,
    num_warps, num_stages, constexprs, signature, tuning, grid), `preview` (correct,
    max_abs_err, message, case), `elapsed_ms`, `static_ms`, `compile_ms` (None when skipped),
    `form`, `arch`, `file` and `log`.
    """
    started = time.perf_counter()
    path = Path(path)
    report: dict[str, Any] = {
        "ok": False, "invalid": True, "file": str(path), "form": None, "arch": [], "errors": [], "warnings": [], "kernels": [],
        "preview": None, "elapsed_ms": 0.0, "static_ms": None, "compile_ms": None, "log": None,
    }
    findings: list[dict[str, Any]] = []
    try:
        if not isinstance(problem, Problem):
            problem = load_problem(problem)
        report["form"] = problem.form
        report["language"] = language_of_file(path).name
        report["arch"] = parse_archs(arch, problem.config.arch)
    except (ProblemError, ValueError) as exc:
        findings.append(finding(ERROR, "problem" if isinstance(exc, ProblemError) else "arch", str(exc)))
        return _finish(report, findings, started, path, name)

    static_started = time.perf_counter()
    findings += static_stage(problem, path, name)
    report["static_ms"] = _ms(static_started)
    if compile and not any(f["severity"] == ERROR for f in findings):
        stage_started = time.perf_counter()
        timeout = float(timeout_s if timeout_s is not None else problem.config.validate_timeout_s)
        more, kernels, preview, log = compile_stage(problem, path, report["arch"], timeout, warm, handle)
        findings += more
        report.update(kernels=kernels, preview=preview, log=log, compile_ms=_ms(stage_started))
    return _finish(report, findings, started, path, name)


def finding_message(found: dict[str, Any], file: str = "") -> str:
    """An error finding as the trial's message: where (`kernel.py:22`, or `line 22` beside a trial that names
    its file), then what."""
    line = found.get("line")
    where = (f"{file}:{line}: " if file else f"line {line}: ") if line else ""
    return f"{where}{found['message']}"


def static_stage(problem: Problem, path: Path, name: str | None = None) -> list[dict[str, Any]]:
    try:
        source = path.read_bytes()
    except OSError as exc:
        return [finding(ERROR, "unreadable", f"cannot read {path}: {exc.strerror or exc}")]
    filename = name or path.name
    refused = problem_file_refusal(problem, path)
    if refused is not None:
        return [refused]
    siblings = {p.stem for p in problem.candidates() if p.resolve() != path.resolve() and p.name != filename}
    return [f.to_dict() for f in check_source(source, form=problem.form, filename=filename, siblings=siblings,
                                              folder=problem.root)]


def problem_file_refusal(problem: Problem, path: Path) -> dict[str, Any] | None:
    """The problem's reference, or a module of it, run as a candidate: said so, with how the form starts one
    (its static checks would only say that it lacks the entry point)."""
    resolved = path.resolve()
    if resolved == problem.reference.resolve():
        what = f"{path.name} is the problem's reference, not a candidate: candidates are checked against it"
    elif resolved in {p.resolve() for p in problem.support_files}:
        what = f"{path.name} is a support module of the problem's reference, not a candidate"
    else:
        return None
    return finding(ERROR, "not-a-candidate", what, None, get_form(problem.form).start_hint)


def compile_env(language: Language) -> dict[str, str]:
    """No GPU for a compile job: it builds for the target arch without one, and never disturbs a GPU job beside it."""
    return {**language.compile_env, "CUDA_VISIBLE_DEVICES": ""}


def compile_stage(problem: Problem, path: Path, archs: list[str], timeout_s: float, warm: WarmChildren | None = None,
                  handle: ChildHandle | None = None):
    """The compile job (trace forked inside it); returns (findings, kernels, preview, log path).

    With `warm` (the engine's), a compile job that imported torch while the user edited takes it."""
    log = problem.state_dir / "logs" / f"validate-{path.stem}.log"
    phases = {"trace": "starting", "compile": "import"}

    def on_progress(event: dict[str, Any]) -> None:
        if event.get("job") in phases and event.get("phase"):
            phases[event["job"]] = event["phase"]

    language = language_of_file(path)
    spec = CompileSpec(**problem.job_spec(), candidate=str(path.resolve()), arch=archs)
    result = CompileResult.from_json(run_child(language.compile_job, spec, timeout_s=timeout_s, log_path=log,
                                               env=compile_env(language), on_progress=on_progress, warm=warm,
                                               handle=handle))
    trace, compiled = result.trace, result.compile  # a timeout, or the job died: the trace says where it was
    phase = "compile" if phases["compile"] == "compile" else phases["trace"]
    findings = trace_findings(trace, phase, timeout_s, problem.entry_point, language.no_launch)
    findings += result.findings  # the language's own
    # Raising, hanging or exiting while the candidate runs on the CPU is not proof that the file is
    # malformed (a CUDA-only kernel may fail here): such errors never make a trial invalid; the
    # benchmark job runs it again and says error or timeout, as `trialtui bench` does. A compile that
    # does not finish is the file's own doing.
    for f in findings:
        f["runtime"] = f["severity"] == ERROR and not (f["code"] == "timeout" and phase == "compile")
    if trace.get("launches"):
        findings += compile_findings(compiled, language)
    kernels = sorted(compiled.get("kernels") or [], key=lambda k: (k.get("line") or 0, k["name"], archs.index(k["arch"])))
    findings += kernel_findings(kernels, language)
    preview = _preview(trace)
    if preview["correct"] is False:
        findings.append(finding(WARNING, "preview-incorrect",
                                f"on the CPU (Triton interpreter, case {preview.get('case') or 'defaults'}): "
                                f"{preview['message']}", None,
                                "nothing to fix in the kernel: reference.py must give one output per input"
                                if preview.get("reference_random") else
                                "the interpreter runs your kernel as written: a mismatch here is usually a real bug"))
    return findings, kernels, preview, str(log)


def trace_findings(trace: dict[str, Any], phase: str, timeout_s: float, entry_point: str,
                   no_launch: tuple[str, str]) -> list[dict[str, Any]]:
    """What the interpreter run says: failures by stage, and a candidate that launched nothing
    (`no_launch`: the language's message and hint)."""
    state = trace.get("state")
    message = trace.get("message") or ""
    line = trace.get("line")
    if state == "timeout":
        what, hint = TIMEOUT_PHASES.get(phase, TIMEOUT_PHASES["run"])
        return [finding(ERROR, "timeout", f"{what} in {timeout_s:g} s; the job was stopped", line, hint)]
    if state == "ok":
        if trace.get("launches"):
            return []
        return [finding(WARNING, "no-launch", no_launch[0].format(entry=entry_point), None, no_launch[1])]
    if trace.get("needs_runner"):  # the machine's state, not the candidate's
        return [finding(ERROR, NEEDS_RUNNER, message, None, "nothing is wrong with the candidate: install the runner "
                        "here, or run jobs where it is (--executor); then save again or re-run it")]
    stage = trace.get("stage")
    if stage is None:  # the child died or wrote no result
        return [finding(ERROR, "crash", f"the validation job ended abnormally: {message}", line,
                        "os._exit() or a crash in native code at import or run ends the process; see the log")]
    if stage in ("reference", "inputs", "compare"):
        return [finding(ERROR, "reference-error", f"the reference failed on the CPU ({stage}): {message}", None,
                        "fix reference.py; the candidate was not judged")]
    if stage == "import":
        if trace.get("exception") == "SystemExit":
            return [finding(ERROR, "sys-exit", f"{message} while being imported", line,
                            "remove the sys.exit()/exit() at module level: the harness imports the file")]
        if trace.get("exception") in ("ModuleNotFoundError", "ImportError"):
            return [finding(ERROR, "import-error", f"importing the candidate failed: {message}", line,
                            "candidates may import only the standard library, torch, triton and numpy")]
        return [finding(ERROR, "import-error", f"importing the candidate failed: {message}", line,
                        "the module's top-level code raised; the log has the traceback")]
    if stage == "build":
        return [finding(ERROR, "build-error", f"building {entry_point} failed: {message}", line,
                        f"{entry_point} must take the reference's constructor arguments (get_init_inputs())")]
    if trace.get("in_kernel"):
        return [finding(WARNING, "preview-failed",
                        f"the interpreted kernel {trace['in_kernel']} raised on the CPU: {message}", line,
                        "the compile stage reports what the GPU compiler thinks of the same kernel")]
    if trace.get("cpu_only"):
        return [finding(WARNING, "preview-unavailable", f"the candidate cannot run on the CPU: {message}", line,
                        "allocate with torch.empty_like(x) or device=x.device, not 'cuda', to get a CPU preview")]
    return [finding(ERROR, "run-error", f"running {entry_point} on the CPU failed: {message}", line,
                    "the host code raised before or after its kernels; the log has the traceback")]


def compile_findings(compiled: dict[str, Any], language: Language | None = None) -> list[dict[str, Any]]:
    """Compile errors (one per kernel and message, all archs named, with the language's hint for
    its compiler's words; Triton by default), kernels not compiled, a failed import."""
    language = language or get_language(DEFAULT)
    if compiled.get("state") != "ok":
        return [finding(ERROR, "compile-stage", f"the compile stage failed ({compiled.get('stage')}): "
                        f"{compiled.get('message', '')}", None, "the validate log has the traceback")]
    findings = []
    merged: dict[tuple, list[str]] = {}
    for error in compiled.get("errors") or []:
        merged.setdefault((error["name"], error.get("line"), error["error"]), []).append(error["arch"])
    for (name, line, message), archs in merged.items():
        hint = next((h for key, h in language.compile_hints if key in message), language.compile_hint)
        findings.append(finding(ERROR, "compile-error", f"kernel {name} does not compile for {', '.join(archs)}: {message}",
                                line, hint))
    for why in compiled.get("skipped") or []:
        findings.append(finding(WARNING, "not-compiled", why, None,
                                "define kernels at module level with plain tensor, int, float and constexpr arguments"))
    return findings


def kernel_findings(kernels: list[dict[str, Any]], language: Language | None = None) -> list[dict[str, Any]]:
    """Facts from the compile that will fail or hurt on the GPU: shared memory over the limit, spills
    (with the language's remedy; Triton's by default)."""
    hints = (language or get_language(DEFAULT)).fact_hints
    findings = []
    for k in kernels:
        cc = int(ARCH.match(k["arch"]).group(1))
        limits = sm_limits(cc)
        shared = k.get("shared_bytes") or 0
        if limits and shared > limits[2] - RESERVED_SHARED_PER_BLOCK:
            findings.append(finding(
                ERROR, "shared-memory",
                f"kernel {k['name']} needs {shared} bytes of shared memory on {k['arch']}, which allows "
                f"{limits[2] - RESERVED_SHARED_PER_BLOCK} per block: the launch will fail (OutOfResources)",
                k.get("line"), hints["shared-memory"]))
        if k.get("spills"):
            findings.append(finding(
                WARNING, "spills",
                f"kernel {k['name']} spills on {k['arch']}: {k['local_bytes']} bytes of local memory per thread "
                f"at {k['registers']} registers", k.get("line"), hints["spills"]))
    return findings


def _preview(trace: dict[str, Any]) -> dict[str, Any]:
    preview = trace.get("preview")
    if preview:
        return preview
    reason = trace.get("message") or ("timed out" if trace.get("state") == "timeout" else "did not run")
    return {"correct": None, "max_abs_err": None, "message": f"no preview: {reason}"}


def _finish(report: dict[str, Any], findings: list[dict[str, Any]], started: float, path: Path,
            name: str | None) -> ValidationReport:
    findings.sort(key=lambda f: (f["line"] or 0, f["code"]))
    for f in findings:
        if name and name != path.name:
            f["message"] = f["message"].replace(str(path), name).replace(path.name, name)
    report["errors"] = [f for f in findings if f["severity"] == ERROR]
    report["warnings"] = [f for f in findings if f["severity"] != ERROR]
    report["ok"] = not report["errors"]
    report["invalid"] = any(not f.get("runtime") for f in report["errors"])
    report["elapsed_ms"] = _ms(started)
    return ValidationReport.from_json(report)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
