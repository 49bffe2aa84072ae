"""TestLang's compile job: `python -m trialtui_testplugin.language_job`, a child job like trialtui's own.

It reads the candidate's syntax tree (nothing is run) and reports each kernel with a fact a
real compiler would give: here "registers" is the number of statements in its body.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from trialtui.core.result import RESULT_VERSION
from trialtui.runner.child import serve
from trialtui_testplugin.language import kernels


def run(spec: dict) -> dict:
    tree = ast.parse(Path(spec["candidate"]).read_text())
    found = [{"name": k.name, "arch": arch, "line": k.lineno, "registers": len(k.body), "spills": 0,
              "shared_bytes": 0, "language": "testlang"} for k in kernels(tree) for arch in spec.get("arch") or ["sm_90"]]
    return {
        "version": RESULT_VERSION, "state": "ok",
        "trace": {"state": "ok", "launches": [{"kernel": k.name, "line": k.lineno} for k in kernels(tree)],
                  "preview": {"correct": None, "max_abs_err": None, "message": "TestLang does not run on the CPU"}},
        "compile": {"state": "ok", "kernels": found, "errors": [], "skipped": [], "message": ""},
        "findings": [],
    }


if __name__ == "__main__":
    serve(run, sys.argv)
