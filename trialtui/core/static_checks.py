"""Validation stage 1: what a candidate's syntax tree alone shows will break, or will cheat.

It runs in the watcher's own process on every save, so it reads the AST and never imports or
executes the candidate, and it stays well inside its budget of 20 ms for a 300-line file. What only
a compile or a run can show is left to the compile stage, in child processes. The Triton checks
are in `languages/triton_checks`, the shared tree reading in `check_ast`.

Findings carry 1-based lines and columns, as editors show them; file-level findings carry none.
The tree is walked iteratively and every recursive helper has a depth cap, so a pathological but
valid file (an 800-term sum) cannot raise RecursionError here.
"""

from __future__ import annotations

import ast
import codecs
import sys
from collections import ChainMap
from pathlib import Path

from trialtui.core.check_ast import (
    COMPREHENSIONS,
    MAX_DEPTH,
    MAX_VALUES,
    SCOPES,
    Bindings,
    Context,
    bind_name,
    child_nodes,
    dotted_name,
    param_list,
    position_of,
    unpacked_targets,
)
from trialtui.core.forms import ProblemForm, get_form
from trialtui.core.languages import language_of
from trialtui.core.model import MAX_SOURCE_BYTES, Finding, Severity
from trialtui.core.problem import top_level_names
from trialtui.core.languages.triton_checks import CONFIG_CALLS, TL, Kernel, TritonChecks

ALLOWED_PACKAGES = frozenset({"torch", "triton", "numpy"})

ERROR, WARNING = Severity.ERROR.value, Severity.WARNING.value
# Names whose replacement fakes a timing: KernelBench's timing_event_patch list, plus do_bench.
TIMING_NAMES = (
    "torch.cuda.Event", "torch.cuda.synchronize", "torch.cuda.current_stream",
    "time.perf_counter", "time.perf_counter_ns", "time.time", "time.time_ns",
    "time.monotonic", "time.monotonic_ns", "triton.testing.do_bench", "triton.testing.do_bench_cudagraph",
)
THREAD_MODULES = ("threading", "_thread", "multiprocessing", "concurrent.futures", "torch.multiprocessing")
STREAM_CALLS = frozenset({"torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.ExternalStream",
                          "torch.cuda.set_stream", "torch.Stream"})
STREAM_METHODS = frozenset({"wait_stream", "record_stream"})
USE_YOUR_KERNEL = "compute the result with your own kernel; the reference is what it is checked against"
REFERENCE_NAMES = frozenset({"Model", "ref_kernel"})
TORCH_COMPUTE = frozenset(f"torch.{op}" for op in (
    "matmul", "mm", "bmm", "addmm", "baddbmm", "einsum", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "softmax", "log_softmax",
    "relu", "sigmoid", "tanh", "layer_norm", "batch_norm", "group_norm", "instance_norm",
))
# Calls whose string argument names a file or module: reading reference.py is reading the answer.
LOADERS = frozenset({"open", "io.open", "runpy.run_path", "runpy.run_module", "pathlib.Path",
                     "importlib.util.spec_from_file_location", "torch.load", "numpy.load"})
DYNAMIC_IMPORTS = frozenset({"importlib.import_module", "__import__"})
CHECKED_NODES = frozenset({ast.Import, ast.ImportFrom, ast.Call, ast.Assign, ast.AugAssign, ast.AnnAssign,
                           ast.Delete, ast.Try, ast.TryStar, ast.ClassDef})


def check_source(
    source: bytes | str,
    *,
    form: str,
    filename: str = "candidate.py",
    siblings: set[str] | frozenset[str] = frozenset(),
    folder: Path | None = None,
) -> list[Finding]:
    """Every finding the candidate's text and syntax tree show, sorted by line.

    `form` is the name of the problem's form (it picks the entry point and the problem modules a
    candidate may import); `siblings` are the module stems of the problem's other candidates, which
    this one must not import; `folder`, the problem directory, is where the candidate's language
    looks for files the candidate names (a CUDA candidate's .cu file).
    """
    kind = get_form(form)  # an unknown name is a ValueError naming the known ones
    text = _read_text(source, filename)
    if isinstance(text, Finding):
        return [text]
    try:
        tree = ast.parse(text, filename=filename)
    except SyntaxError as exc:
        line_text = (exc.text or "").strip()
        return [Finding(ERROR, "syntax", f"syntax error: {exc.msg}", exc.lineno, exc.offset,
                        hint=f"fix line {exc.lineno}: {line_text}" if line_text else "fix the syntax")]
    except (RecursionError, MemoryError):
        return [Finding(ERROR, "syntax", "syntax error: expressions nested too deeply for Python to parse",
                        hint="split the deepest expression into named steps")]
    if not tree.body:
        return [Finding(ERROR, "empty", f"{filename} has no code (it is empty or holds only comments)",
                        hint=f"define {kind.entry_point}; `trialtui init` writes a starting candidate")]
    found = _Checker(tree, kind, filename, frozenset(siblings)).run() + language_of(tree).static_checks(tree, folder)
    return sorted(found, key=lambda f: (f.line or 0, f.col or 0, f.code))


def _read_text(source: bytes | str, filename: str) -> str | Finding:
    """The source as text, or the one finding that says why it is not Python source."""
    if len(source) > MAX_SOURCE_BYTES:
        return Finding(ERROR, "too-large",
                       f"{filename} is {len(source) / 1e6:.1f} MB; candidates over "
                       f"{MAX_SOURCE_BYTES / 1e6:.0f} MB are not read or recorded",
                       hint="a kernel file is a few hundred lines: generate big tables in code instead")
    if isinstance(source, str):  # one path for both: text with lone surrogates is not UTF-8 either
        source = source.encode("utf-8", "surrogatepass")
    nul = source.find(b"\0")
    if nul >= 0:
        line, col = _position(source, nul)
        return Finding(ERROR, "binary",
                       f"{filename} contains a NUL byte at line {line}: it is binary, not Python source",
                       line, col, hint="point trialtui at the .py file; check the editor did not save a binary")
    source = source.removeprefix(codecs.BOM_UTF8)  # before decoding, so error offsets index `source`
    try:
        return source.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _position(source, exc.start)
        return Finding(ERROR, "encoding",
                       f"{filename} is not UTF-8: byte 0x{source[exc.start]:02x} at line {line}, column {col}",
                       line, col, hint="save the file as UTF-8 (Triton reads kernel source as UTF-8 too)")


def _position(source: bytes, offset: int) -> tuple[int, int]:
    start = source.rfind(b"\n", 0, offset) + 1
    width = len(source[start:offset].decode("utf-8", "replace"))
    return source.count(b"\n", 0, offset) + 1, width + 1


class _Checker(TritonChecks):
    """One parsed candidate: the lookups the checks share, the checks, and the findings."""

    def __init__(self, tree: ast.Module, form: ProblemForm, filename: str, siblings: frozenset[str]):
        self.tree, self.form, self.filename, self.siblings = tree, form, filename, siblings
        self.findings: list[Finding] = []
        self.aliases: dict[str, str] = {}
        self.module_env: ChainMap = ChainMap({})
        self.nodes: list[tuple[ast.AST, ChainMap, ast.AST | None]] = []  # node, its scope, its function
        self.function_envs: dict[int, ChainMap] = {}
        self.int_values: dict[tuple[int, int], list[tuple[int, ast.AST]] | None] = {}
        self._index()
        self.kernels = {k.name: k for k in self._find_kernels()}
        self.config_owners: dict[int, list[Kernel]] = {}
        for kernel in self.kernels.values():
            self._read_autotune(kernel)

    def add(self, severity: str, code: str, message: str, node: ast.AST | None, hint: str) -> None:
        line, col = position_of(node)
        self.findings.append(Finding(severity, code, message, line, col, hint))

    def run(self) -> list[Finding]:
        self._check_structure()
        for node, env, _ in self.nodes:
            if type(node) in CHECKED_NODES:
                self._visit(node, env)
        for kernel in self.kernels.values():
            self._check_kernel(kernel)
        unique = {(f.line, f.col, f.code, f.message): f for f in self.findings}
        return sorted(unique.values(), key=lambda f: (f.line or 0, f.col or 0, f.code))

    # -- one pass over the tree --------------------------------------------------------------

    def _index(self) -> None:
        """Every node in source order with the scope its names are read in; imports and bindings.

        A scope's bindings map each name to its plain assigned values, or to None when it is also
        bound another way (a parameter, a loop, `+=`). In a class, body names and `self.X = ...` in
        its methods are kept as `self.X`, which is how the methods read them.
        """
        direct: dict[int, ast.expr] = {}
        comprehensions: list[tuple[ast.AST, Bindings, ChainMap]] = []
        stack: list[tuple[ast.AST, Context]] = [(self.tree, (self.module_env, "module", None, None))]
        while stack:
            node, context = stack.pop()
            env, kind, selfs, fn = context
            self.nodes.append((node, env, fn))
            kind_of = type(node)
            prefix = "self." if kind == "class" else ""
            if kind_of is ast.Name:  # the most common node: bind or skip, it has no children
                if type(node.ctx) is ast.Store and kind != "comprehension":
                    bind_name(env.maps[0], prefix + node.id, direct.get(id(node)), env)
                continue
            if kind_of is ast.Constant:
                continue
            if kind_of is ast.Assign:
                direct.update((id(t), node.value) for t in node.targets)
            elif kind_of is ast.AnnAssign and node.value is not None:
                direct[id(node.target)] = node.value
            elif kind_of is ast.Import or kind_of is ast.ImportFrom:
                self._add_aliases(node)
                for alias in node.names:
                    bind_name(env.maps[0], prefix + (alias.asname or alias.name).split(".")[0], None, env)
            elif kind_of is ast.ExceptHandler and node.name:
                bind_name(env.maps[0], prefix + node.name, None, env)
            elif kind_of is ast.Attribute and selfs is not None and type(node.ctx) is ast.Store:
                name = dotted_name(node)
                if name and name.startswith("self.") and name.count(".") == 1:
                    bind_name(selfs, name, direct.get(id(node)), env)
            if isinstance(node, SCOPES):
                children = self._scope_children(node, context)
            elif isinstance(node, COMPREHENSIONS):
                comprehension: Bindings = {}
                comprehensions.append((node, comprehension, env))
                inner = (ChainMap(comprehension, *env.maps), "comprehension", selfs, fn)
                children = [(c, inner) for c in child_nodes(node)]
            else:
                children = [(c, context) for c in child_nodes(node)]
            stack.extend(reversed(children))
        for node, comprehension, env in comprehensions:  # needs every import's alias first
            self._bind_comprehension(node, comprehension, env)

    def _scope_children(self, node: ast.AST, context: Context) -> list[tuple[ast.AST, Context]]:
        """A def's or class's children: decorators and bases in the outer scope, the body in its own."""
        env, kind, selfs, fn = context
        if not isinstance(node, ast.Lambda):
            bind_name(env.maps[0], ("self." if kind == "class" else "") + node.name, None, env)
        outer = [(c, context) for c in (*getattr(node, "decorator_list", ()), *getattr(node, "bases", ()),
                                        *getattr(node, "keywords", ()))]
        if isinstance(node, ast.ClassDef):
            attrs: Bindings = {}
            inner = (ChainMap(attrs, *env.maps), "class", attrs, fn)
            return outer + [(c, inner) for c in node.body]
        scope = ChainMap({a.arg: None for a in param_list(node)}, *env.maps)
        self.function_envs[id(node)] = scope
        inner = (scope, "function", selfs if kind == "class" else None, node)
        body = node.body if isinstance(node.body, list) else [node.body]
        return outer + [(node.args, context)] + [(c, inner) for c in body]

    def _add_aliases(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                head = alias.name.split(".")[0]
                self.aliases[alias.asname or head] = alias.name if alias.asname else head
        elif node.module and not node.level:
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def qualname(self, node: ast.AST) -> str | None:
        """The dotted name with its head resolved through the imports (`tl.dot` -> `triton.language.dot`)."""
        name = dotted_name(node)
        if name is None:
            return None
        head, dot, rest = name.partition(".")
        return self.aliases[head] + dot + rest if head in self.aliases else name

    def imported(self, node: ast.AST) -> str | None:
        """The qualified name of an attribute of an imported module, else None."""
        name = dotted_name(node)
        if name is None or "." not in name or name.split(".")[0] not in self.aliases:
            return None
        return self.qualname(node)

    # -- constant values ---------------------------------------------------------------------

    def ints(self, node: ast.AST, env: ChainMap, depth: int = 0) -> list[tuple[int, ast.AST]] | None:
        """Every integer `node` can evaluate to, each with where it is written; None when unknown.

        Memoized per (node, scope), and capped at MAX_VALUES: chains like `B2 = B1 + B1` or
        `B2 = B1 if c else B1` would otherwise take exponential time or memory.
        """
        key = (id(node), id(env))
        if key not in self.int_values:
            values = None if depth > MAX_DEPTH else self._ints(node, env, depth)
            self.int_values[key] = values if values is None or len(values) <= MAX_VALUES else None
        return self.int_values[key]

    def _ints(self, node: ast.AST, env: ChainMap, depth: int) -> list[tuple[int, ast.AST]] | None:
        if isinstance(node, ast.Constant):
            return [(node.value, node)] if type(node.value) is int else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.ints(node.operand, env, depth + 1)
            return [(-v, node) for v, _ in inner] if inner else None
        if isinstance(node, ast.IfExp):
            body, orelse = self.ints(node.body, env, depth + 1), self.ints(node.orelse, env, depth + 1)
            return body + orelse if body and orelse else None
        if isinstance(node, ast.BinOp):
            return self._arith(node, env, depth)
        if isinstance(node, ast.Call) and self.qualname(node.func) == TL + "constexpr" and len(node.args) == 1:
            return self.ints(node.args[0], env, depth + 1)
        key = dotted_name(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        bound = env.get(key) if key else None
        if not bound:
            return None
        values: list[tuple[int, ast.AST]] = []
        for expr, where in bound:
            found = self.ints(expr, where, depth + 1)
            if found is None:
                return None
            values += found
        return values

    def _arith(self, node: ast.BinOp, env: ChainMap, depth: int) -> list[tuple[int, ast.AST]] | None:
        left, right = self.ints(node.left, env, depth + 1), self.ints(node.right, env, depth + 1)
        if not left or not right or len(left) * len(right) > MAX_VALUES:
            return None
        values = []
        for a, _ in left:
            for b, _ in right:
                if isinstance(node.op, ast.Add):
                    values.append((a + b, node))
                elif isinstance(node.op, ast.Sub):
                    values.append((a - b, node))
                elif isinstance(node.op, ast.Mult):
                    values.append((a * b, node))
                elif isinstance(node.op, ast.FloorDiv) and b:
                    values.append((a // b, node))
                elif isinstance(node.op, ast.LShift) and 0 <= b <= 64:
                    values.append((a << b, node))
                else:
                    return None
        return values

    def _bind_comprehension(self, node: ast.AST, bound: Bindings, env: ChainMap) -> None:
        """Comprehension variables over literal lists keep their values: `for b in [64, 128]`."""
        for gen in node.generators:
            targets = gen.target.elts if isinstance(gen.target, ast.Tuple) else [gen.target]
            iters = [gen.iter] if not isinstance(gen.target, ast.Tuple) else self._unzipped(gen.iter, len(targets))
            for target, values in zip(targets, iters or [None] * len(targets)):
                if isinstance(target, ast.Name):
                    literal = isinstance(values, (ast.List, ast.Tuple)) and not any(
                        isinstance(v, ast.Starred) for v in values.elts)
                    bound[target.id] = [(v, env) for v in values.elts] if literal else None

    def _unzipped(self, iterable: ast.expr, width: int) -> list[ast.expr] | None:
        """Per-target value lists for `for a, b in itertools.product([..], [..])` or `in [(.., ..), ...]`."""
        if isinstance(iterable, ast.Call) and self.qualname(iterable.func) == "itertools.product":
            return list(iterable.args) if len(iterable.args) == width else None
        if isinstance(iterable, (ast.List, ast.Tuple)) and all(
                isinstance(e, ast.Tuple) and len(e.elts) == width for e in iterable.elts):
            return [ast.List(elts=[e.elts[i] for e in iterable.elts]) for i in range(width)]
        return None

    def _visit(self, node: ast.AST, env: ChainMap) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self._check_import(node)
        elif isinstance(node, ast.Call):
            self._check_call(node, env)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in unpacked_targets(targets):
                if isinstance(target, ast.Attribute):
                    self._check_timing_target(target, self.imported(target))
        elif isinstance(node, (ast.Try, ast.TryStar)):
            self._check_fallback(node)
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                if self.qualname(base) == "torch.Tensor":
                    self.add(ERROR, "lazy-tensor", f"{node.name} subclasses torch.Tensor", base,
                             "return plain tensors computed by your kernel: a Tensor subclass can defer or "
                             "fake the work the harness checks and times")

    # -- structure and imports ---------------------------------------------------------------

    def _check_structure(self) -> None:
        entry = self.form.entry_point
        if entry not in top_level_names(self.tree):
            self.add(ERROR, "no-entry-point",
                     f"{self.filename} does not define {entry} at top level; the {self.form.label} harness calls it",
                     None, f"define {self.form.entry_hint}")

    def _check_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.ImportFrom) and node.level:
            self.add(ERROR, "relative-import", "relative import: a candidate is loaded as a single file, "
                     "not as part of a package", node, "copy what you need into this file")
            return
        if isinstance(node, ast.Import):
            modules = full = [alias.name for alias in node.names]
        else:
            modules, full = [node.module], [f"{node.module}.{alias.name}" for alias in node.names]
        for module in modules:
            self._check_module(module, node)
        threads = next((n for n in full if any(n == m or n.startswith(m + ".") for m in THREAD_MODULES)), None)
        if threads:
            self._threads(f"imports {threads}", node)

    def _check_module(self, module: str, node: ast.AST) -> None:
        top = module.split(".")[0]
        if top in self.form.problem_modules:
            return
        if top == "reference":
            self.add(ERROR, "reference-import", f"imports {module}: the candidate must not use the reference",
                     node, USE_YOUR_KERNEL)
        elif top in self.siblings:
            self.add(ERROR, "sibling-import", f"imports {module}, another candidate of this problem", node,
                     "copy the code you reuse into this file: each trial must stand alone")
        elif top not in sys.stdlib_module_names and top not in ALLOWED_PACKAGES:
            self.add(ERROR, "import-not-allowed",
                     f"imports {module}: candidates may import only the standard library, torch, triton and numpy",
                     node, f"copy what you need from {top} into this file")

    def _threads(self, what: str, node: ast.AST) -> None:
        self.add(ERROR, "threads-or-streams", f"{what}: work on other threads or processes escapes the timing",
                 node, "do the work in the calling thread; the harness times that thread's GPU stream")

    # -- calls -------------------------------------------------------------------------------

    def _check_call(self, node: ast.Call, env: ChainMap) -> None:
        name = self.qualname(node.func)
        if isinstance(node.func, ast.Subscript):
            self._check_launch(node, env)
        elif name == TL + "arange":
            self._check_arange(node, env)
        elif name in CONFIG_CALLS:
            self._check_config(node, env)
        elif name in DYNAMIC_IMPORTS and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            self._check_module(node.args[0].value, node)
        elif name in LOADERS:
            self._check_loader(node, name)
        elif name in ("setattr", "delattr") and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            owner = self.imported(node.args[0]) or (
                self.aliases.get(node.args[0].id) if isinstance(node.args[0], ast.Name) else None)
            if owner and isinstance(node.args[1].value, str):
                self._check_timing_target(node, f"{owner}.{node.args[1].value}")
        elif name in ("os.fork", "os.forkpty"):
            self._threads(f"calls {name}", node)
        elif name in STREAM_CALLS or (isinstance(node.func, ast.Attribute) and node.func.attr in STREAM_METHODS):
            self.add(WARNING, "threads-or-streams",
                     f"uses a side CUDA stream ({name or node.func.attr}): events on the default stream "
                     "do not see its work", node,
                     "launch on the current stream; if you need overlap, say so in the trial note and "
                     "check the timing against wall clock")
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "_make_subclass" \
                or name == "torch.Tensor.__new__":
            self.add(ERROR, "lazy-tensor", f"calls {name or node.func.attr}: a hand-made tensor can fake its data",
                     node, "return tensors your kernel wrote")

    def _check_loader(self, node: ast.Call, name: str) -> None:
        for arg in node.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) \
                    and arg.value.replace("\\", "/").rsplit("/", 1)[-1].startswith("reference"):
                self.add(ERROR, "reference-import", f"{name}({arg.value!r}) reads the reference",
                         node, USE_YOUR_KERNEL)

    # -- cheating ----------------------------------------------------------------------------

    def _check_timing_target(self, node: ast.AST, name: str | None) -> None:
        """`time.perf_counter = ...`, `setattr(torch.cuda, "synchronize", ...)`: replacing what times the run."""
        if name is None:
            return
        for timing in TIMING_NAMES:
            if name == timing or timing.startswith(name + ".") or name.startswith(timing + "."):
                self.add(ERROR, "timing-patch", f"replaces {name}, which the harness uses to time the kernel",
                         node, "leave timing functions alone: trialtui checks they are the originals at run time")
                return

    def _check_fallback(self, node: ast.Try | ast.TryStar) -> None:
        for handler in node.handlers:
            for stmt in handler.body:
                used = next(filter(None, map(self._reference_compute, ast.walk(stmt))), None)
                if used:
                    self.add(ERROR, "fallback-to-reference",
                             f"the except handler falls back to PyTorch ({used}): a kernel that fails "
                             "would still pass as correct", handler,
                             "let the exception propagate, so the failure is reported")
                    break

    def _reference_compute(self, node: ast.AST) -> str | None:
        """What a node computes with the reference or PyTorch instead of a kernel, if it does."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return "the @ operator"
        if not isinstance(node, ast.Call):
            return None
        name = self.qualname(node.func) or ""
        if name.split(".")[0] in REFERENCE_NAMES or name.startswith(("reference.", "torch.nn.functional.")) \
                or name in TORCH_COMPUTE:
            return name
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("forward", "__call__") \
                and isinstance(func.value, ast.Call) and dotted_name(func.value.func) == "super":
            return f"super().{func.attr}"
        return None
