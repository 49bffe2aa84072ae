"""A KernelBench candidate gets the reference's weights where its parameters and buffers match them by name and
shape; where they do not, its own initial values stay, and a wrong output then says which weights were not
shared (a renamed `fc.weight` looked like a kernel bug, with nothing to say why)."""

from __future__ import annotations

import pytest
import torch
from conftest import write_problem
from test_bench_job import FAST

from trialtui.core.problem_dir import load_problem
from trialtui.engine.bench import bench_file
from trialtui.engine.validate import validate_file
from trialtui.runner.loader import load_matching_weights, unshared_note

LINEAR = '''
import torch
import torch.nn as nn

batch_size = 8
features = 16


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
'''
RENAMED = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, features))
        self.bias = nn.Parameter(torch.zeros(features))

    def forward(self, x):
        return x @ self.weight.t() + self.bias
'''
SAME_NAMES = RENAMED.replace("self.weight = nn.Parameter(torch.randn(features, features))\n        self.bias = nn.Parameter(torch.zeros(features))",
                             "self.fc = nn.Linear(features, features)").replace("x @ self.weight.t() + self.bias", "x @ self.fc.weight.t() + self.fc.bias")


def test_the_names_not_copied_are_the_references_unmatched_by_name_or_shape():
    target = torch.nn.Module()
    target.fc = torch.nn.Linear(4, 3)
    source = {"fc.weight": torch.ones(3, 4), "fc.bias": torch.ones(5), "scale": torch.ones(3)}
    assert load_matching_weights(target, source) == ["fc.bias", "scale"]
    assert torch.equal(target.fc.weight, torch.ones(3, 4))
    assert "fc.bias, scale were not copied" in unshared_note(["fc.bias", "scale"])
    assert unshared_note([]) == unshared_note("forged") == unshared_note(None) == ""  # the candidate's reply is data


@pytest.mark.slow
@pytest.mark.parametrize("candidate, state", [(RENAMED, "incorrect"), (SAME_NAMES, "correct")])
def test_a_wrong_output_names_the_weights_that_were_not_shared(tmp_path, candidate, state):
    root = write_problem(tmp_path / "p", LINEAR, files={"cand.py": candidate}, config=FAST)
    result = bench_file(load_problem(root), root / "cand.py", device="cpu")
    assert result.state == state, result.message
    assert ("the reference's fc.weight, fc.bias were not copied" in result.message) is (state == "incorrect")
    preview = validate_file(root, root / "cand.py")["preview"]
    assert ("fc.weight, fc.bias were not copied" in preview["message"]) is (state == "incorrect")
