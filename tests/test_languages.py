"""Candidate languages as plug-ins: detection, the CUDA source read from the syntax tree, device
code apart from host code, ptxas/nvcc/SASS text, and a third-party language through the registry.
Pure Python: no torch, no nvcc (tests/test_languages_cuda.py compiles)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from trialtui.core import plugins
from trialtui.core.languages import all_languages, get_language, language_of, language_of_source
from trialtui.core.languages.base import GROUP, Language
from trialtui.core.languages.cuda import static_sources
from trialtui.core.languages.cuda_text import (
    compile_errors,
    demangle,
    device_code,
    launch_blocks,
    ptxas_resources,
    quoted_names,
    sass_tensor_op,
)
from trialtui.core.static_checks import check_source

PROBLEMS = Path(__file__).parent / "problems"
INLINE = (PROBLEMS / "kb_cuda_add" / "add_inline.py").read_text()
CU_FILE = (PROBLEMS / "kb_cuda_add" / "add_kernel.cu").read_text()


@pytest.mark.parametrize("source, name", [
    (INLINE, "cuda"),
    ("import torch.utils.cpp_extension as ext\nm = ext.load_inline('a', '', cuda_sources='')\n", "cuda"),
    ("import torch\nm = torch.utils.cpp_extension.load(name='a', sources=['k.cu'])\n", "cuda"),
    ("from torch.utils import cpp_extension\ndef f():\n    return cpp_extension.load_inline('a', '')\n", "cuda"),
    ("import triton\nimport triton.language as tl\n", "triton"),
    ("import torch\nclass ModelNew: pass\n", "triton"),  # plain PyTorch: the default language
    ("def load_inline(**kw): pass\nload_inline(cuda_sources='x')\n", "triton"),  # not torch's
    ("def broken(:\n", "triton"),
    ("x = " + "(" * 5000 + "1" + ")" * 5000 + "\n", "triton"),  # too deep for Python's parser
    ("from torch.utils.cpp_extension import load_inline\n" + "x = 1\n" * 200_000, "triton"),  # too large
])
def test_a_candidate_s_language_comes_from_its_syntax_tree(source, name):
    assert language_of_source(source).name == name


def test_built_ins_are_registered_and_cuda_is_never_run_on_the_cpu():
    languages = all_languages()
    assert list(languages)[:2] == ["cuda", "triton"]
    assert languages["triton"].runs_on_cpu and not languages["cuda"].runs_on_cpu
    assert languages["cuda"].compile_job == "trialtui.runner.cuda_compile_job"
    assert languages["triton"].compile_job == "trialtui.runner.compile_job"
    with pytest.raises(ValueError, match="unknown candidate language 'fortran'"):
        get_language("fortran")


class Mojo(Language):
    name = "mojo-test"
    label = "Mojo"
    priority = 50
    compile_job = "tests.no_such_job"
    no_launch = ("no kernel", "")

    def detect(self, tree: ast.Module) -> bool:
        return any(isinstance(n, ast.Import) and n.names[0].name == "mojo" for n in ast.walk(tree))


class Broken(Language):
    name = "broken-test"
    label = "Broken"
    priority = 99
    compile_job = "tests.no_such_job"
    no_launch = ("", "")

    def detect(self, tree: ast.Module) -> bool:
        raise RuntimeError("boom")


def test_a_third_party_language_is_one_class_plus_registration(monkeypatch):
    monkeypatch.setitem(plugins._external, GROUP, {"mojo-test": Mojo(), "broken-test": Broken(), "junk": object()})
    monkeypatch.setitem(plugins._errors, GROUP, [])
    assert language_of_source("import mojo\n").name == "mojo-test"
    assert language_of_source(INLINE).name == "cuda"  # the plug-in claims only its own files
    assert "junk" not in all_languages()
    problems = plugins.errors(GROUP)
    assert any("junk" in p and "not a Language" in p for p in problems)
    assert any("broken-test" in p and "RuntimeError: boom" in p for p in problems)


# --- CUDA source from the syntax tree -----------------------------------------------------------


def test_inline_source_is_read_with_the_line_it_starts_on(tmp_path):
    sources, unread = static_sources(ast.parse(INLINE), tmp_path)
    assert unread == [] and len(sources) == 1
    src = sources[0]
    assert "__global__ void add_kernel" in src.text and src.flags == ("-O3",)
    assert src.call == INLINE.splitlines().index("add = load_inline(") + 1
    kernel_line = next(i for i, line in enumerate(INLINE.splitlines(), 1) if "__global__" in line)
    assert src.file_line(device_code(src.text).kernels["add_kernel"]) == kernel_line


def test_cu_file_named_by_load_and_computed_sources(tmp_path):
    (tmp_path / "k.cu").write_text(CU_FILE)
    source = ("import os\nfrom torch.utils.cpp_extension import load, load_inline\n"
              "a = load(name='a', sources=[os.path.join(os.path.dirname(__file__), 'k.cu'), 'w.cpp'])\n"
              "b = load_inline('b', '', cuda_sources=open('x').read())\n"
              "c = load(name='c', sources=['gone.cu'])\n")
    sources, unread = static_sources(ast.parse(source), tmp_path)
    assert [(s.origin, s.file, s.call) for s in sources] == [("k.cu", str(tmp_path / "k.cu"), 3)]
    assert sources[0].file_line(1) is None  # a .cu file's lines are not the candidate's
    assert unread == [(4, "load_inline at line 4"), (5, "load at line 5 (gone.cu not found beside the candidate)")]


def test_a_missing_cu_file_is_a_static_error_and_cuda_gets_no_triton_warning(tmp_path):
    source = INLINE.replace("add = load_inline(", "other = torch.utils.cpp_extension.load(name='o', "
                            "sources=['missing.cu'])\nadd = load_inline(")
    found = check_source(source, form="kernelbench", folder=tmp_path)
    assert [(f.code, f.severity) for f in found] == [("cuda-source-missing", "error")]
    assert "missing.cu" in found[0].message
    assert check_source(INLINE, form="kernelbench", folder=tmp_path) == []
    triton_free = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n"
    assert [f.code for f in check_source(triton_free, form="kernelbench")] == ["no-triton-kernel"]


# --- device code apart from host code -----------------------------------------------------------


def test_device_code_blanks_host_code_and_keeps_lines():
    code = device_code(CU_FILE)
    assert code.text.count("\n") == CU_FILE.count("\n")
    assert "torch" not in code.text and "PYBIND11" not in code.text and "<<<" not in code.text
    assert "__global__ void add_vec4_kernel" in code.text
    assert code.kernels == {"add_vec4_kernel": 4}
    assert {"add_cuda", "TORCH_CHECK"} <= code.dropped_names
    assert code.kept_line(2) and code.kept_line(6) and not code.kept_line(11)


def test_device_code_keeps_namespaces_structs_templates_and_launch_bounds():
    source = ("#include <torch/extension.h>\n"               # 1
              "#define TILE 32\n"                             # 2
              "namespace {\n"                                 # 3
              "struct Pair { float a, b; };\n"                # 4
              "__device__ float twice(float x) { return 2 * x; }\n"  # 5
              "at::Tensor host_in_namespace(at::Tensor t) { return t; }\n"  # 6
              "}\n"                                           # 7
              "template <typename T>\n"                       # 8
              "__global__ void copy(const T* a, T* b) { b[0] = a[0]; }\n"  # 9
              "__global__ void __launch_bounds__(256, 2)\n"   # 10
              "scale(float* x) { const char* s = \"torch::\"; x[0] = twice(x[0]); }  // torch:: in a comment\n"
              "template <typename T, int N>\n"              # 12
              "__global__ void tiled(T* x) { x[N] = 0; }\n")  # 13
    code = device_code(source)
    assert code.kernels == {"copy": 9, "scale": 11, "tiled": 13}
    assert code.instantiated == {"copy": "float"} and code.templates == ["tiled"]  # no type fits <T, N>
    assert code.text.splitlines()[source.count("\n")] == "static void* const __trialtui_0 = (void*)&copy<float>;"
    assert "host_in_namespace" not in code.text and "struct Pair" in code.text and "namespace {" in code.text
    assert code.text.splitlines()[6] == "}"  # the namespace closes on its own line
    assert code.kept_line(11) and not code.kept_line(6)


# --- tool output as text --------------------------------------------------------------------------

PTXAS_13 = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z10add_kernelPKfS0_Pfi' for 'sm_90'
ptxas info    : Function properties for _Z10add_kernelPKfS0_Pfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers
ptxas info    : Compiling entry function 'tiled' for 'sm_90'
ptxas info    : Function properties for tiled
    48 bytes stack frame, 40 bytes spill stores, 40 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 8192 bytes smem
ptxas info    : Function properties for _Z5helperf
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""
PTXAS_12 = """ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90'
ptxas info    : Function properties for _Z3fooPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, 4096 bytes smem, 368 bytes cmem[0]
"""


def test_ptxas_resources_per_entry_in_both_output_styles():
    found = ptxas_resources(PTXAS_13)
    assert found == {
        "_Z10add_kernelPKfS0_Pfi": {"stack": 0, "spill_stores": 0, "spill_loads": 0, "registers": 12, "barriers": 0},
        "tiled": {"stack": 48, "spill_stores": 40, "spill_loads": 40, "registers": 255, "barriers": 1, "shared": 8192},
    }  # the device function _Z5helperf is not an entry
    assert ptxas_resources(PTXAS_12) == {"_Z3fooPf": {"stack": 0, "spill_stores": 0, "spill_loads": 0,
                                                      "registers": 8, "shared": 4096}}


@pytest.mark.parametrize("symbol, name", [("_Z10add_kernelPKfS0_Pfi", "add_kernel"), ("tiled", "tiled"),
                                          ("_Z4copyIfEvPKT_PS0_", "copy")])
def test_demangle_gives_the_function_s_own_name(symbol, name):
    assert demangle(symbol) == name


def test_compile_errors_from_nvcc_the_preprocessor_and_ptxas_in_order():
    stderr = ('kernel.py(14): error: identifier "z" is undefined\n'
              "  out[i] = x[i] + z[i];\n"
              "                  ^\n"
              'kernel.py(15): error: no operator "+" matches these operands\n'
              "            operand types are: const __half + const __half\n"
              "kernel.py:3:10: fatal error: missing.h: No such file or directory\n"
              "ptxas error   : Entry function 'k' uses too much shared data (0x20000 bytes, 0xe400 max)\n")
    assert compile_errors(stderr) == [
        ("kernel.py", 14, 'identifier "z" is undefined'),
        ("kernel.py", 15, 'no operator "+" matches these operands (operand types are: const __half + const __half)'),
        ("kernel.py", 3, "missing.h: No such file or directory"),
        (None, None, "Entry function 'k' uses too much shared data (0x20000 bytes, 0xe400 max)"),
    ]
    assert quoted_names('identifier "at::cuda::getCurrentCUDAStream" is undefined') == {"getCurrentCUDAStream"}


@pytest.mark.parametrize("sass, expected", [
    ("        /*0090*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ ;", ("wgmma", "HGMMA")),
    ("        /*0090*/                   HMMA.16816.F32 R4, R8, R12, R4 ;", ("mma", "HMMA")),
    ("        /*0090*/                   FFMA R4, R8, R12, R4 ;", (None, None)),
])
def test_sass_tensor_core_instructions(sass, expected):
    assert sass_tensor_op(sass) == expected


# --- the test plug-in's language, through its entry point, end to end ------------------------------

PLUGIN_DIR = Path(__file__).parent / "plugins"
TESTLANG = '''KERNEL_LANGUAGE = "testlang"


def kernel_add(x, y):
    out = x + y
    return out


def kernel_nothing():
    pass


class ModelNew:
    pass
'''


@pytest.mark.slow
def test_a_plugin_language_validates_in_its_own_child_job_and_needs_a_gpu(tmp_path, monkeypatch):
    """One module and an entry point: detection, static checks, its compile job in a child process,
    and a benchmark without a GPU that says it needs one."""
    import os
    import shutil

    from trialtui.core.problem_dir import load_problem
    from trialtui.engine.bench import bench_file
    from trialtui.engine.validate import validate_file

    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PLUGIN_DIR), os.environ.get("PYTHONPATH", "")]))
    plugins.reload_entry_points()
    try:
        root = Path(shutil.copytree(PROBLEMS / "kb_add", tmp_path / "kb_add"))
        path = root / "cand.py"
        path.write_text(TESTLANG)
        report = validate_file(root, path, arch="sm_90,sm_80")
        assert report["language"] == "testlang" and report["ok"], report["errors"]
        assert [(w["code"], w["line"]) for w in report["warnings"]] == [("testlang-args", 9)]
        assert sorted((k["name"], k["arch"], k["registers"]) for k in report["kernels"]) == [
            ("kernel_add", "sm_80", 2), ("kernel_add", "sm_90", 2),
            ("kernel_nothing", "sm_80", 1), ("kernel_nothing", "sm_90", 1)]
        result = bench_file(load_problem(root), path, device="cpu").to_json()
        assert result["state"] == "error" and "TestLang" in result["message"] and result["needs_gpu"]
    finally:
        plugins.reload_entry_points()


@pytest.mark.parametrize("host, blocks", [
    ("k<<<(n + 255) / 256, 256>>>(x);", {"k": 256}),
    ("const int block = 128;\nk<<<grid, block, 0, stream>>>(x);", {"k": 128}),
    ("#define THREADS 512\nk<scalar_t><<<blocks, THREADS>>>(x);", {"k": 512}),
    ("k<<<g, dim3(16, 16)>>>(x);", {}),  # a dim3 block: not read
    ("k<<<g, n_threads>>>(x);", {}),  # computed
    ("k<<<g, 64>>>(x);\nk<<<g, 128>>>(y);", {}),  # two block sizes: none is the kernel's
])
def test_the_block_size_a_launch_spells_out(host, blocks):
    assert launch_blocks(host) == blocks


def test_compile_facts_get_the_language_s_remedies():
    from trialtui.engine.validate import compile_findings, kernel_findings

    kernel = {"name": "heavy", "arch": "sm_90", "registers": 32, "spills": 87, "local_bytes": 352,
              "shared_bytes": 300_000, "line": 3}
    cuda = {f["code"]: f["hint"] for f in kernel_findings([kernel], get_language("cuda"))}
    triton = {f["code"]: f["hint"] for f in kernel_findings([kernel])}  # Triton's, the default
    assert "-maxrregcount" in cuda["spills"] and "num_warps" in triton["spills"]
    assert "num_stages" in triton["shared-memory"] and "num_stages" not in cuda["shared-memory"]
    compiled = {"state": "ok", "errors": [{"name": "k", "arch": "sm_90", "line": 2,
                                           "error": 'no operator "+" matches (operand types are: __half + __half)'}]}
    [error] = compile_findings(compiled, get_language("cuda"))
    assert "__half2float" in error["hint"]


PERSIST = '''    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = (void*)x.data_ptr<float>();
    attr.accessPolicyWindow.num_bytes = x.numel() * sizeof(float);
    attr.accessPolicyWindow.hitRatio = 1.0f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    cudaStreamSetAttribute(at::cuda::getCurrentCUDAStream(), cudaStreamAttributeAccessPolicyWindow, &attr);
'''


def test_l2_set_aside_for_persisting_lines_is_refused_where_a_comment_is_not(tmp_path):
    """pygpubench PR 49's class: host code that makes a call's inputs persist in L2 reads them warm past the flush
    the harness runs before every timed call. Refused in inline sources (at the candidate's line) and in a .cu
    file (at the load call); the words in a comment, and a cache hint inside a kernel, are not."""
    anchor = "    add_kernel<<<"
    inline = INLINE.replace(anchor, PERSIST + anchor, 1)
    found = check_source(inline, form="kernelbench", folder=tmp_path)
    assert [(f.code, f.severity) for f in found] == [("l2-persisting", "error")]
    assert found[0].line == next(i for i, line in enumerate(inline.splitlines(), 1) if "accessPolicyWindow" in line)
    assert "(accessPolicyWindow)" in found[0].message and "read warm" in found[0].message
    limit = INLINE.replace(anchor, "    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 32 << 20);\n" + anchor, 1)
    assert [f.code for f in check_source(limit, form="kernelbench", folder=tmp_path)] == ["l2-persisting"]
    assert [f.code for f in check_source(limit, form="kernelbench")] == ["l2-persisting"]  # no folder: strings still read
    host = INLINE.replace("add = load_inline(", 'HOST = "void keep() { cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, '
                          '1 << 25); }"\nadd = load_inline(', 1)  # in a string for cpp_sources, not cuda_sources
    assert [(f.code, f.line) for f in check_source(host, form="kernelbench", folder=tmp_path)] == [
        ("l2-persisting", host.splitlines().index(next(x for x in host.splitlines() if x.startswith("HOST"))) + 1)]
    commented = INLINE.replace(anchor, "    /* no accessPolicyWindow:\n       cudaLimitPersistingL2CacheSize */\n" + anchor, 1)
    assert check_source(commented, form="kernelbench", folder=tmp_path) == []
    hinted = INLINE.replace(anchor, '    asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(x.data_ptr<float>()));\n'
                            + anchor, 1)
    assert check_source(hinted, form="kernelbench", folder=tmp_path) == []
    (tmp_path / "k.cu").write_text(CU_FILE + "\nvoid keep(void* p) {\n" + PERSIST.replace("x.data_ptr<float>()", "p")
                                   .replace("x.numel() * sizeof(float)", "1 << 20") + "}\n")
    loaded = ("import torch\nfrom torch.utils.cpp_extension import load\nm = load(name='m', sources=['k.cu'])\n"
              "class ModelNew(torch.nn.Module):\n    def forward(self, x, y):\n        return m.add(x, y)\n")
    found = check_source(loaded, form="kernelbench", folder=tmp_path)
    assert [(f.code, f.line) for f in found] == [("l2-persisting", 3)] and "of k.cu" in found[0].message
