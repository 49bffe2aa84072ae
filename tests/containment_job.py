"""A job for the containment tests: runs the Python source in spec["code"] without torch, so it starts fast."""

import sys

from trialtui.runner.child import serve


def run(spec):
    scope = {"spec": spec, "out": {}}
    exec(spec["code"], scope)
    return {"version": 1, "state": "ok", **scope["out"]}


if __name__ == "__main__":
    serve(run, sys.argv)
