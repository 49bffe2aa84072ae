"""Every child job's entry point: a JSON spec in, a JSON result written atomically, then out.

The exit skips interpreter teardown: threads a candidate started, or a CUDA context an illegal
access broke, must not keep the result waiting or turn it into a hang.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable


def serve(run: Callable[[dict[str, Any]], dict[str, Any]], argv: list[str]) -> None:
    spec_path, result_path = argv[1], argv[2]
    spec = json.loads(Path(spec_path).read_text())
    spec.setdefault("spec_path", spec_path)
    result = run(spec)
    tmp = Path(result_path).with_suffix(".tmp")
    tmp.write_text(json.dumps(result, default=str))
    os.replace(tmp, result_path)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
