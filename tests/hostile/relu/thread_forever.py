# expect: correct/invalid |
# why: watch's static check rejects threading before anything runs; bench runs it
# strategy: leaves a non-daemon thread running forever: the job must still end
import threading
import time

import torch
import torch.nn as nn

threading.Thread(target=lambda: time.sleep(10**6)).start()


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)
