"""KernelBench in the child: inputs under a case's sizes, `Model` seeded before construction, and a
`ModelNew` built with the same constructor arguments and the reference's weights."""

from __future__ import annotations

from typing import Any, Callable

import torch

from trialtui.runner import constants
from trialtui.runner.device_map import mapped
from trialtui.runner.forms import ReferenceCall, RunnerForm
from trialtui.runner.loader import load_matching_weights, seed_all
from trialtui.runner.tensors import map_tensors, tensors_of


class KernelBench(RunnerForm):
    def setup(self, ref) -> None:
        ref.constants = constants.constant_block(ref.spec["reference"], ref.spec.get("reference_source"))
        if ref.cuda_target is not None:  # `.cuda()` in get_inputs, as GPU MODE's references (runner/device_map.py)
            for name in ("get_inputs", "get_init_inputs"):  # not Model: its own super(Model, self) must find the class
                if callable(getattr(ref.module, name, None)):
                    setattr(ref.module, name, mapped(getattr(ref.module, name), ref.cuda_target))

    def make_inputs(self, ref, case: dict[str, Any], seed: int) -> Any:
        with ref.sizes(case), torch.device(ref.device):
            seed_all(seed)  # generated on the device: seeded all the same, and fast at bench sizes
            inputs = list(ref.module.get_inputs())
        own = {str(t.dtype).removeprefix("torch.") for t in tensors_of(inputs) if t.is_floating_point() and t.dtype != ref.dtype}
        ref.cast_from = sorted(own - {"float32"})  # a dtype the problem chose itself, cast away: said (bench_job)
        return map_tensors(inputs, ref.cast)

    def reference_call(self, ref, case: dict[str, Any], seed: int) -> ReferenceCall:
        model = ref.model(case, seed)
        payload = {"init_inputs": ref.init_inputs(case), "weights": dict(model.state_dict())}
        forward = mapped(model, ref.cuda_target) if ref.cuda_target is not None else model
        return ReferenceCall(lambda inputs: forward(*inputs), payload, model)

    def build_candidate(self, entry: Any, payload: dict[str, Any], device: Any, dtype: Any) -> Callable[[Any], Any]:
        seed_all(int(payload["seed"]))
        model = entry(*payload["init_inputs"])
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"{getattr(entry, '__name__', 'the entry point')}(...) returned {type(model).__name__}, not an nn.Module")
        model = model.to(device=device, dtype=dtype)
        weights = payload.get("weights") or {}
        call = lambda inputs: model(*inputs)  # noqa: E731
        call.unshared = load_matching_weights(model, weights) if weights else []  # for a wrong output's message
        return call


FORM = KernelBench()
