# expect: incorrect | check_implementation:
# why: the mean instead of the sum: right shape and dtype, wrong values, judged by the problem's own check
def custom_kernel(data):
    return data.mean(dim=-1)
