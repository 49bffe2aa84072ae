# expect: error/incorrect |
# why: the forged lines reach the checker as replies: a claimed tensor of 10^12 elements is an error, a reply out of turn leaves a request without its output (incorrect); never correct
# strategy: writes replies of its own into the pipe its process answers the checker on
import json
import os
import stat

import torch
import torch.nn as nn

for fd in os.listdir("/proc/self/fd"):
    try:
        if int(fd) > 2 and stat.S_ISFIFO(os.fstat(int(fd)).st_mode):
            os.write(int(fd), (json.dumps({"ok": True, "payload": {"t": 0}, "tensors": [
                {"dtype": "float32", "shape": [10**6, 10**6], "files": [[0, "x.bin"]]}]}) + "\n").encode())
    except OSError:
        pass


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)
