"""Child job: the compile stage of validation for CUDA C++ candidates, without a GPU and without
running the candidate.

`python -m trialtui.runner.cuda_compile_job SPEC.json RESULT.json`. The candidate is imported
with `load_inline`/`load` replaced by recorders that keep their sources and build nothing, so its
kernels never meet CPU tensors (a CUDA kernel failing on CPU data says nothing about the kernel).
Calls the import did not reach (inside __init__ or forward) are read from the syntax tree. Each
source's device code is compiled with nvcc for each target arch (trialtui.runner.nvcc). The
result has the compile job's shape: `trace` (the import, the kernels found, no CPU preview),
`compile` (kernels, errors) and `findings` of this language's own.
"""

from __future__ import annotations

import ast
import inspect
import sys
import tempfile
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from trialtui.core.languages.cuda import CUDA_SUFFIXES, CudaSource, loader_calls, static_sources
from trialtui.core.languages.cuda_text import device_code
from trialtui.core.job_spec import CompileSpec
from trialtui.core.install import install_command
from trialtui.core.model import Finding, Severity
from trialtui.core.prctl import drop_ptrace_now
from trialtui.core.result import RESULT_VERSION
from trialtui.runner.job_progress import Progress
from trialtui.runner.child import serve

CANDIDATE_MODULE = "trialtui_candidate"
NOT_RUN = "not run on the CPU: CUDA C++ kernels run only on a GPU, where correctness is checked"
INSTALL_HINT = f"{install_command('cuda')} (NVIDIA's nvidia-cuda-nvcc wheel), or put a CUDA toolkit's nvcc on PATH"
WARNING = Severity.WARNING.value
NVCC_TIMEOUT_S = 600.0  # one nvcc run's limit; the job's own timeout (the config's validate_timeout_s) ends it sooner


class NotBuilt:
    """What the recorders return in place of a built extension: any function of it says why it is absent."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        def absent(*args, **kwargs):
            raise RuntimeError(f"extension {self._name}.{attr} is not built during validation: "
                               "CUDA C++ candidates are built and run only on a GPU machine")
        return absent


class Recorder:
    """Replaces torch.utils.cpp_extension's load_inline and load with calls that keep their sources."""

    def __init__(self, candidate: Path, root: Path):
        self.candidate, self.root = candidate, root
        self.sources: list[CudaSource] = []
        self.lines: set[int] = set()  # candidate lines of the calls seen
        self.missing: list[str] = []

    def install(self) -> None:
        import torch.utils.cpp_extension as ext

        for name in ("load_inline", "load"):
            setattr(ext, name, self._recording(name, getattr(ext, name)))

    def _recording(self, kind: str, original):
        signature = inspect.signature(original)

        def record(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            self._record(kind, bound.arguments)
            return NotBuilt(str(bound.arguments.get("name")))

        return record

    def resolve(self, entry: str) -> Path:
        """A .cu path as given if it exists, else by its name in the problem directory: the engine
        validates a snapshot under .trialtui/, where `__file__`-relative paths do not lead."""
        given = Path(entry) if Path(entry).is_absolute() else self.candidate.parent / entry
        if given.is_file():
            return given
        return self.root / Path(entry).name

    def _caller_line(self) -> int | None:
        for frame in inspect.stack()[2:]:
            if Path(frame.filename) == self.candidate:
                return frame.lineno
        return None

    def _record(self, kind: str, arguments: dict[str, Any]) -> None:
        line = self._caller_line()
        if line is not None:
            self.lines.add(line)
        flags = tuple(str(f) for f in arguments.get("extra_cuda_cflags") or ())
        includes = tuple(str(d) for d in arguments.get("extra_include_paths") or ())
        where = f"{kind} at line {line}" if line else kind
        if kind == "load_inline":
            texts = arguments.get("cuda_sources") or []
            for text in [texts] if isinstance(texts, str) else list(texts):
                self.sources.append(CudaSource(str(text), f"cuda_sources of {where}", None, None, flags, line, includes))
            return
        for entry in arguments.get("sources") or []:
            if not str(entry).endswith(CUDA_SUFFIXES):
                continue
            path = self.resolve(str(entry))
            try:
                self.sources.append(CudaSource(path.read_text(errors="replace"), path.name, 1, str(path), flags, line,
                                               includes))
            except OSError:
                self.missing.append(f"{where}: {entry} not found")


def locate(source: CudaSource, tree: ast.Module | None, text: str, root: Path) -> CudaSource:
    """Give a recorded inline source the lines it comes from: the string constant with the same
    value, else where the text stands in the candidate, else a .cu file of the problem directory
    with the same text (`cuda_sources=open("k.cu").read()`)."""
    if source.file is not None or source.line is not None:
        return source
    line = None
    if tree is not None:
        line = next((node.lineno for node in ast.walk(tree)
                     if isinstance(node, ast.Constant) and node.value == source.text), None)
    if line is None and (at := text.find(source.text)) >= 0:
        line = text.count("\n", 0, at) + 1
    same = None if line is not None else next(
        (p for p in sorted(root.glob("*.cu*")) if p.suffix in CUDA_SUFFIXES and _read(p) == source.text), None)
    return CudaSource(source.text, same.name if same else source.origin, 1 if same else line,
                      str(same) if same else None, source.flags, source.call, source.includes)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def import_candidate(recorder: Recorder) -> dict[str, Any]:
    """Import the candidate with the recorders in place; the trace part of the result."""
    from trialtui.runner.loader import load_module
    from trialtui.runner.candidate_errors import candidate_line, describe_capped

    for folder in (str(recorder.root), str(recorder.candidate.parent)):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    try:
        load_module(recorder.candidate, CANDIDATE_MODULE)
    except BaseException as exc:  # noqa: BLE001 - the candidate may raise anything at import, SystemExit included
        if isinstance(exc, KeyboardInterrupt):
            raise
        print(traceback.format_exc(), file=sys.stderr)
        return {"state": "error", "stage": "import", "message": describe_capped(exc), "exception": type(exc).__name__,
                "line": candidate_line(exc, str(recorder.candidate)), "launches": []}
    return {"state": "ok", "launches": []}


def gather(recorder: Recorder) -> tuple[list[CudaSource], list[str]]:
    """Sources the import recorded, then those of calls it did not reach, read from the syntax tree."""
    text = recorder.candidate.read_text(errors="replace")
    try:
        tree = ast.parse(text)
    except SyntaxError:
        tree = None
    sources = [locate(s, tree, text, recorder.root) for s in recorder.sources]
    unreadable = list(recorder.missing)
    if tree is not None:
        unseen = {c.node.lineno for c in loader_calls(tree)} - recorder.lines
        if unseen:
            found, unread = static_sources(tree, recorder.root)
            sources += [s for s in found if s.call in unseen]
            unreadable += [where for line, where in unread if line in unseen]
    return sources, unreadable


def compile_all(sources: list[CudaSource], archs: list[str], candidate: Path, root: Path,
                timeout_s: float) -> dict[str, Any]:
    """Every source for every arch; located errors are the file's, the rest become warnings."""
    from trialtui.runner.nvcc import compile_device, host_compiler, tool

    compiled: dict[str, Any] = {"state": "ok", "kernels": [], "errors": [], "skipped": [], "message": ""}
    findings: list[dict[str, Any]] = []
    nvcc = tool("nvcc")
    missing = "nvcc" if nvcc is None else ("a host C++ compiler (g++)" if host_compiler() is None else None)
    if missing:
        findings.append(Finding(WARNING, "cuda-not-compiled", f"{missing} not found: the CUDA source was not "
                                "compiled, so registers, spills and shared memory are unknown until the GPU build",
                                None, None, INSTALL_HINT if missing == "nvcc" else "install g++").to_dict())
        return {"compile": compiled, "findings": findings}
    with tempfile.TemporaryDirectory(prefix="trialtui-nvcc-") as tmp:
        jobs = [(source, arch) for source in sources for arch in archs]

        def build(job: tuple[CudaSource, str]) -> tuple[CudaSource, str, Any, dict[str, Any]]:
            source, arch = job
            code = device_code(source.text)
            name = Path(source.file).name if source.file else (candidate.name if source.line else "cuda_source.cu")
            base = source.line or 1
            # `#include "x.cuh"` resolves beside a .cu file, in the problem directory, and where the call says
            folders = (str(Path(source.file).parent),) if source.file else ()
            includes = tuple(dict.fromkeys((*folders, str(root), *source.includes)))
            try:
                return source, arch, code, compile_device(nvcc, code, name=name, base_line=base, arch=arch,
                                                          flags=source.flags, workdir=Path(tmp), timeout_s=timeout_s,
                                                          include_dirs=includes)
            except Exception as exc:  # noqa: BLE001 - a tool that cannot start is a warning, not a crash
                return source, arch, code, {"kernels": [], "errors": [], "doubts": [{"line": None, "error": f"{type(exc).__name__}: {exc}"}]}

        with ThreadPoolExecutor(max(1, min(len(jobs), 2))) as pool:  # nvcc is a process: threads suffice
            built = list(pool.map(build, jobs))
    for source, arch, code, out in built:
        for kernel in out["kernels"]:
            line = kernel["line"] if source.file_line(1) else None  # a .cu file's or a computed source's is not the candidate's
            compiled["kernels"].append({**kernel, "line": line, "source": source.origin, "language": "cuda"})
        for error in out["errors"]:
            compiled["errors"].append(_error(source, arch, error, _enclosing(code, source, error["line"])))
        for doubt in out["doubts"]:
            label = f"{Path(source.file).name} line" if source.file else "line"
            where = f"{label} {doubt['line']}: " if doubt["line"] else ""
            findings.append(Finding(WARNING, "cuda-device-only", f"the device code of {source.origin} did not compile "
                                    f"apart from its host code for {arch}: {where}{doubt['error']}", None, None,
                                    "the GPU build compiles it whole, with torch's headers, and will say whether this "
                                    "is real").to_dict())
        for header in out.get("missing_headers") or []:
            findings.append(Finding(WARNING, "cuda-header-missing", f"{header} is not on this machine: the device code "
                                    f"of {source.origin} was compiled without it for {arch}", None, None,
                                    "a library's headers (cuBLAS, CUTLASS) come with its wheel or toolkit; the GPU "
                                    "build needs them there").to_dict())
        for name in code.templates:
            findings.append(Finding(WARNING, "cuda-template", f"kernel {name} is a template: only its host code "
                                    "instantiates it, so its registers are known after the GPU build",
                                    source.file_line(code.kernels[name]), None,
                                    "an explicit instantiation (template __global__ void k<float>(...);) "
                                    "gets its facts here").to_dict())
    return {"compile": compiled, "findings": _once(findings)}


def _enclosing(code, source: CudaSource, line: int | None) -> str:
    """The __global__ kernel an error line falls in or after (by where kernels start), else the source."""
    if line is None:
        return source.origin
    at = line - (source.line or 1) + 1 if not source.file else line
    starts = [(start, name) for name, start in code.kernels.items() if start <= at]
    return max(starts)[1] if starts else source.origin


def _error(source: CudaSource, arch: str, error: dict[str, Any], name: str) -> dict[str, Any]:
    """A compile error as compile_findings reads it; a .cu file's line goes into the message."""
    mapped = source.file_line(1) is not None
    label = Path(source.file).name if source.file else "the CUDA source"
    message = error["error"] if mapped or not error["line"] else f"{label} line {error['line']}: {error['error']}"
    return {"name": name, "arch": arch, "line": error["line"] if mapped else None, "error": message}


def _once(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen, unique = set(), []
    for f in findings:
        key = (f["code"], f["message"], f["line"])
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def run(spec: CompileSpec) -> dict[str, Any]:
    """Import (recorded, nothing built), gather sources, compile their device code for each arch."""
    progress = Progress(spec.progress)
    archs = spec.arch
    candidate = Path(spec.candidate)
    progress(job="trace", phase="import")
    drop_ptrace_now()  # the candidate's module code runs here: where it runs as root, no way past every seal
    recorder = Recorder(candidate, Path(spec.root))
    recorder.install()
    trace = import_candidate(recorder)
    sources, unreadable = gather(recorder)
    kernels = [{"kernel": name, "line": s.file_line(line)}
               for s in sources for name, line in device_code(s.text).kernels.items()]
    trace["launches"] = kernels
    trace["preview"] = {"correct": None, "max_abs_err": None, "message": NOT_RUN}
    progress(job="compile", phase="compile", n=len(sources) * len(archs))
    built = compile_all(sources, archs, candidate, Path(spec.root), NVCC_TIMEOUT_S) if sources else \
        {"compile": {"state": "ok", "kernels": [], "errors": [], "skipped": [], "message": ""}, "findings": []}
    for where in unreadable:
        built["findings"].append(Finding(WARNING, "cuda-source-unread", f"the CUDA source of {where} could not be "
                                         "read here, so it was not compiled", None, None,
                                         "bind cuda_sources to a string (or call load_inline at module level, where "
                                         "importing the file records it); keep .cu files in the problem directory"
                                         ).to_dict())
    progress(job="compile", phase="done")
    return {"version": RESULT_VERSION, "state": "ok", "trace": trace, **built}


if __name__ == "__main__":
    serve(run, sys.argv, spec_type=CompileSpec)
