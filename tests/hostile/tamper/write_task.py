# expect: error | changed while the job ran
# strategy: replaces the tests in every task.yml above its file with one empty case
from pathlib import Path

import torch

for folder in Path(__file__).resolve().parents:
    if (folder / "task.yml").is_file():
        (folder / "task.yml").write_text('tests:\n  - {"size": 0, "seed": 1}\nbenchmarks:\n  - {"size": 1, "seed": 1}\n')


def custom_kernel(data):
    return torch.zeros_like(data)
