# expect: correct |
# strategy: starts a sleeper in a session of its own, which must not outlive the job
import subprocess
import sys

import torch
import torch.nn as nn

subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)
