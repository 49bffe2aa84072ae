"""nvcc, cuobjdump and nvdisasm for CUDA C++ candidates: where they are, and one device-only
compile of one source for one architecture with its resource facts.

The tools come from the `nvidia-cuda-nvcc` wheel (`pip install -e '.[cuda]'`), a CUDA
toolkit (CUDA_HOME, PATH, /usr/local/cuda), or, for cuobjdump and nvdisasm, the copies Triton
ships. nvcc also needs the host C++ compiler (g++) to preprocess.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from trialtui.core.languages.cuda_text import (
    DeviceCode,
    compile_errors,
    demangle,
    ptxas_resources,
    quoted_names,
    sass_tensor_op,
)
from trialtui.runner.ptx import ptx_facts

# What torch.utils.cpp_extension passes nvcc for every CUDA source (COMMON_NVCC_FLAGS): the same
# half/bfloat16 rules, so a source that fails the GPU build fails here too.
TORCH_NVCC_FLAGS = ("-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
                    "--expt-relaxed-constexpr", "-std=c++17")
# A header this machine does not have; its #include is dropped and the build tried again, this many times.
MISSING_HEADER = re.compile(r"(\S+): No such file or directory")
MISSING_HEADER_ROUNDS = 4
# What <torch/extension.h> brings into a source that device code commonly leans on.
PROLOGUE = ("cuda.h", "cuda_runtime.h", "cuda_fp16.h", "cuda_bf16.h", "cstdint", "cfloat", "cmath", "climits")
# The user's extra_cuda_cflags that change device code and make sense without host code.
PASSED_FLAGS = re.compile(r"^(-O\d|--?use_fast_math|-[DU]\S+|--?maxrregcount=\d+|--expt-relaxed-constexpr|"
                          r"--expt-extended-lambda|--extended-lambda|--?std=c\+\+\d+|-lineinfo|"
                          r"--(?:ftz|prec-div|prec-sqrt|fmad)=(?:true|false)|-Xptxas=\S+)$")


def _wheel_bins() -> list[Path]:
    """bin/ folders of NVIDIA's CUDA wheels (nvidia/cu13/bin, nvidia/cuda_nvcc/bin, ...)."""
    spec = importlib.util.find_spec("nvidia")
    roots = list(spec.submodule_search_locations or []) if spec else []
    return sorted({b for root in roots for b in Path(root).glob("*/bin") if b.is_dir()})


def tool(name: str) -> str | None:
    """The named CUDA tool: an NVIDIA wheel's, CUDA_HOME's, PATH's, /usr/local/cuda's, then Triton's copy."""
    places = [*_wheel_bins()]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            places.append(Path(os.environ[var]) / "bin")
    for place in places:
        if (place / name).is_file() and os.access(place / name, os.X_OK):
            return str(place / name)
    found = shutil.which(name)
    if found:
        return found
    for place in (Path("/usr/local/cuda/bin"), _triton_bin()):
        if place is not None and (place / name).is_file():
            return str(place / name)
    return None


def _triton_bin() -> Path | None:
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent / "backends" / "nvidia" / "bin"


def host_compiler() -> str | None:
    return shutil.which("g++") or shutil.which("c++")


def target(arch: str, flags: tuple[str, ...]) -> str:
    """sm_90 becomes sm_90a when the user's flags ask for the arch-specific features (wgmma, setmaxnreg)."""
    if not arch.endswith("a") and any(f"{arch.removeprefix('sm_')}a" in f for f in flags):
        return f"{arch}a"
    return arch


def compile_device(nvcc: str, code: DeviceCode, *, name: str, base_line: int, arch: str,
                   flags: tuple[str, ...], workdir: Path, timeout_s: float,
                   include_dirs: tuple[str, ...] = ()) -> dict[str, Any]:
    """Build one source's device code for one arch. Returns `kernels` (facts per __global__),
    `errors` (located in kept code, so the file's own: name, line, error), `doubts` (errors the
    blanked host code or a header this machine lacks may have caused) and `missing_headers`."""
    started = time.perf_counter()
    arch_dir = Path(tempfile.mkdtemp(prefix=f"{Path(name).stem}-{arch}-", dir=workdir))  # one per build: they run at once
    source = arch_dir / "device.cu"
    prologue = "".join(f"#include <{h}>\n" for h in PROLOGUE)
    passed = [f for f in flags if PASSED_FLAGS.match(f)]
    cmd = [nvcc, "-cubin", f"-arch={target(arch, flags)}", "-Xptxas", "-v", "--keep", "--keep-dir", str(arch_dir),
           *TORCH_NVCC_FLAGS, *passed, *(f"-I{d}" for d in include_dirs), "-o", str(arch_dir / "device.cubin"),
           str(source)]
    result: dict[str, Any] = {"kernels": [], "errors": [], "doubts": [], "missing_headers": [], "command": " ".join(cmd[1:])}
    lines = code.text.split("\n")
    for _ in range(MISSING_HEADER_ROUNDS):
        source.write_text(f'{prologue}#line {base_line} "{name}"\n' + "\n".join(lines))
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=arch_dir)
        output = proc.stdout + proc.stderr
        missing = [(line, m.group(1)) for file, line, message in compile_errors(output)
                   if file and Path(file).name == Path(name).name and line is not None
                   and (m := MISSING_HEADER.match(message))] if proc.returncode else []
        if not missing:
            break
        for line, header in missing:  # a library's header this machine lacks (cuBLAS, CUTLASS): not the file's fault
            lines[line - base_line] = ""
            result["missing_headers"].append(header)
    if proc.returncode != 0:
        for file, line, message in compile_errors(output):
            entry = re.search(r"[Ee]ntry function '([^']+)'", message) if file is None else None
            kernel = demangle(entry.group(1)) if entry else None
            if kernel in code.kernels:  # ptxas on one of the file's kernels (too much shared data, ...)
                file, line = name, base_line + code.kernels[kernel] - 1
            own = file is not None and Path(file).name == Path(name).name and line is not None
            source_line = line - base_line + 1 if own else None
            trusted = (own and code.kept_line(source_line) and not (quoted_names(message) & code.dropped_names)
                       and not result["missing_headers"])  # what a dropped header declared may be all it lacks
            (result["errors"] if trusted else result["doubts"]).append({"line": line if own else None, "error": message})
        if not result["errors"] and not result["doubts"]:
            lines = [line.strip() for line in output.splitlines() if line.strip()]
            result["doubts"].append({"line": None, "error": (lines[-1] if lines else f"nvcc exited {proc.returncode}")[:500]})
        return result
    cubin = arch_dir / "device.cubin"
    ptx = next(iter(sorted(arch_dir.glob("*.ptx"))), None)
    ptx_text = ptx.read_text(errors="replace") if ptx else ""
    sass = disassemble(cubin)
    by_name = {demangle(symbol): (symbol, usage) for symbol, usage in ptxas_resources(output).items()}
    elapsed = round((time.perf_counter() - started) * 1000, 1)
    for kernel, line in code.kernels.items():
        if kernel not in by_name:
            continue
        symbol, usage = by_name[kernel]
        family, sass_op = sass_tensor_op(_function_sass(sass, symbol)) if sass else (None, None)
        facts = ptx_facts(_function_ptx(ptx_text, symbol))
        if sass:
            facts.update(tensor_cores=family is not None, tensor_core_op=family)
        result["kernels"].append({
            "name": kernel, "symbol": symbol, "arch": arch, "line": base_line + line - 1,
            "registers": usage.get("registers"),
            "spills": usage.get("spill_stores", 0) // 4,  # 4-byte words, as the Triton side counts them
            "spill_bytes": usage.get("spill_stores", 0),
            "local_bytes": usage.get("stack", 0),
            "shared_bytes": usage.get("shared", 0),  # static __shared__ only: dynamic is set at launch
            "barriers": usage.get("barriers"),
            **facts,
            "sass_op": sass_op,
            "tensor_cores_from": "sass" if sass else "ptx",
            **({"instantiated": code.instantiated[kernel]} if kernel in code.instantiated else {}),
            # the block size is the host code's: known where its launch spells it out
            "block_threads": code.blocks.get(kernel),
            "num_warps": -(-code.blocks[kernel] // 32) if kernel in code.blocks else None,
            "compile_ms": elapsed,
        })
    return result


def disassemble(cubin: Path) -> str:
    """SASS from cuobjdump -sass, else nvdisasm; empty when neither is there or both fail."""
    for name, args in (("cuobjdump", ["-sass"]), ("nvdisasm", [])):
        path = tool(name)
        if path is None:
            continue
        try:
            proc = subprocess.run([path, *args, str(cubin)], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0 and proc.stdout.strip():
            return proc.stdout
    return ""


def _function_sass(sass: str, symbol: str) -> str:
    """One function's part of a SASS listing (cuobjdump: `Function : sym`; nvdisasm: `sym:` label)."""
    for pattern in (rf"Function : {re.escape(symbol)}\b", rf"^{re.escape(symbol)}:", rf"\.text\.{re.escape(symbol)}\b"):
        m = re.search(pattern, sass, re.M)
        if m:
            end = re.search(r"Function : |^\s*\.section\s+\.text\.", sass[m.end():], re.M)
            return sass[m.start(): m.end() + (end.start() if end else len(sass))]
    return sass


def _function_ptx(ptx: str, symbol: str) -> str:
    """One entry's PTX, from its `.entry` to the next one."""
    m = re.search(rf"\.entry\s+{re.escape(symbol)}\s*\(", ptx)
    if not m:
        return ptx
    end = re.search(r"\.entry\s", ptx[m.end():])
    return ptx[m.start(): m.end() + (end.start() if end else len(ptx))]
