"""fp16 matmul in the upstream GPU MODE layout: task.py and utils.py beside, named in task.yml's
files:, and the problem's own check at atol = rtol = 2e-2 (the judge: issue 13.1)."""

import torch
from task import input_t, output_t
from utils import make_match_reference


def generate_input(m: int, n: int, k: int, seed: int) -> input_t:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    a = torch.empty(m, k, device=device, dtype=torch.float16)
    a.uniform_(0, 1, generator=gen)
    b = torch.empty(k, n, device=device, dtype=torch.float16)
    b.uniform_(0, 1, generator=gen)
    c = torch.empty(m, n, device=device, dtype=torch.float16)
    return a, b, c


def ref_kernel(data: input_t) -> output_t:
    a, b, c = data
    return a @ b


check_implementation = make_match_reference(ref_kernel, rtol=2e-2, atol=2e-2)
