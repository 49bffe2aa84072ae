"""Child job: what the reference computes at bench sizes, with no GPU: its aten ops with shapes,
FLOPs, the minimum bytes, and where fusion would save traffic.

`python -m trialtui.runner.analyze_job`, its spec an `AnalyzeSpec` (the problem, the bench case, the
GPU and driver whose ceilings the roofline uses). The reference runs
on the meta device, so a 16k × 16k problem costs nothing; if meta fails (data-dependent ops), it
runs on CPU at bench sizes when they are small enough, else at test sizes scaled up.
"""

from __future__ import annotations

import math
import sys
import traceback
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from trialtui.core.gpus import ceilings_for
from trialtui.core.job_spec import AnalyzeSpec
from trialtui.core.result import RESULT_VERSION
from trialtui.core.roofline import roofline
from trialtui.runner.loader import Reference
from trialtui.runner.tensors import distinct_bytes, map_tensors
from trialtui.runner.child import serve

CPU_BYTES_LIMIT = 512 * 1024**2
MAX_OPS = 500
_REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "var", "std", "var_mean", "std_mean", "_softmax",
               "_log_softmax", "logsumexp", "native_layer_norm", "native_batch_norm", "native_group_norm",
               "_native_batch_norm_legit", "_native_batch_norm_legit_no_training", "argmax", "argmin",
               "cumsum", "prod", "norm", "linalg_vector_norm", "_fused_rms_norm", "any", "all"}


def _tensors(value: Any) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    map_tensors(value, found.append)
    return found


def _nbytes(tensors: list[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def _kind(func, flops: int) -> str:
    name = func.overloadpacket.__name__
    if flops:
        return "matmul"
    if torch.Tag.pointwise in func.tags:
        return "elementwise"
    if name in _REDUCTIONS or torch.Tag.reduction in func.tags:
        return "reduction"
    return "other"


class OpRecorder(TorchDispatchMode):
    """Every aten op the reference runs, with shapes, FLOPs (read off the flop counter around each
    op) and which earlier op produced each input, so fusable chains can be found afterwards."""

    def __init__(self, counter: FlopCounterMode):
        super().__init__()
        self.counter = counter
        self.ops: list[dict[str, Any]] = []
        self.producer: dict[int, int] = {}  # id(tensor) -> index of the op that made it
        self.keep: list[Any] = []  # keeps outputs alive so their ids stay unique while tracing

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        before = self.counter.get_total_flops()
        out = func(*args, **kwargs)
        flops = self.counter.get_total_flops() - before
        inputs, outputs = _tensors((args, kwargs)), _tensors(out)
        self.keep.append(out)
        producers = sorted({self.producer[id(t)] for t in inputs if id(t) in self.producer})
        if func.is_view or func.overloadpacket.__name__ in ("detach", "alias", "lift_fresh"):
            for t in outputs:  # a view is its base's data: it points at the same producer
                if producers:
                    self.producer[id(t)] = producers[0]
            return out
        index = len(self.ops)
        for t in outputs:
            self.producer[id(t)] = index
        self.ops.append({
            "op": str(func.overloadpacket),
            "kind": _kind(func, flops),
            "inputs": [list(t.shape) for t in inputs],
            "outputs": [list(t.shape) for t in outputs],
            "dtype": str(outputs[0].dtype).removeprefix("torch.") if outputs else None,
            "flops": flops,
            "bytes": _nbytes(inputs) + _nbytes(outputs),
            "out_bytes": _nbytes(outputs),
            "producers": producers,
        })
        return out


def fusion_opportunities(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chains an elementwise or reduction op joins with its producer (elementwise, reduction, or a
    matmul it could be the epilogue of): each chain is one kernel instead of several."""
    parent = list(range(len(ops)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    fusable = {"elementwise", "reduction", "matmul"}
    for j, op in enumerate(ops):
        if op["kind"] not in ("elementwise", "reduction"):
            continue
        for i in op["producers"]:
            if ops[i]["kind"] in fusable:
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(ops)):
        groups.setdefault(root(i), []).append(i)
    found = []
    for members in groups.values():
        if len(members) < 2:
            continue
        kinds = {ops[i]["kind"] for i in members}
        pattern = ("matmul_epilogue" if "matmul" in kinds else
                   "reduction_fusion" if "reduction" in kinds else "elementwise_chain")
        names = [ops[i]["op"].removeprefix("aten.") for i in members]
        saves = sum(2 * ops[i]["out_bytes"] for i in members[:-1])  # write + read back of each intermediate
        advice = {"matmul_epilogue": "apply them to the matmul accumulator before the store",
                  "reduction_fusion": "one pass over each row, intermediates in registers",
                  "elementwise_chain": "one elementwise kernel"}[pattern]
        size = f"{saves / 1e9:.2f} GB" if saves >= 1e9 else f"{saves / 1e6:.1f} MB"
        found.append({"pattern": pattern, "ops": names, "saves_bytes": saves,
                      "message": f"fuse {' → '.join(names)}: {advice} (saves ≈ {size} of traffic)"})
    return sorted(found, key=lambda f: -f["saves_bytes"])


def trace(reference: Reference, case: dict[str, Any], device: str) -> dict[str, Any]:
    """Build inputs and run the reference once under the recorders, all on `device`."""
    with torch.device(device):
        inputs = reference.make_inputs(case, 0)
        ref_call = reference.call(case, 0)
        model = ref_call.model
        weights = list(model.parameters()) + list(model.buffers()) if model is not None else []
        call = lambda: ref_call.fn(inputs)  # noqa: E731
    with torch.no_grad(), FlopCounterMode(display=False) as counter, OpRecorder(counter) as recorder:
        output = call()
    output_bytes = distinct_bytes(output)  # each byte once (runner/tensors.py): an output in an input's buffer is written, not read
    input_bytes = distinct_bytes(inputs, weights, output) - output_bytes
    ops = recorder.ops
    return {
        "device": device,
        "dtype": reference.kind.dtype_of(reference, inputs),  # GPU MODE's inputs keep their own
        "flops": counter.get_total_flops(),
        "input_bytes": input_bytes,
        "output_bytes": output_bytes,
        "min_bytes": input_bytes + output_bytes,
        "eager_bytes": sum(op["bytes"] for op in ops),
        "matmul_like": any(op["kind"] == "matmul" for op in ops),
        "fusion": fusion_opportunities(ops),
        "ops": [{k: v for k, v in op.items() if k not in ("producers", "out_bytes")} for op in ops[:MAX_OPS]],
        "ops_total": len(ops),
    }


def _input_bytes_on_meta(reference: Reference, case: dict[str, Any]) -> int | None:
    try:
        with torch.device("meta"):
            return distinct_bytes(reference.make_inputs(case, 0))
    except Exception:  # noqa: BLE001 - any failure just means "size unknown"
        return None


def _size_ratio(reference: Reference, bench: dict[str, Any], test: dict[str, Any]) -> float | None:
    """How much larger the bench inputs are than the test inputs: exact from meta inputs, else the
    ratio of the products of the cases' sizes (seeds aside)."""
    big, small = _input_bytes_on_meta(reference, bench), _input_bytes_on_meta(reference, test)
    if big and small:
        return big / small

    def volume(case: dict[str, Any]) -> float:
        sizes = [v for k, v in case.items() if k != "seed" and isinstance(v, (int, float)) and v > 0]
        return float(math.prod(sizes)) if sizes else 1.0

    return volume(bench) / volume(test) if bench or test else 1.0


def analyze(spec: AnalyzeSpec) -> dict[str, Any]:
    """Meta at bench sizes; else CPU at bench sizes if small; else CPU at test sizes, scaled."""
    bench, test = spec.bench_cases[spec.case], spec.test_cases[0]
    reference = Reference(spec.to_wire(), "meta")
    try:
        return {**trace(reference, bench, "meta"), "case": bench, "scaled": None}
    except Exception as exc:  # noqa: BLE001 - user code may raise anything on meta tensors
        failures = [f"meta: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"]
    cpu = Reference(spec.to_wire(), "cpu")
    result = trace(cpu, test, "cpu")
    factor = _size_ratio(reference, bench, test)
    if result["input_bytes"] * factor <= CPU_BYTES_LIMIT:
        return {**trace(cpu, bench, "cpu"), "case": bench, "scaled": None, "fallback": failures}
    for key in ("flops", "input_bytes", "output_bytes", "min_bytes", "eager_bytes"):
        result[key] = result[key] * factor
    result.update(case=test, fallback=failures, scaled={
        "from": test, "to": bench, "factor": factor, "note": "approximate: test-size figures scaled by input size"})
    return result


def run(spec: AnalyzeSpec) -> dict[str, Any]:
    try:
        result = analyze(spec)
    except Exception as exc:  # noqa: BLE001 - the reference may raise anything
        traceback.print_exc()
        return {"version": RESULT_VERSION, "state": "error", "message": f"{type(exc).__name__}: {exc}"}
    result.update(version=RESULT_VERSION, state="ok")
    ceilings = ceilings_for(spec.gpu, spec.driver) if spec.gpu else None
    result["roofline"] = (roofline(result["flops"], result["min_bytes"], result["dtype"], ceilings,
                                   spec.allow_tf32).to_dict() if ceilings else None)
    return result


if __name__ == "__main__":
    serve(run, sys.argv, spec_type=AnalyzeSpec)
