# expect: correct |
# flags: no-custom-kernel
# why: a strictly sequential sum (the last column of cumsum): a worse summation order that is still inside the problem's tolerance
def custom_kernel(data):
    return data.cumsum(dim=-1)[:, -1].contiguous()
