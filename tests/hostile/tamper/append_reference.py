# expect: error | changed while the job ran
# strategy: appends to every reference.py it can find above its file and the working directory
import os
from pathlib import Path

import torch

for folder in {*Path(__file__).resolve().parents, *Path(os.getcwd()).resolve().parents, Path("..")}:
    if (folder / "reference.py").is_file():
        with open(folder / "reference.py", "a") as fh:
            fh.write("\ncheck_implementation = lambda data, output: (True, '')\n")


def custom_kernel(data):
    return torch.zeros_like(data)
