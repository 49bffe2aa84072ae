"""The compile stage's key of triton itself (runner/compile_job.reuse_triton_key): hashed once, then read
back while triton's files are unchanged; a kept key whose fingerprint no longer matches is never used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap


def test_the_kept_triton_key_is_tritons_own_and_a_stale_one_is_hashed_again(tmp_path):
    code = textwrap.dedent("""
        import json, sys
        from pathlib import Path
        import triton.runtime.cache as cache
        from trialtui.runner.compile_job import TRITON_KEY_FILE, reuse_triton_key

        own, kept = cache.triton_key, Path(sys.argv[1]) / TRITON_KEY_FILE
        truth = own()
        reuse_triton_key()  # hashes and keeps it
        first = json.loads(kept.read_text())
        cache.triton_key = own
        reuse_triton_key()  # read back
        read_back = cache.triton_key()
        kept.write_text(json.dumps({"fingerprint": "of other files", "key": "stale"}))
        cache.triton_key = own
        reuse_triton_key()
        print(json.dumps({"first": first["key"] == truth, "read_back": read_back == truth,
                          "stale_ignored": cache.triton_key() == truth,
                          "rewritten": json.loads(kept.read_text())["key"] == truth}))
    """)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TRITON_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.splitlines()[-1]) == {"first": True, "read_back": True, "stale_ignored": True,
                                                        "rewritten": True}
