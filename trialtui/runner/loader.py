"""Load a reference and a candidate in any problem form and make their seeded inputs.

Runs only inside child processes: importing a candidate executes it.
"""

from __future__ import annotations

import importlib.util
import linecache
import os
import sys
import types
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

from trialtui.runner import constants
from trialtui.runner.known_good import trusted_imports
from trialtui.runner.forms import runner_form

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


BF16_NOTE = (
    "bfloat16 runs as float32 on the CPU: Triton's interpreter misreads bfloat16 memory "
    "(checked with triton 3.9); bfloat16 tolerances still apply"
)


def interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


def load_module(path: str | Path, name: str, as_path: str | Path | None = None, source: str | None = None):
    """Import a file under a private module name (Triton's @jit needs a real file for source).

    `as_path` runs a snapshot under the name the user knows: `__file__`, tracebacks and files read
    beside it resolve against the problem directory, while the source (linecache, so Triton's
    inspect.getsource too) is the snapshot's, whatever the file on disk holds by now. `source` is
    the text itself (the reference's known-good bytes, sent in the job's spec), run as `path`.
    """
    path = Path(path)
    if source is not None:
        path, as_path = None, as_path or path
    if as_path is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    filename = str(as_path)
    source = path.read_text(encoding="utf-8") if source is None else source
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(name)
    module.__file__ = filename
    sys.modules[name] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def seed_all(seed: int) -> None:
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def combine_seed(public: int, secret: int) -> int:
    """Cantor pairing, as GPU MODE combines its secret seed with a case's public one."""
    return public + (public + secret) * (public + secret + 1) // 2


class Reference:
    """The problem's reference and input generator, one interface over every form (`kind` holds
    what differs)."""

    def __init__(self, spec: dict[str, Any], device: str):
        self.spec = spec
        self.form = spec["form"]
        self.kind = runner_form(self.form)
        self.device = torch.device(device)
        self.dtype = DTYPES[spec["dtype"]]
        self.emulated = self.device.type == "cpu" and self.dtype == torch.bfloat16 and interpreted()
        if self.emulated:
            self.dtype = torch.float32
        trusted_imports(spec)  # the checker imports nothing from a folder a candidate can write
        # the engine's known-good text of it when the spec has one: a job running beside this one may
        # have changed or removed the file (engine/guard.py puts it back, but not before this reads it)
        self.module = load_module(spec["reference"], "trialtui_reference", source=spec.get("reference_source"))
        self.constants: list = []  # module-level size constants a case may override (KernelBench)
        self.cast_from: list[str] = []  # floating dtypes of get_inputs' the configured dtype replaced (KernelBench)
        self.cuda_target = self.device if self.device.type != "cuda" and not torch.cuda.is_available() else None
        self.kind.setup(self)

    @staticmethod
    def importable(reference: str | Path, support_files: list[str]) -> None:
        """In a process that runs the candidate (never the checker: runner/known_good.py): the problem
        directory and the folders of its support files (GPU MODE's `files:`, e.g. `../utils.py`) go
        first on sys.path, so the candidate's `from task import input_t` and `from utils import ...` work."""
        folders = [str(Path(reference).resolve().parent)]
        folders += [str(Path(p).parent) for p in support_files]
        for folder in reversed(list(dict.fromkeys(folders))):
            if folder in sys.path:
                sys.path.remove(folder)
            sys.path.insert(0, folder)

    def cast(self, tensor: torch.Tensor) -> torch.Tensor:
        tensor = tensor.to(self.device)
        return tensor.to(self.dtype) if tensor.is_floating_point() else tensor

    @contextmanager
    def sizes(self, case: dict[str, Any]) -> Iterator[None]:
        """Sizes that are module constants (KernelBench's, which get_inputs reads): overridden for a
        case, constants derived from them included."""
        saved = constants.apply(vars(self.module), self.constants, case) if case else {}
        try:
            yield
        finally:
            constants.restore(vars(self.module), saved)

    def make_inputs(self, case: dict[str, Any], seed: int) -> Any:
        """Inputs for one case under one seed, on the device and in the problem's dtype."""
        return self.kind.make_inputs(self, case, seed)

    def call(self, case: dict[str, Any], seed: int):
        """The reference's callable for one case and seed, and what a candidate's process needs to
        build its match (a `trialtui.runner.forms.ReferenceCall`)."""
        return self.kind.reference_call(self, case, seed)

    def init_inputs(self, case: dict[str, Any]) -> list[Any]:
        with self.sizes(case):
            return list(self.module.get_init_inputs())

    def model(self, case: dict[str, Any], seed: int) -> torch.nn.Module:
        """KernelBench's Model, seeded before construction as KernelBench does."""
        with self.sizes(case):
            seed_all(seed)
            model = self.module.Model(*self.init_inputs(case))
        return model.to(device=self.device, dtype=self.dtype)

    def check(self, data: Any, output: Any) -> tuple[bool, str] | None:
        """The problem's own verdict on an output (GPU MODE's check_implementation), or None."""
        return self.kind.check(self, data, output)


class Candidate:
    """A candidate file's entry point, built to match the reference (weights included)."""

    def __init__(self, spec: dict[str, Any], path: str | Path, reference: Reference):
        self.reference = reference
        self.module = load_module(path, "trialtui_candidate")
        self.entry_point = spec["entry_point"]
        if not hasattr(self.module, self.entry_point):
            raise AttributeError(f"candidate defines no {self.entry_point}")

    def build(self, case: dict[str, Any], seed: int, payload: dict[str, Any]) -> Callable[[Any], Any]:
        """Built in this process, as the candidate's own process builds it from the same payload."""
        ref = self.reference
        with ref.sizes(case):
            return ref.kind.build_candidate(getattr(self.module, self.entry_point), {**payload, "seed": seed},
                                            ref.device, ref.dtype)


def load_matching_weights(target: torch.nn.Module, source: torch.nn.Module | dict[str, torch.Tensor]) -> list[str]:
    """Copy parameters and buffers whose names and shapes match; returns the names of the source's not copied
    (the candidate keeps its own initial values there: said where it is then wrong, `unshared_note`)."""
    theirs = source if isinstance(source, dict) else source.state_dict()
    ours = target.state_dict()
    matched = {k: v for k, v in theirs.items() if k in ours and ours[k].shape == v.shape}
    if matched:
        target.load_state_dict(matched, strict=False)
    return [k for k in theirs if k not in matched]


def unshared_note(names: Any) -> str:
    """A wrong output's word on the reference's weights the candidate's module has no match for, else ''."""
    if not names or not isinstance(names, list):
        return ""
    listed = ", ".join(str(n) for n in names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return (f" (the reference's {listed} were not copied into the candidate's module: it has no parameter or buffer "
            "of that name and shape, so it kept its own initial values; name them as the reference does)")


def build_pair(reference: Reference, candidate: Candidate, case: dict[str, Any], seed: int):
    """Reference and candidate callables for one case, weights shared where names match."""
    call = reference.call(case, seed)
    return call.fn, candidate.build(case, seed, call.payload)
