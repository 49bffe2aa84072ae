# expect: correct |
# flags: no-custom-kernel
# why: summed in float64, rounded once: more accurate than the reference
def custom_kernel(data):
    return data.double().sum(dim=-1).float()
