# expect: error | exited with code 0
# strategy: in forward, writes a passing result into every path in its argv and every descriptor of every
# trialtui ancestor (checker, supervisor, CLI: it stops at the first process that is not trialtui's, so a
# test runner above is left alone), then exits 0
import json
import os
import sys

import torch.nn as nn

FORGED = json.dumps({"version": 1, "state": "correct", "event": "done", "result": {"version": 1, "state": "correct"}})


class ModelNew(nn.Module):
    def forward(self, x, y):
        targets = [a for a in sys.argv[1:]]
        pid = os.getppid()
        while pid > 1:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdline = fh.read()
            if b"trialtui" not in cmdline or b"pytest" in cmdline:
                break
            try:
                targets += [f"/proc/{pid}/fd/{fd}" for fd in os.listdir(f"/proc/{pid}/fd")]
            except OSError:
                pass
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        for target in targets:
            try:
                with open(target, "a") as fh:
                    fh.write(FORGED + "\n")
            except OSError:
                pass
        os._exit(0)
