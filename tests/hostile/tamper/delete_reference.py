# expect: error | changed while the job ran
# strategy: deletes the reference next to its file (or above it)
from pathlib import Path

import torch

for folder in Path(__file__).resolve().parents:
    if (folder / "reference.py").is_file():
        (folder / "reference.py").unlink()
        break


def custom_kernel(data):
    return data * 2.0 + 1.0
