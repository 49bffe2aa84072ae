# expect: invalid | time.perf_counter
# why: the static stage sees the clock trialtui times with being replaced
import time

import torch
import torch.nn as nn

_real = time.perf_counter
time.perf_counter = lambda: _real() * 0.01
if torch.cuda.is_available():
    torch.cuda.Event.elapsed_time = lambda self, end: 0.001


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
