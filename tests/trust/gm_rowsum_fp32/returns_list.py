# expect: incorrect | output structure differs
# why: a list of 0-d tensors, one per row, where the reference returns one tensor
def custom_kernel(data):
    return [row.sum() for row in data]
