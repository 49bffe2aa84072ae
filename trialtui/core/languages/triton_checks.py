"""The Triton part of validation stage 1: kernels, their tile shapes, block sizes, autotune configs
and launches, read from the syntax tree (powers of two, dot tile sizes, num_warps, grid arguments).

`TritonChecks` is mixed into the checker of `static_checks`, which owns the one pass over the tree
and the value reading these methods call (`ints`, `qualname`, `add`).
"""

from __future__ import annotations

import ast
from collections import ChainMap
from collections.abc import Iterator
from dataclasses import dataclass, field

from trialtui.core.check_ast import (
    MAX_DEPTH,
    dotted_name,
    keyword_value,
    param_list,
)
from trialtui.core.model import Severity

ERROR, WARNING = Severity.ERROR.value, Severity.WARNING.value
Dim = int | str | None  # a tensor dimension: a number, a constexpr name, or unknown
Shape = tuple[Dim, ...] | None
TL = "triton.language."
KERNEL_DECORATORS = frozenset({"triton.jit", "triton.autotune", "triton.heuristics"})
CONFIG_CALLS = frozenset({"triton.Config", "triton.runtime.Config"})
# Shape-taking tl functions and where the shape is: tensor dimensions must be powers of two.
SHAPE_ARGUMENT = {"zeros": "shape", "full": "shape", "reshape": "shape", "broadcast_to": "shape",
                  "make_block_ptr": "block_shape", "make_tensor_descriptor": "block_shape"}
REDUCTIONS = frozenset({"sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum"})
SHAPE_KEEPING = frozenset({"load", "advance", "zeros_like", "full_like", "cumsum", "cumprod", "sort", "flip"})
MIN_DOT_TILE = 16

def _shape_elements(call: ast.Call, name: str) -> list[ast.expr] | None:
    """The dimension expressions of a shape-taking tl call (`tl.zeros((BM, BN), ...)`)."""
    keyword = SHAPE_ARGUMENT.get(name)
    if keyword is None:
        return None
    shape = keyword_value(call, keyword)
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


def _is_constexpr(annotation: ast.expr | None) -> bool:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value.endswith("constexpr")  # a string annotation, as Triton accepts
    name = dotted_name(annotation) if annotation is not None else None
    return bool(name) and name.rsplit(".", 1)[-1] == "constexpr"


@dataclass
class Kernel:
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


class TritonChecks:
    """The checker's Triton methods: launches and configs as calls are visited, kernels at the end."""

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
        tunables = node.args[0] if node.args else keyword_value(node, "kwargs")
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
        warps = node.args[1] if len(node.args) > 1 else keyword_value(node, "num_warps")
        if warps is not None:
            self._check_warps(warps, env)

    def _check_launch(self, node: ast.Call, env: ChainMap) -> None:
        """`kernel[grid](args..., BLOCK=...)`: the constexpr values a kernel will be compiled for."""
        callee = node.func.value
        kernel = self.kernels.get(callee.id) if isinstance(callee, ast.Name) else None
        if kernel is None and dotted_name(callee) is None:
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

    def _record(self, kernels: list[Kernel], param: str, arg: ast.expr, env: ChainMap, where: str) -> None:
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

    # -- kernels -----------------------------------------------------------------------------

    def _find_kernels(self) -> Iterator[Kernel]:
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
            args = param_list(node)
            kernel = Kernel(node, [a.arg for a in args], {a.arg for a in args if _is_constexpr(a.annotation)})
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

    def _find_shape_uses(self, kernel: Kernel, calls: list[ast.Call]) -> None:
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

    def _read_autotune(self, kernel: Kernel) -> None:
        call = kernel.autotune
        if call is None:
            return
        configs = self._module_value(call.args[0] if call.args else keyword_value(call, "configs"))
        key = self._module_value(call.args[1] if len(call.args) > 1 else keyword_value(call, "key"))
        count = None
        if configs is not None:
            for node in ast.walk(configs):
                if isinstance(node, ast.Call) and self.qualname(node.func) in CONFIG_CALLS:
                    self.config_owners.setdefault(id(node), []).append(kernel)
                    tunables = node.args[0] if node.args else keyword_value(node, "kwargs")
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

    def _check_kernel(self, kernel: Kernel) -> None:
        params = {a.arg: a for a in param_list(kernel.node)}
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

    def _check_dot(self, kernel: Kernel, dot: ast.Call, lhs: Shape, rhs: Shape) -> None:
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

    def _dim_values(self, kernel: Kernel, dim: Dim, env: ChainMap) -> list[tuple[int, str]]:
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

    def __init__(self, checker: TritonChecks, kernel: Kernel):
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
        axis = node.args[1] if len(node.args) > 1 else keyword_value(node, "axis")
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
