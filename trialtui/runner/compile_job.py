"""Child job: the Triton language's compile stage of validation, for real GPU targets, without a GPU
(`Triton.compile_job`; CUDA C++ candidates have trialtui.runner.cuda_compile_job).

`python -m trialtui.runner.compile_job SPEC.json RESULT.json`, without TRITON_INTERPRET. It imports
torch once, forks the trace (triton_trace, under the interpreter, whose patching would break
compilation in this process), imports the candidate while the trace runs, then builds every
launch the trace published with `triton.compile(ASTSource(...), target=GPUTarget("cuda", cc, 32))`
and reads from the cubin and PTX what a kernel engineer checks first: registers, spills, shared
memory, tensor-core instructions and the widest global load. The result holds both: `trace`
(launches, CPU preview) and `compile` (kernels, compile errors).
"""

from __future__ import annotations

import gc
import inspect
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from trialtui.core.job_spec import CompileSpec, TraceSpec
from trialtui.core.prctl import drop_ptrace_now
from trialtui.core.result import RESULT_VERSION
from trialtui.runner.job_progress import Progress
from trialtui.runner.ptx import ptx_facts
from trialtui.runner.triton_trace import def_line
from trialtui.runner.child import serve

CANDIDATE_MODULE = "trialtui_candidate"
WARP_SIZE = 32
_RESOURCE = re.compile(r"Function ([^\s:]+):\s*\n\s*REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")


def capability(arch: str) -> int:
    """sm_90, sm_90a or 90 → 90."""
    return int(arch.lower().removeprefix("sm_").rstrip("a"))


def cuobjdump_path() -> str | None:
    """The cuobjdump that ships inside triton, else one on PATH."""
    import triton.backends.nvidia as nvidia

    bundled = Path(nvidia.__file__).parent / "bin" / "cuobjdump"
    if bundled.exists():
        return str(bundled)
    return shutil.which("cuobjdump")


def resource_usage(cubin: bytes, tool: str | None) -> dict[str, dict[str, int]]:
    """Per function: REG, STACK, SHARED (static only), LOCAL, as `cuobjdump --dump-resource-usage` prints them."""
    if tool is None:
        return {}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(cubin)
        fh.flush()
        proc = subprocess.run([tool, "--dump-resource-usage", fh.name], capture_output=True, text=True, timeout=30)
    return {
        m.group(1): {"registers": int(m.group(2)), "stack": int(m.group(3)), "shared": int(m.group(4)), "local": int(m.group(5))}
        for m in _RESOURCE.finditer(proc.stdout)
    }


NO_MMA_SASS = {"sass_hgmma": 0, "sass_hmma": 0, "wgmma_shape": None, "sass_tma": False}


def sass_facts(cubin: bytes, tool: str | None, ptx: str | None = None) -> dict[str, Any]:
    """What the SASS says of a GEMM (core.languages.cuda_text.sass_mma_facts); nothing without cuobjdump.

    With the kernel's PTX: a kernel whose PTX has no mma instruction of any kind and no bulk tensor copy
    has no HMMA, HGMMA or UTMALDG in its SASS either (ptxas makes none on its own), so the listing is
    not made: `cuobjdump --dump-sass` runs nvdisasm, about 0.7 s of CPU per kernel, on every save."""
    from trialtui.core.languages.cuda_text import sass_mma_facts

    if tool is None:
        return {}
    if ptx is not None and "mma" not in ptx and "cp.async.bulk.tensor" not in ptx:
        return dict(NO_MMA_SASS)
    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(cubin)
        fh.flush()
        proc = subprocess.run([tool, "--dump-sass", fh.name], capture_output=True, text=True, timeout=60)
    return sass_mma_facts(proc.stdout) if proc.returncode == 0 else {}


def find_kernel(module, launch: dict[str, Any]):
    """The JITFunction behind a recorded launch: by its binding in the candidate, else by qualname."""
    from triton.runtime.jit import JITFunction

    obj = getattr(module, launch["attr"], None) if launch.get("attr") else None
    if obj is None and "<locals>" not in launch["qualname"]:
        obj = module if launch["module"] == CANDIDATE_MODULE else sys.modules.get(launch["module"])
        for part in launch["qualname"].split("."):
            obj = getattr(obj, part, None)
    for _ in range(8):  # through @autotune / @heuristics wrappers
        if obj is None or isinstance(obj, JITFunction):
            break
        obj = getattr(obj, "fn", None)
    return obj if isinstance(obj, JITFunction) else None


def decode_constexpr(value: Any, module) -> Any:
    import triton.language as tl

    if not isinstance(value, dict):
        return value
    if "dtype" in value:
        return tl.dtype(value["dtype"])
    if "tuple" in value:
        return tuple(decode_constexpr(v, module) for v in value["tuple"])
    if "jit" in value:
        return find_kernel(module, {"attr": None, **value["jit"]})
    raise ValueError(f"unknown constexpr encoding {value!r}")


def ast_source(fn, launch: dict[str, Any], module, backend):
    """ASTSource for one launch: constexprs and divisibility keyed by argument path, as the JIT does."""
    from triton.compiler import ASTSource

    names = list(fn.arg_names)
    signature = {name: launch["signature"][name] for name in names}
    constexprs = {(names.index(k),): decode_constexpr(v, module) for k, v in launch["constexprs"].items()}
    divisible = backend.parse_attr("D")
    attrs = {(names.index(k),): divisible for k in launch["divisible"]}
    if "constexprs" not in inspect.signature(ASTSource).parameters:
        raise RuntimeError("this triton's ASTSource has no `constexprs` parameter (triton 3.6 and 3.9 have it)")
    return ASTSource(fn, signature, constexprs, attrs)


def jit_functions(module):
    """The JITFunctions a module binds, seen through @autotune / @heuristics wrappers."""
    from triton.runtime.jit import JITFunction

    for value in list(vars(module).values()):
        for _ in range(8):
            if value is None or isinstance(value, JITFunction):
                break
            value = getattr(value, "fn", None)
        if isinstance(value, JITFunction):
            yield value


def error_line(exc: BaseException, module, launch: dict[str, Any]) -> int | None:
    """The file line Triton points at: its node line counts from the `def` of the function it was
    compiling, which may be a @jit helper the kernel calls."""
    lineno = getattr(getattr(exc, "node", None), "lineno", None)
    src = getattr(exc, "src", None)
    if lineno is not None and src:
        for fn in jit_functions(module):
            if fn.src == src and (start := def_line(fn.fn)) is not None:
                return start + lineno - 1
    return launch.get("line")


def error_message(exc: BaseException) -> str:
    """Triton's own words, without the source excerpt it prepends."""
    message = getattr(exc, "error_message", None)
    if message:
        return str(message).strip().splitlines()[0][:500]
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in lines:
        if "error" in line.lower() and not line.startswith("Repro command"):
            return line[:500]
    return (lines[-1] if lines else type(exc).__name__)[:500]


def compile_launch(module, launch: dict[str, Any], arch: str, tool: str | None) -> dict[str, Any]:
    """One kernel for one arch: its facts, or `error` (Triton's message), or `skipped` (why not compiled)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    started = time.perf_counter()
    base = {"name": launch["kernel"], "qualname": launch["qualname"], "binding": launch.get("attr"),
            "arch": arch, "line": launch.get("line")}
    fn = find_kernel(module, launch)
    if fn is None:
        return {**base, "skipped": f"kernel {launch['kernel']} is not reachable from the module (defined inside a function?)"}
    target = GPUTarget("cuda", capability(arch), WARP_SIZE)
    try:
        src = ast_source(fn, launch, module, make_backend(target))
        kernel = triton.compile(src, target=target, options=dict(launch["options"]))
    except Exception as exc:  # noqa: BLE001 - any compile failure is a finding, not a crash
        print(f"compiling {launch['kernel']} for {arch} failed:\n{exc}", file=sys.stderr)
        return {**base, "error": error_message(exc), "error_type": type(exc).__name__,
                "line": error_line(exc, module, launch), "detail": str(exc)[-2000:]}
    cubin = kernel.asm["cubin"]
    name = kernel.metadata.name
    usage = resource_usage(cubin, tool).get(name) or {}
    facts: dict[str, Any] = {
        **base,
        "registers": usage.get("registers"),
        # Triton's n_spills: local memory per thread in 4-byte words (ptxas puts spills in the stack frame)
        "spills": (usage["stack"] + usage["local"]) // 4 if usage else None,
        "local_bytes": usage["stack"] + usage["local"] if usage else None,
        # Triton's shared memory is dynamic (metadata); cuobjdump sees only static shared
        "shared_bytes": max(kernel.metadata.shared, usage.get("shared", 0)),
        **ptx_facts(kernel.asm["ptx"]),
        **sass_facts(cubin, tool, kernel.asm["ptx"]),
        "num_warps": kernel.metadata.num_warps,
        "num_stages": kernel.metadata.num_stages,
        "constexprs": launch["constexprs"],
        "signature": {k: v for k, v in launch["signature"].items() if v != "constexpr"},
        "tuning": launch.get("tuning") or {},
        "grid": launch.get("grid"),
        "launches": launch.get("count", 1),
        "compile_ms": round((time.perf_counter() - started) * 1000, 1),
    }
    if not usage:
        facts["note"] = "no resource usage from cuobjdump: registers and spills unknown"
    if launch.get("bf16_from_fp32"):
        facts["bf16_from_fp32"] = launch["bf16_from_fp32"]
    return facts


TRITON_KEY_FILE = "trialtui-triton-key.json"


def triton_files_fingerprint(root: Path) -> str:
    """Size and mtime of every file `triton_key()` hashes (its cache module, the compiler, backends and
    language sources, libtriton): a change to any of them changes this."""
    import hashlib

    entries = [root / "runtime" / "cache.py", *sorted((root / "_C").glob("libtriton.*"))]
    for folder in ("compiler", "backends", "language"):
        entries += sorted((root / folder).rglob("*.py"))
    digest = hashlib.sha256()
    for path in entries:
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def reuse_triton_key() -> None:
    """`triton_key()` hashes triton's sources and its 100 MB library: half a CPU second in every compile
    job. Its value is kept in Triton's cache folder under a fingerprint of those files, and handed to
    triton the way its own warm-up pools do (`triton.runtime.cache.triton_key = lambda: key`)."""
    import triton
    import triton.runtime.cache as cache

    folder = Path(triton.knobs.cache.dir)
    fingerprint = triton_files_fingerprint(Path(triton.__file__).parent)
    try:
        kept = json.loads((folder / TRITON_KEY_FILE).read_text())
        key = kept["key"] if kept.get("fingerprint") == fingerprint else None
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        key = None
    if not isinstance(key, str):
        key = cache.triton_key()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f"{TRITON_KEY_FILE}.{os.getpid()}"
            tmp.write_text(json.dumps({"fingerprint": fingerprint, "key": key}))
            os.replace(tmp, folder / TRITON_KEY_FILE)
        except OSError:
            pass  # a read-only cache folder: the next job hashes again
    cache.triton_key = lambda: key


def warm_compiler(archs: list[str]) -> None:
    """The one-time costs of a first compile (the key of triton itself, backend set-up), paid while the
    trace runs. Failures here resurface, with their message, in the real compile."""
    try:
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import make_backend

        reuse_triton_key()
        for arch in archs:
            make_backend(GPUTarget("cuda", capability(arch), WARP_SIZE)).hash()
    except Exception:  # noqa: BLE001 - warming is optional by design
        pass


class Trace:
    """The forked trace process: its launches file and its result, whatever way it ends."""

    def __init__(self, spec: CompileSpec, workdir: Path):
        self.launches = workdir / "launches.json"
        self.result_path = workdir / "trace.json"
        self.status: int | None = None
        self.pid = os.fork()
        if self.pid == 0:
            self._child(spec.trace(str(self.launches)))

    def _child(self, spec: TraceSpec) -> None:
        code = 0
        gc.freeze()  # the compile job's objects are never walked here: a collection would copy every page it touches
        try:
            from trialtui.runner import triton_trace

            result = triton_trace.run(spec)
            tmp = self.result_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(result, default=str))
            os.replace(tmp, self.result_path)
        except BaseException:  # noqa: BLE001 - nothing may escape a forked child into the parent's code
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    def exited(self) -> bool:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
        return self.status is not None

    def wait_for_launches(self, poll_s: float = 0.01) -> dict[str, Any]:
        """The published launches; none if the trace ended without publishing (the parent kills us on timeout)."""
        while not self.launches.exists():
            if self.exited() and not self.launches.exists():
                return {"launches": [], "skipped": []}
            time.sleep(poll_s)
        return json.loads(self.launches.read_text())

    def result(self) -> dict[str, Any]:
        if self.status is None:
            _, self.status = os.waitpid(self.pid, 0)
        try:
            return json.loads(self.result_path.read_text())
        except (OSError, ValueError):
            if os.WIFSIGNALED(self.status):
                why = f"died from {signal.Signals(os.WTERMSIG(self.status)).name}"
            else:
                why = f"exited with code {os.WEXITSTATUS(self.status)} before writing a result"
            return {"state": "error", "message": f"the trace process {why}", "launches": []}


def compile_all(spec: CompileSpec, trace: Trace, progress: Progress) -> dict[str, Any]:
    """Wait for the trace's launches, import the candidate (interpreter off), compile each launch for each arch.

    The candidate is imported here only once the trace has run it: a file that hangs (or spins) at import
    keeps one process busy until the timeout, not two, and one that launches nothing is not imported twice.
    The compiler's one-time costs are paid meanwhile."""
    archs = spec.arch
    result: dict[str, Any] = {"state": "error", "kernels": [], "errors": [], "skipped": [], "message": ""}
    stage = "wait"
    try:
        progress(job="compile", phase="wait")
        warmer = threading.Thread(target=warm_compiler, args=(archs,), daemon=True)
        warmer.start()
        traced = trace.wait_for_launches()
        result["skipped"] = list(traced.get("skipped") or [])
        if traced["launches"]:
            stage = "import"
            progress(job="compile", phase="import")
            from trialtui.runner.loader import Reference, load_module

            Reference.importable(spec.reference, spec.support_files)  # `from task import ...`
            module = load_module(spec.candidate, CANDIDATE_MODULE)
        stage = "compile"
        progress(job="compile", phase="compile", n=len(traced["launches"]) * len(archs))
        warmer.join()
        tool = cuobjdump_path()
        jobs = [(launch, arch) for launch in traced["launches"] for arch in archs]
        workers = max(1, min(len(jobs), os.cpu_count() or 1, 4))
        with ThreadPoolExecutor(workers) as pool:  # ptxas and much of MLIR run outside the GIL
            compiled = list(pool.map(lambda job: compile_launch(module, job[0], job[1], tool), jobs))
        for entry in compiled:
            if entry.get("skipped"):
                if entry["skipped"] not in result["skipped"]:  # once, not once per arch
                    result["skipped"].append(entry["skipped"])
            elif "error" in entry:
                result["errors"].append(entry)
            else:
                result["kernels"].append(entry)
        result["state"] = "ok"
        progress(job="compile", phase="done")
    except BaseException as exc:  # noqa: BLE001 - the candidate may raise anything at import, SystemExit included
        if isinstance(exc, KeyboardInterrupt):
            raise
        result["stage"] = stage
        result["message"] = f"{type(exc).__name__}: {str(exc).strip()[:500]}"
        print(traceback.format_exc(), file=sys.stderr)
    return result


WARM_IMPORTS = ("torch", "trialtui.runner.compare", "trialtui.runner.loader")  # never triton (see run)


def run(spec: CompileSpec) -> dict[str, Any]:
    """Trace (forked, interpreted) and compile (here) side by side, after one shared torch import."""
    progress = Progress(spec.progress)
    progress(job="trace", phase="starting")
    drop_ptrace_now()  # the candidate's own code runs here and in the trace: where it runs as root, no way past every seal
    # torch is the one import both processes share. triton is imported after the fork, once per
    # mode: @triton.jit reads TRITON_INTERPRET when it decorates, triton.language's own helpers included.
    import torch  # noqa: F401

    import trialtui.runner.compare  # noqa: F401 - the trace's imports, paid once before the fork
    import trialtui.runner.loader  # noqa: F401

    if "triton" in sys.modules:
        raise RuntimeError("triton was imported before the fork: the trace would get compiled, not interpreted, helpers")

    with tempfile.TemporaryDirectory(prefix="trialtui-compile-") as tmp:
        trace = Trace(spec, Path(tmp))
        compiled = compile_all(spec, trace, progress)
        traced = trace.result()
    return {"version": RESULT_VERSION, "state": "ok", "trace": traced, "compile": compiled}


if __name__ == "__main__":
    serve(run, sys.argv, warm_imports=WARM_IMPORTS, spec_type=CompileSpec)
