import torch


def generate_input(size: int, seed: int):
    gen = torch.Generator(device=torch.get_default_device())
    gen.manual_seed(seed)
    return torch.randn(size, generator=gen, device=torch.get_default_device())


def ref_kernel(data):
    return data * 2.0 + 1.0


def check_implementation(data, output):
    expected = ref_kernel(data)
    if output.shape != expected.shape:
        return False, f"shape {tuple(output.shape)}, expected {tuple(expected.shape)}"
    if not torch.allclose(output, expected, atol=1e-5, rtol=1e-5):
        return False, f"max abs error {(output - expected).abs().max().item():.3g}"
    return True, ""
