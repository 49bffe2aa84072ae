"""Row softmax over the last dimension, float32 (GPU MODE form).

Logits get a random scale and a random offset per row, as unnormalised attention scores do:
rows whose values pass 88.7 overflow exp() in float32 unless the row maximum is subtracted
first, and the offset makes constant-output shortcuts fail.
"""

import torch

RTOL = 1e-4
ATOL = 1e-6  # probabilities: an absolute tolerance of 1e-4 would let tiny entries be anything


def generate_input(rows: int, cols: int, seed: int) -> torch.Tensor:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(rows, cols, device=device, generator=gen)
    scale = torch.empty(rows, 1, device=device).uniform_(0.5, 16.0, generator=gen)
    offset = torch.empty(rows, 1, device=device).uniform_(-64.0, 128.0, generator=gen)
    return (x * scale + offset).contiguous()


def ref_kernel(data: torch.Tensor) -> torch.Tensor:
    return torch.softmax(data, dim=-1)


def check_implementation(data: torch.Tensor, output: torch.Tensor) -> tuple[bool, str]:
    expected = ref_kernel(data)
    if not isinstance(output, torch.Tensor):
        return False, f"expected a tensor, got {type(output).__name__}"
    if output.shape != expected.shape or output.dtype != expected.dtype:
        return False, (f"expected {expected.dtype} {tuple(expected.shape)}, "
                       f"got {output.dtype} {tuple(output.shape)}")
    bad = ~torch.isclose(output, expected, rtol=RTOL, atol=ATOL)
    if bad.any():
        idx = tuple(int(i) for i in bad.nonzero()[0])
        n_nonfinite = int((~torch.isfinite(output)).sum())
        return False, (f"{int(bad.sum())} of {bad.numel()} values differ ({n_nonfinite} not finite); "
                       f"first at {idx}: got {output[idx].item():.6g}, expected {expected[idx].item():.6g}")
    return True, ""
