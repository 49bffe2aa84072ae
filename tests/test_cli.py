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


# The directory as a read-only filesystem shows it (errno 30), whoever runs the test: root writes through
# chmod, so the shim refuses writes under the problem the way a read-only mount does.
READ_ONLY = """
import errno, os, pathlib, sys
root = sys.argv.pop(1)
mkdir, open_ = pathlib.Path.mkdir, os.open
def refuse(path):
    raise OSError(errno.EROFS, "Read-only file system", str(path))
def ro_mkdir(self, *args, **kwargs):
    return refuse(self) if str(self).startswith(root) else mkdir(self, *args, **kwargs)
def ro_open(path, flags, *args, **kwargs):
    writes = flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
    return refuse(path) if writes and str(path).startswith(root) else open_(path, flags, *args, **kwargs)
pathlib.Path.mkdir, os.open = ro_mkdir, ro_open
from trialtui.cli import main
sys.argv[0] = "trialtui"
main()
"""


@pytest.mark.parametrize("command", [["open"], ["watch", "--headless"], ["mcp"]])
def test_a_read_only_problem_directory_is_refused_with_what_to_do_not_a_traceback(tmp_path, command):
    from conftest import KB_GOOD, write_problem

    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})
    out = subprocess.run([sys.executable, "-c", READ_ONLY, str(root), *command, str(root)], capture_output=True,
                         text=True, timeout=300, stdin=subprocess.DEVNULL,
                         env={**__import__("os").environ, "CUDA_VISIBLE_DEVICES": ""})
    said = out.stdout + out.stderr
    assert out.returncode == 2, said
    assert "Traceback" not in said and "Errno" not in said
    assert f"{root} is not writable (Read-only file system)" in said and "Make the directory writable" in said
    assert not (root / ".trialtui").exists()


@pytest.mark.slow
def test_a_reference_that_raises_on_import_is_the_problems_failure_not_the_candidates(tmp_path):
    import json

    from conftest import KB_GOOD, KB_REFERENCE, write_problem

    root = write_problem(tmp_path / "prob", reference=KB_REFERENCE + "\nraise RuntimeError('reference boom')\n",
                         files={"kernel.py": KB_GOOD})
    out = trialtui("bench", str(root / "kernel.py"), "--json", "--device", "cpu")
    result = json.loads(out.stdout)
    assert result["state"] == "error" and "reference boom" in result["message"], result
    assert result["reference_failed"] is True


def test_init_without_a_problem_file_says_its_reference_is_an_example(tmp_path):
    """A directory named for a problem gets the bias + GELU example: the output says so, and how to wrap one's own."""
    from click.testing import CliRunner

    from trialtui.cli.commands import cli

    out = CliRunner().invoke(cli, ["init", str(tmp_path / "softmax")])
    assert out.exit_code == 0 and "example (bias + GELU" in out.output and "--from" in out.output
    (tmp_path / "problem.py").write_text((tmp_path / "softmax" / "reference.py").read_text())
    wrapped = CliRunner().invoke(cli, ["init", str(tmp_path / "mine"), "--from", str(tmp_path / "problem.py")])
    assert wrapped.exit_code == 0 and "example" not in wrapped.output


def test_bench_of_a_syntax_error_names_the_file_and_line_and_keeps_the_fix_hint(tmp_path):
    """The header had a bare `?` (the dtype of a result that never ran) and the message no file name."""
    from click.testing import CliRunner

    from conftest import KB_GOOD, write_problem
    from trialtui.cli.commands import cli

    source = KB_GOOD.replace("def forward(self, x):", "def forward(self, x)")
    line = source.splitlines().index("    def forward(self, x)") + 1
    root = write_problem(tmp_path / "prob", files={"syntax.py": source})
    out = CliRunner().invoke(cli, ["bench", str(root / "syntax.py")])
    assert out.exit_code == 2
    assert out.output.splitlines() == ["INVALID  (refused by the static checks: not run)",
                                       f"  syntax.py:{line}: syntax error: expected ':'",
                                       f"  hint: fix line {line}: def forward(self, x)",
                                       f"  (a one-off check, kept in no tree: `trialtui {root}` records every save "
                                       "as a trial)"]  # a new user looked for bench's results in `trials status`


@pytest.mark.parametrize("command", ["bench", "validate"])
def test_running_the_reference_as_a_candidate_says_it_is_the_reference_and_how_to_start_one(tmp_path, command):
    from click.testing import CliRunner

    from conftest import write_problem
    from trialtui.cli.commands import cli

    root = write_problem(tmp_path / "prob")
    out = CliRunner().invoke(cli, [command, str(root / "reference.py")])
    assert out.exit_code != 0
    assert "reference.py is the problem's reference, not a candidate" in out.output
    assert "cp reference.py my_kernel.py) with Model renamed ModelNew" in out.output
    assert "does not define ModelNew" not in out.output
