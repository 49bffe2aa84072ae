# expect: correct/invalid |
# why: watch's static check rejects os.fork before anything runs; bench runs it
# strategy: forks 200 sleeping processes (a fork bomb, bounded so root, whom RLIMIT_NPROC spares, survives it)
import os
import time

import torch
import torch.nn as nn

for _ in range(200):
    try:
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
    except OSError:
        break


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)
