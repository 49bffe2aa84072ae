"""Validation stage 1: what a candidate's syntax tree alone shows will break, or will cheat.

It runs in the watcher's own process on every save, so it reads the AST and never imports or
executes the candidate, and it stays well inside its budget of 20 ms for a 300-line file. What only
a compile or a run can show is left to the compile stage, in child processes.

Findings carry 1-based lines and columns, as editors show them; file-level findings carry none.
The tree is walked iteratively and every recursive helper has a depth cap, so a pathological but
valid file (an 800-term sum) cannot raise RecursionError here.
"""

from __future__ import annotations

import ast
import codecs
import sys
from collections import ChainMap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from trialtui.core.model import Finding, Severity
from trialtui.core.forms import ProblemForm, get_form
from trialtui.core.languages import language_of
from trialtui.core.problem import top_level_names

MAX_SOURCE_BYTES = 1_000_000
ALLOWED_PACKAGES = frozenset({"torch", "triton", "numpy"})

ERROR, WARNING = Severity.ERROR.value, Severity.WARNING.value
TL = "triton.language."
KERNEL_DECORATORS = frozenset({"triton.jit", "triton.autotune", "triton.heuristics"})
CONFIG_CALLS = frozenset({"triton.Config", "triton.runtime.Config"})
# Shape-taking tl functions and where the shape is: tensor dimensions must be powers of two.
SHAPE_ARGUMENT = {"zeros": "shape", "full": "shape", "reshape": "shape", "broadcast_to": "shape",
                  "make_block_ptr": "block_shape", "make_tensor_descriptor": "block_shape"}
REDUCTIONS = frozenset({"sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum"})
SHAPE_KEEPING = frozenset({"load", "advance", "zeros_like", "full_like", "cumsum", "cumprod", "sort", "flip"})
MIN_DOT_TILE = 16
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
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
# Node kinds that carry no check and no name: skipping them makes the one pass a third cheaper.
SILENT_NODES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
CHECKED_NODES = frozenset({ast.Import, ast.ImportFrom, ast.Call, ast.Assign, ast.AugAssign, ast.AnnAssign,
                           ast.Delete, ast.Try, ast.TryStar, ast.ClassDef})
MAX_DEPTH = 40  # cap for the recursive expression readers; real kernel expressions are shallow
MAX_VALUES = 64  # the most values one expression is followed with (a sweep of block sizes is a few)

# A name's bindings in one scope: each assigned expression with the scope it is read in, or None
# when the name is also bound some other way (a parameter, a loop, an augmented assignment).
Bindings = dict[str, "list[tuple[ast.expr, ChainMap]] | None"]
# Where a node sits: its scope, the scope's kind, the class bindings `self.X = ...` goes to (in a
# method), and the enclosing function.
Context = tuple[ChainMap, str, "Bindings | None", "ast.AST | None"]
Dim = int | str | None  # a tensor dimension: a number, a constexpr name, or unknown
Shape = tuple[Dim, ...] | None


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
                       f"{MAX_SOURCE_BYTES / 1e6:.0f} MB are not read",
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


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _unpacked(targets: list[ast.expr]) -> Iterator[ast.expr]:
    """The names and attributes an assignment writes, out of tuple and starred targets."""
    stack = list(reversed(targets))
    while stack:
        target = stack.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            stack.extend(reversed(target.elts))
        elif isinstance(target, ast.Starred):
            stack.append(target.value)
        else:
            yield target


def _children(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes` without the context and operator nodes."""
    children = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, list):
            children += [item for item in value if isinstance(item, ast.AST)]
        elif isinstance(value, ast.AST) and not isinstance(value, SILENT_NODES):
            children.append(value)
    return children


def _bind(bound: Bindings, name: str, value: ast.expr | None, env: ChainMap) -> None:
    if value is None or (name in bound and bound[name] is None):
        bound[name] = None
    else:
        bound.setdefault(name, []).append((value, env))


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _shape_elements(call: ast.Call, name: str) -> list[ast.expr] | None:
    """The dimension expressions of a shape-taking tl call (`tl.zeros((BM, BN), ...)`)."""
    keyword = SHAPE_ARGUMENT.get(name)
    if keyword is None:
        return None
    shape = _keyword(call, keyword)
    if shape is None and name in ("zeros", "full"):
        shape = call.args[0] if call.args else None
    elif shape is None and name in ("reshape", "broadcast_to") and len(call.args) > 1:
        shape = call.args[1] if len(call.args) == 2 else ast.Tuple(elts=call.args[1:])
    return list(shape.elts) if isinstance(shape, (ast.Tuple, ast.List)) else None


def _is_pow2(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _pow2_hint(name: str, value: int) -> str:
    lower = 1 << max(value.bit_length() - 1, 0)
    return (f"use {lower} or {lower * 2} for {name} and mask the tail; "
            "Triton tensor shapes (tl.arange extents, tile shapes) must be powers of two")


def _at(node: ast.AST | None) -> tuple[int | None, int | None]:
    if node is None or not hasattr(node, "lineno"):
        return None, None
    return node.lineno, node.col_offset + 1


def _param_names(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.arg]:
    a = fn.args
    extra = [arg for arg in (a.vararg, a.kwarg) if arg]
    return a.posonlyargs + a.args + a.kwonlyargs + extra


def _is_constexpr(annotation: ast.expr | None) -> bool:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value.endswith("constexpr")  # a string annotation, as Triton accepts
    name = _dotted(annotation) if annotation is not None else None
    return bool(name) and name.rsplit(".", 1)[-1] == "constexpr"


@dataclass
class _Kernel:
    """A @triton.jit function and what the file tells about its parameters."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    params: list[str]
    constexpr: set[str]
    shape_uses: dict[str, str] = field(default_factory=dict)  # parameter -> how it sizes a tensor
    autotune: ast.Call | None = None
    tuned: set[str] = field(default_factory=set)  # names the autotune configs set
    dots: list[ast.Call] = field(default_factory=list)  # the tl.dot calls in its body
    # parameter -> (value, where the number is written, how it reaches the kernel)
    values: dict[str, list[tuple[int, ast.AST, str]]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def block_params(self) -> set[str]:
        """Parameters that size tensors, so every value they get must be a power of two."""
        return set(self.shape_uses) | {p for p in self.constexpr if p.startswith("BLOCK")}


class _Checker:
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
        self.config_owners: dict[int, list[_Kernel]] = {}
        for kernel in self.kernels.values():
            self._read_autotune(kernel)

    def add(self, severity: str, code: str, message: str, node: ast.AST | None, hint: str) -> None:
        line, col = _at(node)
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
                    _bind(env.maps[0], prefix + node.id, direct.get(id(node)), env)
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
                    _bind(env.maps[0], prefix + (alias.asname or alias.name).split(".")[0], None, env)
            elif kind_of is ast.ExceptHandler and node.name:
                _bind(env.maps[0], prefix + node.name, None, env)
            elif kind_of is ast.Attribute and selfs is not None and type(node.ctx) is ast.Store:
                name = _dotted(node)
                if name and name.startswith("self.") and name.count(".") == 1:
                    _bind(selfs, name, direct.get(id(node)), env)
            if isinstance(node, SCOPES):
                children = self._scope_children(node, context)
            elif isinstance(node, COMPREHENSIONS):
                comprehension: Bindings = {}
                comprehensions.append((node, comprehension, env))
                inner = (ChainMap(comprehension, *env.maps), "comprehension", selfs, fn)
                children = [(c, inner) for c in _children(node)]
            else:
                children = [(c, context) for c in _children(node)]
            stack.extend(reversed(children))
        for node, comprehension, env in comprehensions:  # needs every import's alias first
            self._bind_comprehension(node, comprehension, env)

    def _scope_children(self, node: ast.AST, context: Context) -> list[tuple[ast.AST, Context]]:
        """A def's or class's children: decorators and bases in the outer scope, the body in its own."""
        env, kind, selfs, fn = context
        if not isinstance(node, ast.Lambda):
            _bind(env.maps[0], ("self." if kind == "class" else "") + node.name, None, env)
        outer = [(c, context) for c in (*getattr(node, "decorator_list", ()), *getattr(node, "bases", ()),
                                        *getattr(node, "keywords", ()))]
        if isinstance(node, ast.ClassDef):
            attrs: Bindings = {}
            inner = (ChainMap(attrs, *env.maps), "class", attrs, fn)
            return outer + [(c, inner) for c in node.body]
        scope = ChainMap({a.arg: None for a in _param_names(node)}, *env.maps)
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
        name = _dotted(node)
        if name is None:
            return None
        head, dot, rest = name.partition(".")
        return self.aliases[head] + dot + rest if head in self.aliases else name

    def imported(self, node: ast.AST) -> str | None:
        """The qualified name of an attribute of an imported module, else None."""
        name = _dotted(node)
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
        key = _dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
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
            for target in _unpacked(targets):
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

    def _check_arange(self, node: ast.Call, env: ChainMap) -> None:
        if len(node.args) != 2:
            return
        starts, ends = self.ints(node.args[0], env), self.ints(node.args[1], env)
        for start, _ in starts or []:
            for end, _ in ends or []:
                if not _is_pow2(end - start):
                    self.add(ERROR, "arange-not-pow2", f"tl.arange({start}, {end}) has extent {end - start}, "
                             "not a power of two", node, _pow2_hint("the extent", max(end - start, 1)))

    def _check_config(self, node: ast.Call, env: ChainMap) -> None:
        owners = self.config_owners.get(id(node), [])
        tunables = node.args[0] if node.args else _keyword(node, "kwargs")
        if isinstance(tunables, ast.Dict):
            for key, value in zip(tunables.keys, tunables.values):
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    continue
                for kernel in owners:
                    if key.value not in kernel.params:
                        self.add(ERROR, "autotune-config", f"triton.Config sets {key.value}, which {kernel.name} "
                                 "does not take", key, f"name one of {kernel.name}'s parameters: "
                                 f"{', '.join(kernel.params)}")
                where = f"triton.Config at line {node.lineno}"
                self._record(owners, key.value, value, env, where)
        warps = node.args[1] if len(node.args) > 1 else _keyword(node, "num_warps")
        if warps is not None:
            self._check_warps(warps, env)

    def _check_launch(self, node: ast.Call, env: ChainMap) -> None:
        """`kernel[grid](args..., BLOCK=...)`: the constexpr values a kernel will be compiled for."""
        callee = node.func.value
        kernel = self.kernels.get(callee.id) if isinstance(callee, ast.Name) else None
        if kernel is None and _dotted(callee) is None:
            return
        where = f"launch at line {node.lineno}"
        passed: list[tuple[str, ast.expr]] = [(k.arg, k.value) for k in node.keywords if k.arg]
        if kernel is not None:
            for param, arg in zip(kernel.params, node.args):
                if isinstance(arg, ast.Starred):
                    break
                passed.append((param, arg))
        for param, arg in passed:
            if param == "num_warps":
                self._check_warps(arg, env)
            elif kernel is not None and param in kernel.tuned:
                self.add(ERROR, "autotune-config", f"{param} is passed to {kernel.name}, which autotunes it",
                         arg, f"drop {param}=... from the launch: Triton raises 'Conflicting meta-parameters'")
            else:
                self._record([kernel] if kernel else [], param, arg, env, where)

    def _record(self, kernels: list[_Kernel], param: str, arg: ast.expr, env: ChainMap, where: str) -> None:
        """Keep the values a constexpr receives; with no known kernel, BLOCK* names must be powers of two."""
        values = self.ints(arg, env) or []
        for kernel in kernels:
            kernel.values.setdefault(param, []).extend((v, loc, where) for v, loc in values)
        sizes_a_tensor = param.startswith("BLOCK") or any(param in k.block_params for k in self.kernels.values())
        if not kernels and sizes_a_tensor:
            for value, loc in values:
                if not _is_pow2(value):
                    self._block_not_pow2(param, value, loc, where)

    def _block_not_pow2(self, param: str, value: int, loc: ast.AST, where: str) -> None:
        self.add(ERROR, "block-not-pow2", f"{param}={value} ({where}) sizes a tensor and is not a power of two",
                 loc, _pow2_hint(param, value))

    def _check_warps(self, node: ast.expr, env: ChainMap) -> None:
        for value, loc in self.ints(node, env) or []:
            if not _is_pow2(value):
                self.add(ERROR, "num-warps-not-pow2", f"num_warps={value} is not a power of two", loc,
                         "use 1, 2, 4, 8, 16 or 32: Triton rejects other warp counts")

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
                and isinstance(func.value, ast.Call) and _dotted(func.value.func) == "super":
            return f"super().{func.attr}"
        return None

    # -- kernels -----------------------------------------------------------------------------

    def _find_kernels(self) -> Iterator[_Kernel]:
        calls: dict[int, list[ast.Call]] = {}  # function -> the calls in its body
        for node, _, fn in self.nodes:
            if isinstance(node, ast.Call) and fn is not None:
                calls.setdefault(id(fn), []).append(node)
        for node, _, _ in self.nodes:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            decorators = [(self.qualname(d.func if isinstance(d, ast.Call) else d), d)
                          for d in node.decorator_list]
            if not any(name in KERNEL_DECORATORS for name, _ in decorators):
                continue
            args = _param_names(node)
            kernel = _Kernel(node, [a.arg for a in args], {a.arg for a in args if _is_constexpr(a.annotation)})
            kernel.autotune = next((d for name, d in decorators
                                    if name == "triton.autotune" and isinstance(d, ast.Call)), None)
            positional = node.args.posonlyargs + node.args.args
            defaults = list(zip(positional[len(positional) - len(node.args.defaults):], node.args.defaults))
            defaults += [(a, d) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults) if d is not None]
            for arg, default in defaults:
                for value, loc in self.ints(default, self.module_env) or []:
                    kernel.values.setdefault(arg.arg, []).append((value, loc, "default"))
            self._find_shape_uses(kernel, calls.get(id(node), []))
            yield kernel

    def _find_shape_uses(self, kernel: _Kernel, calls: list[ast.Call]) -> None:
        for node in calls:
            qualname = self.qualname(node.func) or ""
            if not qualname.startswith(TL):
                continue
            name = qualname.removeprefix(TL)
            if name == "dot":
                kernel.dots.append(node)
            if name == "arange":
                sizes, use = node.args, "tl.arange bound"
            else:
                sizes, use = _shape_elements(node, name) or [], "tensor shape"
            for size in sizes:
                if isinstance(size, ast.Name) and size.id in kernel.params:
                    kernel.shape_uses.setdefault(size.id, use)

    def _read_autotune(self, kernel: _Kernel) -> None:
        call = kernel.autotune
        if call is None:
            return
        configs = self._module_value(call.args[0] if call.args else _keyword(call, "configs"))
        key = self._module_value(call.args[1] if len(call.args) > 1 else _keyword(call, "key"))
        count = None
        if configs is not None:
            for node in ast.walk(configs):
                if isinstance(node, ast.Call) and self.qualname(node.func) in CONFIG_CALLS:
                    self.config_owners.setdefault(id(node), []).append(kernel)
                    tunables = node.args[0] if node.args else _keyword(node, "kwargs")
                    if isinstance(tunables, ast.Dict):
                        kernel.tuned.update(k.value for k in tunables.keys if isinstance(k, ast.Constant))
            count = self._count(configs)
        if not isinstance(key, (ast.List, ast.Tuple)):
            return
        names = [e for e in key.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        for name in names:
            if name.value not in kernel.params:
                self.add(ERROR, "autotune-key", f"autotune key {name.value!r} is not a parameter of {kernel.name}",
                         name, "triton 3.9 raises ValueError on import; 3.6 drops the name, so the kernel tunes "
                         f"once and never re-tunes. Key on the size parameters: {', '.join(kernel.params)}")
        if not key.elts and count is not None and count > 1:
            self.add(WARNING, "autotune-key", f"autotune key is empty with {count} configs: {kernel.name} tunes "
                     "for the first shape it sees and keeps that config for every other shape", call,
                     "key on the size parameters that change between calls (M, N, K, n_elements)")

    def _module_value(self, node: ast.expr | None) -> ast.expr | None:
        """A literal, or the one module-level value a name is assigned (`configs = [...]`)."""
        if isinstance(node, ast.Name):
            bound = self.module_env.get(node.id)
            return bound[0][0] if bound and len(bound) == 1 else None
        return node

    def _count(self, configs: ast.expr) -> int | None:
        """How many configs a literal list or a comprehension over literal lists makes."""
        if isinstance(configs, (ast.List, ast.Tuple)):
            return None if any(isinstance(e, ast.Starred) for e in configs.elts) else len(configs.elts)
        if not isinstance(configs, ast.ListComp):
            return None
        count = 1
        for gen in configs.generators:
            it = gen.iter
            if gen.ifs:
                return None
            if isinstance(it, (ast.List, ast.Tuple)):
                count *= len(it.elts)
            elif isinstance(it, ast.Call) and self.qualname(it.func) == "itertools.product" \
                    and all(isinstance(a, (ast.List, ast.Tuple)) for a in it.args):
                for a in it.args:
                    count *= len(a.elts)
            else:
                return None
        return count

    def _check_kernel(self, kernel: _Kernel) -> None:
        params = {a.arg: a for a in _param_names(kernel.node)}
        for param, use in kernel.shape_uses.items():
            if param not in kernel.constexpr:
                self.add(ERROR, "block-not-constexpr", f"{param} is a {use} in {kernel.name} but is not "
                         "declared tl.constexpr", params[param],
                         f"declare it `{param}: tl.constexpr`: Triton needs tensor shapes at compile time")
        for param in kernel.block_params:
            for value, loc, where in kernel.values.get(param, []):
                if not _is_pow2(value):
                    self._block_not_pow2(param, value, loc, where)
        if not kernel.dots:
            return
        reader = _ShapeReader(self, kernel)
        reader.read(kernel.node.body, kernel.dots)
        for dot, lhs, rhs in reader.dots:
            self._check_dot(kernel, dot, lhs, rhs)

    def _check_dot(self, kernel: _Kernel, dot: ast.Call, lhs: Shape, rhs: Shape) -> None:
        if not lhs or not rhs or len(lhs) < 2 or len(rhs) < 2:
            return
        k = lhs[-1] if lhs[-1] is not None else rhs[-2]
        env = self.function_envs[id(kernel.node)]
        for label, dim in (("M", lhs[-2]), ("N", rhs[-1]), ("K", k)):
            for value, source in self._dim_values(kernel, dim, env):
                if value >= MIN_DOT_TILE:
                    continue
                if label == "K":
                    self.add(ERROR, "dot-tile-too-small", f"tl.dot in {kernel.name} has K = {value}{source}: "
                             "Triton 3.6 needs K >= 16 (>= 32 for 8-bit inputs; 3.9 allows 8 for fp32)", dot,
                             "make the K tile at least 16, or use a broadcast multiply and tl.sum for tiny K")
                else:
                    self.add(WARNING, "dot-tile-too-small",
                             f"tl.dot in {kernel.name} has {label} = {value}{source}: tensor cores work "
                             "on 16-row tiles, so this one is padded and mostly wasted", dot,
                             f"make the {label} tile at least 16 (mask the rows you do not need)")

    def _dim_values(self, kernel: _Kernel, dim: Dim, env: ChainMap) -> list[tuple[int, str]]:
        if isinstance(dim, int):
            return [(dim, "")]
        if dim in kernel.params:
            return [(v, f" ({dim}, {where})") for v, _, where in kernel.values.get(dim, [])]
        if isinstance(dim, str):
            return [(v, f" ({dim})") for v, _ in self.ints(ast.Name(id=dim), env) or []]
        return []


class _ShapeReader:
    """Follows tensor shapes through one kernel, far enough to know each tl.dot's tile sizes.

    Names it has not seen assigned are scalars (parameters, program ids, loop counters); anything
    it cannot follow (a reduction along a computed axis, a helper call) has an unknown shape.
    """

    def __init__(self, checker: _Checker, kernel: _Kernel):
        self.checker = checker
        self.env = checker.function_envs[id(kernel.node)]
        self.shapes: dict[str, Shape] = {}
        self.dots: list[tuple[ast.Call, Shape, Shape]] = []

    def read(self, body: list[ast.stmt], dots: list[ast.Call]) -> None:
        """Statements in order; each dot is sized with the shapes known just before its statement."""
        pending = sorted(dots, key=lambda d: (d.lineno, d.col_offset), reverse=True)
        stack = list(reversed(body))
        while stack:
            stmt = stack.pop()
            nested = [*getattr(stmt, "body", ()), *getattr(stmt, "orelse", ()), *getattr(stmt, "finalbody", ()),
                      *(s for handler in getattr(stmt, "handlers", ()) for s in handler.body)]
            if nested:
                stack.extend(reversed(nested))
                continue
            end = (stmt.end_lineno, stmt.end_col_offset)
            while pending and (pending[-1].lineno, pending[-1].col_offset) <= end:
                self._size(pending.pop())
            self._assign(stmt)
        while pending:
            self._size(pending.pop())

    def _size(self, dot: ast.Call) -> None:
        if len(dot.args) >= 2:
            self.dots.append((dot, self.shape(dot.args[0]), self.shape(dot.args[1])))

    def _assign(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            shape = self.shape(stmt.value)
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        self.shapes[name.id] = shape if target is name else None
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            self.shapes[stmt.target.id] = _broadcast(self.shapes.get(stmt.target.id, ()), self.shape(stmt.value))

    def shape(self, node: ast.AST, depth: int = 0) -> Shape:
        if depth > MAX_DEPTH:
            return None
        down = depth + 1
        if isinstance(node, ast.Constant):
            return ()
        if isinstance(node, ast.Name):
            return self.shapes.get(node.id, ())
        if isinstance(node, ast.Attribute) and node.attr == "T":
            inner = self.shape(node.value, down)
            return tuple(reversed(inner)) if inner else inner
        if isinstance(node, ast.Subscript):
            return self._index(node, down)
        if isinstance(node, ast.BinOp):
            return _broadcast(self.shape(node.left, down), self.shape(node.right, down))
        if isinstance(node, ast.UnaryOp):
            return self.shape(node.operand, down)
        if isinstance(node, (ast.Compare, ast.BoolOp)):
            parts = [node.left, *node.comparators] if isinstance(node, ast.Compare) else node.values
            return _broadcast(*(self.shape(p, down) for p in parts))
        if isinstance(node, ast.IfExp):
            return _broadcast(self.shape(node.body, down), self.shape(node.orelse, down))
        if isinstance(node, ast.Call):
            return self._call(node, down)
        return None

    def _index(self, node: ast.Subscript, depth: int) -> Shape:
        """`x[:, None]` and friends; any other indexing is not followed."""
        base = self.shape(node.value, depth)
        if base is None:
            return None
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        out, i = [], 0
        for item in items:
            if isinstance(item, ast.Constant) and item.value is None:
                out.append(1)
            elif isinstance(item, ast.Slice) and item.lower is item.upper is item.step is None and i < len(base):
                out.append(base[i])
                i += 1
            else:
                return None
        return (*out, *base[i:])

    def _call(self, node: ast.Call, depth: int) -> Shape:
        name = self.checker.qualname(node.func) or ""
        if not name.startswith(TL):
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cast"):
                return self.shape(node.func.value, depth)
            return None
        name = name.removeprefix(TL)
        args = node.args
        if name == "arange":
            return (self._extent(args),) if len(args) == 2 else None
        elements = _shape_elements(node, name)
        if elements is not None:
            return tuple(self._dim(e) for e in elements)
        if name in SHAPE_KEEPING:
            return self.shape(args[0], depth) if args else None
        if name in ("trans", "dot"):
            shapes = [self.shape(a, depth) for a in args[:2 if name == "dot" else 1]]
            if any(s is None or len(s) < 2 for s in shapes):
                return None
            return (*shapes[0][:-2], shapes[0][-1], shapes[0][-2]) if name == "trans" else \
                (*shapes[0][:-1], shapes[1][-1])
        if name in REDUCTIONS:
            return self._reduce(node, depth)
        return _broadcast(*(self.shape(a, depth) for a in args))

    def _reduce(self, node: ast.Call, depth: int) -> Shape:
        inner = self.shape(node.args[0], depth) if node.args else None
        axis = node.args[1] if len(node.args) > 1 else _keyword(node, "axis")
        if inner is None:
            return None
        if axis is None or (isinstance(axis, ast.Constant) and axis.value is None):
            return ()
        if isinstance(axis, ast.Constant) and type(axis.value) is int and -len(inner) <= axis.value < len(inner):
            kept = list(inner)
            del kept[axis.value]
            return tuple(kept)
        return None

    def _extent(self, args: list[ast.expr]) -> Dim:
        starts, ends = self.checker.ints(args[0], self.env), self.checker.ints(args[1], self.env)
        if starts and ends and len(starts) == len(ends) == 1:
            return ends[0][0] - starts[0][0]
        if starts and [v for v, _ in starts] == [0] and isinstance(args[1], ast.Name):
            return args[1].id
        return None

    def _dim(self, node: ast.expr) -> Dim:
        values = self.checker.ints(node, self.env)
        if values and len(values) == 1:
            return values[0][0]
        return node.id if isinstance(node, ast.Name) else None


def _broadcast(*shapes: Shape) -> Shape:
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)
    dims: list[Dim] = [1] * rank
    for shape in shapes:
        for i, dim in enumerate((1,) * (rank - len(shape)) + tuple(shape)):
            if dims[i] == 1:
                dims[i] = dim
    return tuple(dims)
