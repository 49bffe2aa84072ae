"""What a kernel's PTX says of it: the tensor-core instructions it uses and its widest global load, read
the same for a Triton kernel (runner/compile_job.py) and a CUDA C++ one (runner/nvcc.py)."""

from __future__ import annotations

import re
from typing import Any

TENSOR_CORE_OPS = ("tcgen05.mma", "wgmma", "mma")
_TENSOR_OP = re.compile(r"^\s*(?:@!?%p\d+\s+)?(tcgen05\.mma|wgmma\.mma_async|mma\.sync)\b", re.M)
_GLOBAL_LOAD = re.compile(r"^\s*(?:@!?%p\d+\s+)?(ld\.global\S*)", re.M)
_CP_ASYNC = re.compile(r"^\s*(?:@!?%p\d+\s+)?cp\.async\.c[ag]\.shared\.global\S*\s+\[[^\]]*\],\s*\[[^\]]*\],\s*(0x[0-9a-fA-F]+|\d+)", re.M)
_LOAD_TYPE = re.compile(r"\.[bfsu](\d+)$")
_LOAD_VECTOR = re.compile(r"\.v(\d+)\.")


def ptx_facts(ptx: str) -> dict[str, Any]:
    """Tensor-core instructions present, and the widest global load per thread in bits."""
    ops = {m.group(1) for m in _TENSOR_OP.finditer(ptx)}
    op = next((name for name in TENSOR_CORE_OPS if any(o.startswith(name) for o in ops)), None)
    widest, widest_bits = None, 0
    for m in _GLOBAL_LOAD.finditer(ptx):
        instr = m.group(1)
        ty = _LOAD_TYPE.search(instr)
        vec = _LOAD_VECTOR.search(instr + ".")
        bits = (int(ty.group(1)) if ty else 32) * (int(vec.group(1)) if vec else 1)
        if bits > widest_bits:
            widest, widest_bits = instr, bits
    for m in _CP_ASYNC.finditer(ptx):
        bits = int(m.group(1), 0) * 8
        if bits > widest_bits:
            widest, widest_bits = "cp.async " + m.group(1), bits
    return {
        "tensor_cores": op is not None,
        "tensor_core_op": op,
        "vector_width": widest_bits or None,
        "widest_load": widest,
        "tma": "cp.async.bulk.tensor" in ptx,
    }
