"""CUDA source and tool output as text: the device code of a torch extension source, `ptxas -v`
resource lines, nvcc's error lines and the tensor-core instructions of SASS.

Why device code alone: a load_inline source includes <torch/extension.h>, and parsing that takes
nvcc minutes on a small CPU; its kernels need none of it. Top-level items that mention torch
(host wrappers, launches, PYBIND11 blocks) are blanked, line breaks kept, so nvcc's line numbers
are the source's own; errors are trusted only where they cannot come from the blanking.
"""

from __future__ import annotations

import re
from typing import Any
from dataclasses import dataclass, field

# Headers of the host side of an extension: dropped with the code that needs them.
HOST_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](torch/|ATen/|c10/|pybind11/|Python\.h|THC/)')
HOST_CODE = re.compile(r"\b(?:torch|at|c10|pybind11|py)::|\bTORCH_|\bAT_|\bC10_|\bPYBIND11_|<<<|\bTensor\b")
TRANSPARENT = re.compile(r'^\s*(?:inline\s+)?namespace\b[^;{}]*$|^\s*extern\s+"C"\s*$')
KERNEL = re.compile(r"__global__\b")
CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
ATTRIBUTES = frozenset({"__launch_bounds__", "__cluster_dims__", "__maxnreg__", "__align__", "alignas",
                        "__attribute__", "__declspec", "__noinline__", "__forceinline__"})
# A kernel template of one type parameter (`template <typename scalar_t>`), built here with float.
TEMPLATE_TYPE = re.compile(r"\s*template\s*<\s*(?:typename|class)\s+\w+\s*>")
INSTANTIATE_WITH = "float"
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
QUOTED = re.compile(r'"([A-Za-z_][\w:]*)"')
# nvcc's front end: `file(12): error: ...`; the host preprocessor: `file:12:3: fatal error: ...`
NVCC_ERROR = re.compile(r'^(?P<file>.+?)\((?P<line>\d+)\): (?:catastrophic )?error:\s*(?P<msg>.*)$'
                        r'(?:\n\s+(?P<detail>(?:operand|argument) types? (?:are|is):.*)$)?', re.M)
GCC_ERROR = re.compile(r'^(?P<file>.+?):(?P<line>\d+):(?:\d+:)? (?:fatal )?error:\s*(?P<msg>.*)$', re.M)
PTXAS_ERROR = re.compile(r"^ptxas (?:fatal|error)\s*:\s*(?P<msg>.*)$", re.M)
# SASS tensor-core instructions and the family name the Triton side reports (runner/ptx.py, TENSOR_CORE_OPS)
SASS_TENSOR_OPS = (("UTCHMMA", "tcgen05.mma"), ("UTCQMMA", "tcgen05.mma"), ("UTCIMMA", "tcgen05.mma"),
                   ("UTCOMMA", "tcgen05.mma"), ("HGMMA", "wgmma"), ("QGMMA", "wgmma"), ("IGMMA", "wgmma"),
                   ("BGMMA", "wgmma"), ("HMMA", "mma"), ("IMMA", "mma"), ("DMMA", "mma"), ("BMMA", "mma"))
_SASS_OP = re.compile(r"\b(" + "|".join(op for op, _ in SASS_TENSOR_OPS) + r")\b")


@dataclass
class DeviceCode:
    """A source with its host code blanked: `text` has the source's line count."""

    text: str
    kept: list[tuple[int, int]] = field(default_factory=list)  # (first, last) source lines of kept items
    dropped_names: set[str] = field(default_factory=set)  # identifiers the blanked code spells
    kernels: dict[str, int] = field(default_factory=dict)  # __global__ name → source line
    templates: list[str] = field(default_factory=list)  # __global__ templates no type fits
    instantiated: dict[str, str] = field(default_factory=dict)  # template kernel → the type it is built with here
    blocks: dict[str, int] = field(default_factory=dict)  # threads per block the host code launches a kernel with

    def kept_line(self, line: int) -> bool:
        return any(first <= line <= last for first, last in self.kept)


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)


def _items(source: str):
    """Top-level pieces: ("pp", text) for preprocessor lines, ("open"/"close", text) for the braces
    of namespaces and extern "C" blocks, ("item", text) for declarations and definitions; the texts
    concatenate back to the source. Comments and literals are skipped when matching braces."""
    i, n, start, depth, open_blocks = 0, len(source), 0, 0, 0
    at_line_start = True
    while i < n:
        c = source[i]
        if at_line_start and depth == 0 and source[start:i].strip() == "" and c in " \t":
            i += 1
            continue
        if at_line_start and depth == 0 and c == "#" and source[start:i].strip() == "":
            if start < i:
                yield "item", source[start:i]
            j = i
            while True:  # the directive's lines, through backslash continuations
                end = source.find("\n", j)
                end = n if end < 0 else end
                if source[j:end].rstrip().endswith("\\") and end < n:
                    j = end + 1
                    continue
                break
            yield "pp", source[i:min(end + 1, n)]
            i = start = min(end + 1, n)
            at_line_start = True
            continue
        at_line_start = c == "\n"
        if source.startswith("//", i):
            end = source.find("\n", i)
            i = n if end < 0 else end
            continue
        if source.startswith("/*", i):
            end = source.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        if c in "\"'":
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            i = j + 1
            continue
        if c == "{":
            if depth == 0 and TRANSPARENT.match(source[start:i].strip()):
                yield "open", source[start:i + 1]
                open_blocks += 1
                i = start = i + 1
                continue
            depth += 1
        elif c == "}":
            if depth == 0 and open_blocks:
                if start < i:
                    yield "item", source[start:i]
                yield "close", "}"
                open_blocks -= 1
                i = start = i + 1
                continue
            depth -= 1
            if depth == 0:
                j = i + 1  # `struct S {...};` and `... } var;` end at the semicolon
                tail = re.match(r"[ \t]*(?:[A-Za-z_]\w*[ \t]*)?;", source[j:])
                if tail or not re.search(r"\b(struct|class|union|enum)\b", source[start:i]):
                    end = j + (tail.end() if tail else 0)
                    yield "item", source[start:end]
                    i = start = end
                    continue
        elif c == ";" and depth == 0:
            yield "item", source[start:i + 1]
            i = start = i + 1
            continue
        i += 1
    if start < n:
        yield "item", source[start:n]


def device_code(source: str) -> DeviceCode:
    """The source with host-only includes and every top-level item that mentions torch blanked."""
    out: list[str] = []
    code = DeviceCode("")
    line = 1
    for kind, text in _items(source):
        lead = text[: len(text) - len(text.lstrip())]
        first, last = line + lead.count("\n"), line + text.rstrip().count("\n")
        drop = (kind == "pp" and HOST_INCLUDE.match(text)) or (kind == "item" and HOST_CODE.search(code_only(text)))
        if drop:
            out.append(_blank(text))
            code.dropped_names.update(IDENTIFIER.findall(code_only(text)))
        else:
            out.append(text)
            if text.strip():
                code.kept.append((first, last))
            if kind == "item":
                for m in KERNEL.finditer(text):
                    named = next((c for c in CALLED.finditer(text, m.end()) if c.group(1) not in ATTRIBUTES), None)
                    if named is None:
                        continue
                    name = named.group(1)
                    code.kernels[name] = line + text[: named.start(1)].count("\n")
                    single = TEMPLATE_TYPE.match(code_only(text))
                    if single:
                        code.instantiated[name] = INSTANTIATE_WITH
                    elif re.match(r"\s*template\b", code_only(text)):
                        code.templates.append(name)
        line += text.count("\n")
    # Host code instantiates template kernels (AT_DISPATCH...); without it, taking the address of
    # one specialization builds it. After the source's last line, so its line numbers stay.
    code.blocks = launch_blocks(source)
    text = "".join(out)
    code.text = (text if text.endswith("\n") or not code.instantiated else text + "\n") + "".join(
        f"static void* const __trialtui_{i} = (void*)&{name}<{ty}>;\n" for i, (name, ty) in enumerate(code.instantiated.items()))
    return code


def code_only(text: str) -> str:
    """Text without comments and string literals, for matching names; its lines where they were."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", lambda m: "\n" * m[0].count("\n") or " ", text, flags=re.S)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


INT_CONSTANT = re.compile(r"(?:\b(?:constexpr|const)\s+(?:unsigned\s+|signed\s+)?(?:int|long|size_t|int64_t|uint32_t|auto)\s+"
                          r"(\w+)\s*=\s*(\d+)\s*;)|(?:^\s*#\s*define\s+(\w+)\s+\(?(\d+)\)?\s*$)", re.M)
LAUNCH = re.compile(r"\b(\w+)\s*(?:<[^<>;]*>)?\s*<<<\s*[^,;]+?,\s*([^,;>]+?)\s*(?:,[^;]*?)?>>>")


def launch_blocks(source: str) -> dict[str, int]:
    """Threads per block of each kernel that the host code launches with one block size it spells
    out (`k<<<grid, 256>>>`, or a `const int`/`#define` bound to a number); others are left out."""
    constants: dict[str, int] = {}
    for m in INT_CONSTANT.finditer(code_only(source)):
        name, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        constants[name] = int(value)
    seen: dict[str, set[int | None]] = {}
    for m in LAUNCH.finditer(code_only(source)):
        block = m.group(2).strip()
        value = int(block) if block.isdigit() else constants.get(block)
        seen.setdefault(m.group(1), set()).add(value)
    return {kernel: values.pop() for kernel, values in seen.items() if len(values) == 1 and None not in values}


def demangle(symbol: str) -> str:
    """`_Z10add_kernelPKfS0_Pfi` → `add_kernel` (the function's own name; extern "C" names are as is)."""
    m = re.match(r"_Z(?:N\d+\w+?)?(\d+)", symbol)
    if not m:
        return symbol
    length = int(m.group(1))
    name = symbol[m.end():m.end() + length]
    return name or symbol


def ptxas_resources(text: str) -> dict[str, dict[str, int]]:
    """Per entry function (mangled name): registers, stack, spill stores/loads, static shared, barriers."""
    found: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '?([\w$.]+)'?", line)
        if m:
            current = m.group(1) if "entry function" in line or m.group(1) in found else None
            if current is not None:
                found.setdefault(current, {})
            continue
        if current is None:
            continue
        entry = found[current]
        for key, pattern in (("stack", r"(\d+) bytes stack frame"), ("spill_stores", r"(\d+) bytes spill stores"),
                             ("spill_loads", r"(\d+) bytes spill loads"), ("registers", r"Used (\d+) registers"),
                             ("barriers", r"used (\d+) barriers"), ("shared", r"(\d+) bytes smem")):
            if (hit := re.search(pattern, line)):
                entry[key] = int(hit.group(1))
    return found


def compile_errors(stderr: str) -> list[tuple[str | None, int | None, str]]:
    """(file, line, message) for each error nvcc, the preprocessor or ptxas printed, in order."""
    errors = [(m.group("file"), int(m.group("line")), _message(m), m.start())
              for pattern in (NVCC_ERROR, GCC_ERROR) for m in pattern.finditer(stderr)]
    errors += [(None, None, m.group("msg").strip(), m.start()) for m in PTXAS_ERROR.finditer(stderr)]
    return [(f, line, msg) for f, line, msg, _ in sorted(errors, key=lambda e: e[3])]


def _message(m: re.Match) -> str:
    """The error's line, with nvcc's next line when it names the types involved."""
    detail = m.groupdict().get("detail")
    return m.group("msg").strip() + (f" ({detail.strip()})" if detail else "")


def quoted_names(message: str) -> set[str]:
    """The identifiers an nvcc message quotes (`identifier "foo" is undefined`), namespaces dropped."""
    return {name.split("::")[-1] for name in QUOTED.findall(message)}


def sass_tensor_op(sass: str) -> tuple[str | None, str | None]:
    """(family, SASS mnemonic) of the first tensor-core instruction family present, by SASS_TENSOR_OPS order."""
    present = set(_SASS_OP.findall(sass))
    for op, family in SASS_TENSOR_OPS:
        if op in present:
            return family, op
    return None, None


_SASS_MMA = re.compile(r"\b(HGMMA|HMMA)\.(\w+)")
_SASS_TMA = re.compile(r"\bUTMALDG\b")


def sass_mma_facts(sass: str) -> dict[str, Any]:
    """A GEMM engineer's first look at the SASS: wgmma (HGMMA) or mma.sync (HMMA) instructions and how
    many, the widest wgmma tile (`64x256x16`: M×N×K per warpgroup instruction), and TMA tile loads.

    `sass_hgmma`/`sass_hmma` count the instructions in the listing (static, not executed, counts).
    """
    hgmma = hmma = 0
    widest: tuple[int, str] | None = None
    for op, shape in _SASS_MMA.findall(sass):
        if op == "HMMA":
            hmma += 1
            continue
        hgmma += 1
        dims = shape.split("x")
        if len(dims) == 3 and all(d.isdigit() for d in dims) and (widest is None or int(dims[1]) > widest[0]):
            widest = (int(dims[1]), shape)
    return {"sass_hgmma": hgmma, "sass_hmma": hmma, "wgmma_shape": widest[1] if widest else None,
            "sass_tma": bool(_SASS_TMA.search(sass))}
