"""Support module in the layout of gpu-mode/reference-kernels (their utils.py, rewritten here):
the reference builds its check_implementation with make_match_reference."""

import torch


@torch.no_grad()
def verbose_allclose(received, expected, rtol=1e-05, atol=1e-08, max_print=5) -> list[str]:
    """Mismatch report lines, empty when every element is within atol + rtol * |expected|."""
    if received.shape != expected.shape:
        return ["SIZE MISMATCH"]
    diff = torch.abs(received.float() - expected.float())
    mismatched = (diff > atol + rtol * torch.abs(expected.float())) | (torch.isnan(received) ^ torch.isnan(expected))
    count = int(mismatched.count_nonzero())
    if not count:
        return []
    details = [f"Number of mismatched elements: {count}"]
    for index in torch.nonzero(mismatched)[:max_print]:
        i = tuple(index.tolist())
        details.append(f"ERROR AT {i}: {received[i]} {expected[i]}")
    return details


def match_reference(data, output, reference, rtol=1e-05, atol=1e-08) -> tuple[bool, str]:
    reasons = verbose_allclose(output, reference(data), rtol=rtol, atol=atol)
    if reasons:
        return False, "mismatch found! custom implementation doesn't match reference: " + " ".join(reasons)
    return True, ""


def make_match_reference(reference, **kwargs):
    def wrapped(data, output):
        return match_reference(data, output, reference=reference, **kwargs)

    return wrapped
