# expect: correct |
# strategy: leaves a process in a session of its own that holds GPU memory and sleeps; it must be swept
import subprocess
import sys

import torch
import torch.nn as nn

subprocess.Popen([sys.executable, "-c", "import torch, time; x = torch.ones(1 << 28, device='cuda'); time.sleep(600)"],
                 start_new_session=True)


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)
