"""Save an SVG screenshot of the TUI on a problem directory whose trials are already scored.

python benches/tui_screenshot.py PROBLEM_DIR OUT.svg [--device cuda|cpu]  (used for README after a live GPU run)
"""

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trialtui.core.problem_dir import load_problem  # noqa: E402
from trialtui.tui.app import make_app  # noqa: E402


async def main(directory: str, out: str, device: str) -> None:
    app = make_app(load_problem(directory), device=device)
    async with app.run_test(size=(150, 45)) as pilot:
        await pilot.pause(4)
        path = Path(out).resolve()
        app.save_screenshot(filename=path.name, path=str(path.parent))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[4] if len(sys.argv) > 4 else "cpu"))
