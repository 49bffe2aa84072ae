# expect: error | changed while the job ran
# strategy: loosens the tolerance in every trialtui.toml above its file
from pathlib import Path

import torch

for folder in Path(__file__).resolve().parents:
    if (folder / "trialtui.toml").is_file():
        with open(folder / "trialtui.toml", "a") as fh:
            fh.write("\natol = 1e9\nrtol = 1e9\n")


def custom_kernel(data):
    return torch.zeros_like(data)
