"""One file, one verdict (issue 13.10): a candidate that raises or hangs is `error` / `timeout` under
`bench` and under `watch`, never `invalid` because its CPU preview failed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from test_compile_stage import copy_problem
from trialtui.cli import cli
from trialtui.core.store import Store

GOOD = (Path(__file__).parent / "problems" / "kb_add" / "add.py").read_text()
FORWARD = "        out = torch.empty_like(x)\n"
RAISE_FORWARD = GOOD.replace(FORWARD, FORWARD + "        raise ZeroDivisionError('boom in forward')\n")
RAISE_IMPORT = GOOD + "\nraise RuntimeError('boom at import')\n"
# hangs that block for good: the job's deadline is the claim, not a core spent until it (a spin burnt one per hang)
HANG_FORWARD = GOOD.replace(FORWARD, FORWARD + "        while x.numel() > 0:\n            __import__('time').sleep(60)\n")
HANG_IMPORT = GOOD + "\nimport time\nwhile time.time() > 0:\n    time.sleep(60)\n"


def problem_with(tmp_path: Path, files: dict[str, str], timeout_s: int) -> Path:
    root = copy_problem("kb_add", tmp_path)
    for extra in ("autotuned.py", "spill.py", "add.py"):
        (root / extra).unlink()
    toml = root / "trialtui.toml"
    toml.write_text(f"validate_timeout_s = {timeout_s}\nbench_timeout_s = {timeout_s}\n" + toml.read_text())
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def bench_verdicts(root: Path, names) -> dict[str, tuple[str, str, int]]:
    out = {}
    for name in names:
        run = CliRunner().invoke(cli, ["bench", str(root / name), "--json", "--device", "cpu"])
        result = json.loads(run.output)
        out[name] = (result["state"], result.get("message") or "", run.exit_code)
    return out


def watch_verdicts(root: Path) -> dict[str, tuple[str, str]]:
    run = CliRunner().invoke(cli, ["watch", str(root), "--headless", "--json", "--once", "--device", "cpu"])
    assert run.exit_code == 0, run.output
    with Store.open(root) as store:
        return {t.file: (t.state, (t.result.message if t.result else None) or "") for t in store.trials()}


def assert_same_verdicts(root: Path, fragments: dict[str, tuple[str, str]]) -> None:
    benched = bench_verdicts(root, fragments)
    watched = watch_verdicts(root)
    for name, (state, fragment) in fragments.items():
        assert benched[name][0] == state and fragment in benched[name][1], (name, benched[name])
        assert benched[name][2] == 2  # bench's exit status for error and timeout
        assert watched[name][0] == state and fragment in watched[name][1], (name, watched[name])


def test_raising_in_forward_or_at_import_is_error_in_bench_and_in_watch(tmp_path):
    root = problem_with(tmp_path, {"raise_forward.py": RAISE_FORWARD, "raise_import.py": RAISE_IMPORT}, 60)
    assert_same_verdicts(root, {"raise_forward.py": ("error", "boom in forward"),
                                "raise_import.py": ("error", "boom at import")})


@pytest.mark.slow
def test_hanging_in_forward_or_at_import_is_timeout_in_bench_and_in_watch(tmp_path):
    root = problem_with(tmp_path, {"hang_forward.py": HANG_FORWARD, "hang_import.py": HANG_IMPORT}, 5)  # nothing to finish
    assert_same_verdicts(root, {"hang_forward.py": ("timeout", "timed out"),
                                "hang_import.py": ("timeout", "timed out")})


def snapshot_of(root: Path, text: str) -> Path:
    """The candidate as the engine validates it: a snapshot named by its hash."""
    path = root / ".trialtui" / "snapshots" / "3f2a9c81d4e5b6a7.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_validation_messages_name_the_file_not_the_snapshot(tmp_path):
    from trialtui.engine.validate import validate_file

    root = problem_with(tmp_path, {}, 60)
    snapshot = snapshot_of(root, "import torch\n")
    report = validate_file(root, snapshot, compile=False, name="kernel.py")
    message = report["errors"][0]["message"]
    assert message.startswith("kernel.py does not define ModelNew") and "3f2a9c81" not in message


def test_a_candidate_that_raises_on_the_cpu_fails_validation_but_is_not_invalid(tmp_path):
    from trialtui.engine.validate import validate_file
    from trialtui.render import render_validation

    root = problem_with(tmp_path, {}, 60)
    report = validate_file(root, snapshot_of(root, RAISE_FORWARD), name="kernel.py")
    assert not report["ok"] and report["invalid"] is False
    assert [(e["code"], e["runtime"]) for e in report["errors"]] == [("run-error", True)]
    assert "boom in forward" in report["errors"][0]["message"]
    assert "kernel.py: FAILS WHEN RUN on the CPU (not invalid" in render_validation(report, "kernel.py")
    broken = validate_file(root, snapshot_of(root, GOOD.replace("tl.arange(0, BLOCK)", "tl.arange(0, 100)")))
    assert broken["invalid"] is True  # a compile error is the file's own: invalid
