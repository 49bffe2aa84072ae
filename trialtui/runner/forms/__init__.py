"""The child-process half of each problem form: inputs, the reference's call, the candidate's build,
the form's own check. Looked up through the core form's `runner` ("module:attribute"), so a plug-in
form brings its own.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Protocol

from trialtui.core.forms import get_form

if TYPE_CHECKING:
    import torch


class LoadedReference(Protocol):
    """What a form's half may use of the loaded reference (`trialtui.runner.loader.Reference`, which
    looks its form up here): named apart so that this module needs neither the loader nor torch."""

    spec: dict[str, Any]  # the job's problem spec
    module: ModuleType  # reference.py, imported
    device: torch.device
    dtype: torch.dtype
    emulated: bool  # bfloat16 run as float32 under Triton's interpreter
    cuda_target: torch.device | None  # the device a reference's "cuda" means when there is no CUDA
    constants: list  # module-level size constants a case may override (KernelBench)
    cast_from: list[str]  # floating dtypes of the problem's own inputs the configured dtype replaced (KernelBench)

    def cast(self, tensor: torch.Tensor) -> torch.Tensor: ...

    def sizes(self, case: dict[str, Any]) -> ContextManager[None]: ...

    def init_inputs(self, case: dict[str, Any]) -> list[Any]: ...

    def model(self, case: dict[str, Any], seed: int) -> torch.nn.Module: ...


@dataclass
class ReferenceCall:
    """The reference for one case and seed: its callable, what the candidate's process needs to build
    a matching candidate (constructor arguments, weights), and the module when there is one."""

    fn: Callable[[Any], Any]
    payload: dict[str, Any] = field(default_factory=dict)
    model: Any = None


class RunnerForm(ABC):
    """Inputs and the reference's call are the form's own; the other defaults suit a form whose
    candidate is a plain function judged by trialtui's comparison."""

    checks_input_mutation = True  # compare the candidate's inputs before and after its call
    judges_values = False  # the problem's own check judges values: trialtui's dtype tolerances apply only if set

    def setup(self, ref: LoadedReference) -> None:
        """After the reference module is imported: whatever the form needs before making inputs."""

    @abstractmethod
    def make_inputs(self, ref: LoadedReference, case: dict[str, Any], seed: int) -> Any:
        """Inputs for one case under one seed, on the reference's device and in its dtype."""

    @abstractmethod
    def reference_call(self, ref: LoadedReference, case: dict[str, Any], seed: int) -> ReferenceCall:
        """The reference for one case and seed."""

    def check(self, ref: LoadedReference, data: Any, output: Any) -> tuple[bool, str] | None:
        """The problem's own verdict on an output, or None when the form has none."""
        return None

    def dtype_of(self, ref: LoadedReference, inputs: Any) -> str:
        """The problem's dtype as its labels, roofline and floor name it: the configured one, which the form
        casts every floating input to."""
        return ref.spec["dtype"]

    def build_candidate(self, entry: Any, payload: dict[str, Any], device: Any, dtype: Any) -> Callable[[Any], Any]:
        """The candidate's callable from its entry point, in the candidate's process, from the
        reference call's payload (plus the seed)."""
        return entry


@cache
def runner_form(name: str) -> RunnerForm:
    """The runner half of the form named `name` (its core half says where it lives)."""
    module, _, attribute = get_form(name).runner.partition(":")
    found = getattr(importlib.import_module(module), attribute)
    if not isinstance(found, RunnerForm):
        raise TypeError(f"{get_form(name).runner} is a {type(found).__name__}, not a RunnerForm")
    return found
