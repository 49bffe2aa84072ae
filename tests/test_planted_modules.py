"""The checker runs nothing the candidate wrote: no folder a candidate can write is on its import path.

The class: a candidate writes, into the problem directory, a module under the name of one the checker
(or a baseline) imports later (here a stdlib module the reference imports lazily in forward, and a
support module the reference imports from beside it). The checker must import the real ones, the
planted shadow is moved beside the log and charged to the job, and a new file of any other name (the
user's next candidate) is left alone.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from trialtui.core.problem_dir import load_problem
from trialtui.engine import guard
from trialtui.engine.bench import bench_file

from conftest import KB_GOOD, KB_REFERENCE, write_problem

LAZY_REFERENCE = KB_REFERENCE.replace(
    "    def forward(self, x):\n",
    "    def forward(self, x):\n        import colorsys  # imported only now, after the candidate ran\n"
    "        import helper\n        assert colorsys.rgb_to_hsv(0, 0, 0) == (0.0, 0.0, 0.0) and helper.SCALE == 1.0\n",
)


def planting(marker: Path) -> str:
    """The good candidate, plus a plant at import: a shadow of `colorsys` and a rewritten helper.py."""
    payload = f"open({str(marker)!r}, 'w').write('ran in the checker')\nSCALE = 2.0\n"
    return KB_GOOD + textwrap.dedent(f"""
        import os as _os
        _here = _os.path.dirname(_os.path.abspath(__file__))
        for _name in ("colorsys.py", "helper.py"):
            with open(_os.path.join(_here, _name), "w") as _fh:
                _fh.write({payload!r})
        """)


def test_a_module_planted_by_the_candidate_is_never_imported_by_the_checker_and_is_charged(tmp_path):
    marker = tmp_path / "marker"
    root = write_problem(tmp_path / "p", reference=LAZY_REFERENCE,
                         files={"helper.py": "SCALE = 1.0\n", "cand.py": planting(marker)})
    result = bench_file(load_problem(root), root / "cand.py", device="cpu", use_cache=False).to_json()
    assert not marker.exists(), "the checker imported a module the candidate planted"
    assert result["state"] == "error", result
    assert "colorsys.py" in result["message"] and "helper.py" in result["message"], result["message"]
    assert not (root / "colorsys.py").exists()  # moved beside the log
    assert (root / "helper.py").read_text() == "SCALE = 1.0\n"  # put back from the copy taken before


def test_the_same_problem_without_the_plant_is_correct(tmp_path):
    """The lazy stdlib import and the sibling helper work from the known-good text (no folder on the path)."""
    root = write_problem(tmp_path / "p", reference=LAZY_REFERENCE,
                         files={"helper.py": "SCALE = 1.0\n", "cand.py": KB_GOOD})
    result = bench_file(load_problem(root), root / "cand.py", device="cpu", use_cache=False).to_json()
    assert result["state"] == "correct", result.get("message")


def test_only_new_entries_that_shadow_a_module_are_taken_away(tmp_path):
    root = write_problem(tmp_path / "p", files={"a.py": KB_GOOD})
    spec = {"root": str(root), "reference": str(root / "reference.py"), "candidate": str(root / "a.py")}
    token, snap = guard.begin(spec)
    (root / "kernel2.py").write_text("# the user's next candidate, saved meanwhile\n")
    (root / "json").mkdir()
    (root / "json" / "__init__.py").write_text("raise SystemExit\n")
    (root / "hook.pth").write_text("import os\n")
    (root / "__pycache__").mkdir()  # what importing the reference leaves: no module, never shadows one
    changed, _ = guard.end(token, snap, tmp_path / "kept")
    assert sorted(Path(c["file"]).name for c in changed) == ["hook.pth", "json"]
    assert (root / "kernel2.py").exists() and (root / "__pycache__").is_dir() and not (root / "json").exists()
    assert (tmp_path / "kept" / "planted-json" / "__init__.py").exists()
