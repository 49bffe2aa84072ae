# expect: correct |
# flags: timing-patched
# why: rewrites the clocks through getattr/setattr on computed names, out of the static check's sight: flagged at run time, never best
import time

import torch
import torch.nn as nn

_CLOCK = "perf" + "_counter"
_real = getattr(time, _CLOCK)
setattr(time, _CLOCK, lambda: _real() * 0.01)
if torch.cuda.is_available():
    setattr(torch.cuda.Event, "elapsed" + "_time", lambda self, end: 0.001)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
