"""`trialtui init`: a new problem directory that works the first time, with comments that teach it."""

from __future__ import annotations

import shutil
from pathlib import Path

from trialtui.core.forms import detect
from trialtui.core.problem import REFERENCE_NAME, ProblemError


class ScaffoldError(ValueError):
    """The directory cannot be scaffolded without overwriting something."""


REFERENCE = '''"""The PyTorch reference (KernelBench form): Model, get_inputs, get_init_inputs."""
import torch
import torch.nn as nn

# Sizes: trialtui.toml's [test_sizes] and [bench_sizes] override these module constants.
batch_size = 4096
dim = 4096


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        return torch.nn.functional.gelu(x + self.bias)


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return [dim]
'''

CANDIDATE = '''# strategy: fused bias + GELU, one pass
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_gelu_kernel(x_ptr, bias_ptr, out_ptr, n_elements, dim, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    b = tl.load(bias_ptr + offsets % dim, mask=mask).to(tl.float32)
    y = x + b
    out = 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    """Same constructor as Model: trialtui copies the reference's weights where names match."""

    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        bias_gelu_kernel[(triton.cdiv(n, 1024),)](x, self.bias, out, n, x.shape[-1], BLOCK=1024)
        return out
'''

CONFIG = '''# trialtui.toml: the frozen benchmark. Every key is optional.
dtype = "float32"          # float32 | float16 | bfloat16
seeds = 5                  # correctness seeds
# atol = 1e-4              # default by dtype: fp32 1e-4, fp16/bf16 1e-2 (KernelBench's)
# rtol = 1e-4
allow_tf32 = false
arch = "sm_90"             # compile target(s) for validation, e.g. "sm_90,sm_80"
baselines = ["eager"]      # add "compile" to time torch.compile too; the first is primary
max_trials = 30            # trials that reach the GPU; invalid saves are free
# validate_timeout_s = 60  # the CPU check of a save (compile, interpreter run); longer is a `timeout` finding
# bench_timeout_s = 120    # one benchmark job; a candidate that hangs is a `timeout` trial after this long
target_speedup = 1.5       # a decisive win, together with sol_target
sol_target = 0.8           # fraction of speed-of-light
{sizes}
[profile]
when = "auto"              # auto: first correct trial, new best, plateau | always | never

[watch]
quiet_ms = 150             # an editor's burst of writes within this window is one save
busy = "queue"             # queue | latest | restart

[generalize]               # finalize checks the kernel on sizes, layouts and seeds it never saw
budget_s = 30              # at most this long; 0 turns it off
# fixed = ["num_heads"]    # sizes the problem lets a kernel rely on: never varied
'''


def _sizes_block(constants: dict[str, object]) -> str:
    if not constants:
        return ""
    small = "\n".join(f"{k} = {_toml(_small(v))}" for k, v in constants.items())
    full = "\n".join(f"{k} = {_toml(v)}" for k, v in constants.items())
    return (
        "\n# Small sizes for CPU correctness (Triton interpreter), full sizes for GPU timing.\n"
        f"[test_sizes]\n{small}\n\n[bench_sizes]\n{full}\n"
    )


def _small(value: object) -> object:
    if isinstance(value, tuple):
        return tuple(_small(v) for v in value)
    if isinstance(value, int) and value > 64:
        return 64 if value % 64 == 0 else 67
    return value


def _toml(value: object) -> str:
    """A size as TOML: tuples become arrays."""
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def scaffold(directory: Path, from_file: Path | None = None) -> list[Path]:
    """Write reference.py, a candidate and trialtui.toml; refuses to overwrite any of them."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    reference = directory / REFERENCE_NAME
    candidate = directory / "kernel.py"
    config = directory / "trialtui.toml"
    existing = [p.name for p in (reference, candidate, config) if p.exists()]
    if existing:
        raise ScaffoldError(f"{directory} already has {', '.join(existing)}; nothing was written")
    if from_file is not None:
        try:
            form = detect(Path(from_file))
        except ProblemError as exc:
            raise ScaffoldError(f"{from_file}: {exc}") from exc
        written = form.scaffold_candidate(Path(from_file).read_text())
        if written is None:
            raise ScaffoldError(f"{from_file} is a {form.label} problem file; `init --from` cannot start from that form")
        shutil.copyfile(from_file, reference)
        candidate_text, constants = written
        candidate.write_text(candidate_text)
    else:
        reference.write_text(REFERENCE)
        candidate.write_text(CANDIDATE)
        constants = {"batch_size": 4096, "dim": 4096}
    config.write_text(CONFIG.format(sizes=_sizes_block(constants)))
    return [reference, candidate, config]
