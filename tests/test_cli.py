"""The `trialtui` command's surface: every subcommand is there, and GPU-only ones fail gracefully on a CPU."""

import subprocess
import sys
from pathlib import Path

import pytest



SAMPLES = Path(__file__).parents[1] / "sample_kernels"
COMMANDS = {"open", "validate", "bench", "init", "watch", "analyze", "profile", "calibrate", "trials", "demo", "serve", "mcp"}


def trialtui(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trialtui", *args], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "CUDA_VISIBLE_DEVICES": ""})


def test_every_subcommand_is_registered():
    out = trialtui("--help")
    assert out.returncode == 0
    listed = {line.split()[0] for line in out.stdout.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == COMMANDS


@pytest.mark.slow
def test_analyze_names_the_bound_and_the_fusion(tmp_path):
    out = trialtui("analyze", str(SAMPLES / "matmul_epilogue"))
    assert out.returncode == 0, out.stderr
    assert "compute-bound" in out.stdout and "fuse addmm → silu" in out.stdout


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["calibrate"], "calibrate measures a GPU, and this machine has none"),
])
def test_gpu_commands_say_why_without_a_gpu(args, message):
    out = trialtui(*args)
    assert out.returncode == 1
    assert message in out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr


def test_watch_once_without_headless_scores_prints_and_exits(tmp_path):
    """`--once` means exit when the queue drains: it prints its events rather than open a TUI that would close."""
    import shutil

    root = tmp_path / "p"
    shutil.copytree(Path(__file__).parent / "trust" / "kb_softmax_fp32", root,
                    ignore=lambda d, names: [n for n in names if n.endswith(".py") and n not in ("reference.py", "timing_patch_plain.py")])
    out = trialtui("watch", str(root), "--once")
    assert out.returncode == 0, out.stderr
    assert "timing_patch_plain.py created" in out.stdout and "invalid: line" in out.stdout
    assert "\x1b[" not in out.stdout  # no terminal drawing
