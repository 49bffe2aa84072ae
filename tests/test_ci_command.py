"""CI runs exactly README's test command (the second quick-start command), on every core."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command_in_parallel():
    quick_start = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    commands = [line for line in quick_start.splitlines() if line and not line.startswith("#")]
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == commands[1]
    assert commands[1].endswith("python -m pytest -n auto")
