"""The least traffic a kernel must make (the physical floor's bytes, analyze's minimum bytes) counts each byte of
memory once: a buffer counted twice would put the floor above an honest kernel and flag it `impossible`."""

from __future__ import annotations

import pytest
import torch
from conftest import write_problem
from test_analyze import analyze

from trialtui.runner.tensors import distinct_bytes
from trialtui.runner.timed_work import output_and_bytes

# GPU MODE's form: the output buffer is generated with the inputs, written by the kernel and handed back.
VECTORADD = '''
import torch


def generate_input(size, seed):
    g = torch.Generator(device=torch.get_default_device()).manual_seed(seed)
    a = torch.randn(size, size, generator=g, dtype=torch.float16, device=torch.get_default_device())
    b = torch.randn(size, size, generator=g, dtype=torch.float16, device=torch.get_default_device())
    return a, b, torch.empty(size, size, dtype=torch.float16, device=torch.get_default_device())


def ref_kernel(data):
    a, b, out = data
    out[...] = a + b
    return out


def check_implementation(data, output):
    a, b, _ = data
    ok = torch.allclose(output, a + b)
    return ok, "" if ok else "mismatch"
'''
TASK = "tests:\n  - {size: 8, seed: 1}\nbenchmarks:\n  - {size: 512, seed: 2}\n"


def shapes():
    a = torch.randn(64, 32)
    return {
        "one tensor": ((a,), a.nbytes),
        "handed in twice": ((a, a), a.nbytes),
        "a view of it beside it": ((a, a[3:9]), a.nbytes),
        "every other column": ((a[:, ::2],), a.nbytes // 2),
        "transposed": ((a.t(),), a.nbytes),
        "a row expanded over 4096 rows": ((a[:1].expand(4096, 32),), 32 * 4),
        "two buffers": ((a, torch.randn(64, 32)), 2 * a.nbytes),
        "empty": ((torch.empty(0, 5),), 0),
        "nested": (({"x": [a, (a[0],)]},), a.nbytes),
    }


@pytest.mark.parametrize("name", list(shapes()))
def test_each_byte_of_memory_is_counted_once(name):
    values, expected = shapes()[name]
    assert distinct_bytes(*values) == expected


def test_on_the_meta_device_each_buffer_is_its_own():
    with torch.device("meta"):
        a, b = torch.empty(100), torch.empty(100)
    assert distinct_bytes(a, b) == 800 and distinct_bytes(a, a[10:]) == 400


def test_an_output_written_into_an_input_buffer_is_counted_once_by_the_timed_work():
    a, b = torch.randn(256), torch.randn(256)
    out = torch.empty(256)
    _, work = output_and_bytes(type("Call", (), {"model": None, "fn": staticmethod(lambda d: d[2].copy_(d[0] + d[1]))}),
                               (a, b, out))
    assert work["min_bytes"] == 3 * 256 * 4


def test_gpumode_output_buffer_is_written_not_read_in_the_analysis(tmp_path):
    root = write_problem(tmp_path / "gm", reference=VECTORADD)
    (root / "task.yml").write_text(TASK)
    r = analyze(root, gpu="NVIDIA H200")
    assert r["state"] == "ok", r
    n = 512 * 512 * 2
    assert (r["input_bytes"], r["output_bytes"], r["min_bytes"]) == (2 * n, n, 3 * n)


def test_on_an_h100_gpu_modes_problems_have_their_inputs_dtype_and_each_byte_once():
    """tests/fixtures/gpu/h100-2026-12-05e (s26, the s25 checker on an H100 80GB HBM3): vectoradd's 1024² fp16
    benchmark reads A and B and writes the output buffer handed in with them, 3 × 2 MiB (it was counted 4 ×); the
    prefix sum (its reference in float64) is correct in its float32 buffer, judged by its own check."""
    import json
    from pathlib import Path

    run = json.loads((Path(__file__).parent / "fixtures" / "gpu" / "h100-2026-12-05e" /
                      "gpumode_prefixsum_vectoradd.json").read_text())
    results = {row["job"]: result for row, result in zip(run["rows"], run["results"])}
    for job in ("vectoradd_py/submission.py", "vectoradd_py/solutions/correct/submission_triton.py"):
        result = results[job]
        assert result["state"] == "correct" and result["dtype"] == "float16"
        work = result["timing"]["work"]
        assert work["min_bytes"] == 3 * 1024 * 1024 * 2 and result["timing"]["median_us"] > work["floor_us"]
    prefix = results["prefixsum_py/submission.py"]
    assert prefix["state"] == "correct" and prefix["dtype"] == "float32"
    assert prefix["correctness"]["judged_by"] == "check_implementation"


def test_the_timed_work_says_which_bytes_the_output_spans():
    """The floor leaves the output's writes up to L2's size out of the call's DRAM traffic
    (core/roofline.physical_floor): the bytes written are the output's, in a buffer of its own or one handed in."""
    a, b = torch.randn(256), torch.randn(256)
    call = type("Call", (), {"model": None, "fn": staticmethod(lambda d: d[0] + d[1])})
    assert output_and_bytes(call, (a, b))[1] == {"flops": 0.0, "min_bytes": 3 * 256 * 4, "written_bytes": 256 * 4}
    into = type("Call", (), {"model": None, "fn": staticmethod(lambda d: d[2].copy_(d[0] + d[1]))})
    assert output_and_bytes(into, (a, b, torch.empty(256)))[1] == {"flops": 0.0, "min_bytes": 3 * 256 * 4,
                                                                    "written_bytes": 256 * 4}  # GPU MODE's buffer
