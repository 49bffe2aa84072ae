# expect: correct/invalid |
# why: watch's static check rejects os.fork before anything runs; bench runs it
# strategy: a daemon by double fork and setsid, which must not outlive the job
import os
import time

import torch
import torch.nn as nn

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)
