"""GPU MODE in the child: `generate_input` called plainly as GPU MODE's harness calls it, with the
case's seed combined with the run's; `ref_kernel` as the reference; `check_implementation` as judge."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch

from trialtui.runner.device_map import mapped
from trialtui.runner.forms import ReferenceCall, RunnerForm
from trialtui.runner.loader import combine_seed, seed_all
from trialtui.runner.tensors import map_tensors, tensors_of

OWN_NAMES = ("generate_input", "ref_kernel", "check_implementation")


class GpuMode(RunnerForm):
    checks_input_mutation = False
    judges_values = True

    def setup(self, ref) -> None:
        if ref.cuda_target is not None:  # the reference's "cuda" taken as the CPU where there is no CUDA
            for name in OWN_NAMES:
                setattr(ref.module, name, mapped(getattr(ref.module, name), ref.cuda_target))

    def make_inputs(self, ref, case: dict[str, Any], seed: int) -> Any:
        args = dict(case)
        args["seed"] = combine_seed(int(args.get("seed", 0)), seed)
        seed_all(args["seed"])  # for references that draw from the default generator
        # Called plainly, as GPU MODE's harness does (the reference puts its tensors on "cuda" with
        # its own generator); on the meta device, generated there for shapes without memory.
        with torch.device(ref.device) if ref.device.type == "meta" else nullcontext():
            data = ref.module.generate_input(**args)
        if ref.emulated:
            return map_tensors(data, lambda t: t.float() if t.dtype == torch.bfloat16 else t)
        return map_tensors(data, lambda t: t.to(ref.device))

    def dtype_of(self, ref, inputs: Any) -> str:
        """The inputs' own, as generate_input makes them (nothing is cast): the narrowest floating dtype among them
        (an fp8 GEMM's, not its fp32 scales'), whose math is the fastest the floor must allow; the configured one
        where none is floating, or where bf16 runs emulated as fp32 on the CPU."""
        found = [t.dtype for t in tensors_of(inputs) if t.is_floating_point()]
        if ref.emulated or not found:
            return ref.spec["dtype"]
        return str(min(found, key=lambda d: (torch.finfo(d).bits, str(d)))).removeprefix("torch.")

    def reference_call(self, ref, case: dict[str, Any], seed: int) -> ReferenceCall:
        return ReferenceCall(ref.module.ref_kernel)

    def check(self, ref, data: Any, output: Any) -> tuple[bool, str]:
        """GPU MODE's own check_implementation, accepting its old string-returning form."""
        verdict = ref.module.check_implementation(data, output)
        if isinstance(verdict, tuple):
            return bool(verdict[0]), str(verdict[1] if len(verdict) > 1 else "")
        return (not verdict, str(verdict or ""))


FORM = GpuMode()
