# expect: error/incorrect |
# why: planting links where the checker writes inputs: refused (error) or harmless (the output is still judged); never correct, and the link target is never written
# strategy: plants symlinks under the names the checker will write next, pointing at a file outside
import os
import sys

import torch
import torch.nn as nn

_exchange = sys.argv[1] if len(sys.argv) > 1 else "."
_target = os.path.join(os.getcwd(), "victim.txt")
open(_target, "w").write("untouched")
for i in range(64):
    try:
        os.symlink(_target, os.path.join(_exchange, f"chk-{i}.bin"))
    except OSError:
        pass


class ModelNew(nn.Module):
    def forward(self, x, y):
        assert open(_target).read() == "untouched", "the checker wrote through a planted link"
        return torch.zeros_like(x)
