"""Options.sourceLocationExcludes and appendToLocationExcludes, as PopTorch's: an
op's source line is the first frame of its stack whose file contains none of the
excluded strings (by default torch's and popsim's directories)."""

import pytest
import torch
import torch.nn as nn

import popsim
from layer_library import scaled_tanh


class UsesALibrary(nn.Module):
    def __init__(self):
        super().__init__()
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        return self.sigmoid(scaled_tanh(x))  # the line the user wrote


def locations(options):
    model = popsim.inferenceModel(UsesALibrary(), options)
    model(torch.randn(2, 3))
    return {step.op: step.location for step in model._executable.program()}


def test_by_default_an_op_points_at_the_first_frame_outside_torch_and_popsim():
    found = locations(popsim.Options())
    assert "layer_library.py:" in found["tanh"]
    assert "test_source_locations.py:" in found["sigmoid"]  # nn.Sigmoid's frame skipped


def test_appended_excludes_make_the_op_point_at_the_users_own_line():
    found = locations(popsim.Options().appendToLocationExcludes("layer_library.py"))
    assert "test_source_locations.py:" in found["tanh"]
    assert "test_source_locations.py:" in found["sigmoid"]


def test_excludes_replace_the_default_list():
    options = popsim.Options().sourceLocationExcludes(["layer_library.py"])
    assert options.toDict()["source_location_excludes"] == ["layer_library.py"]
    found = locations(options)
    assert "test_source_locations.py:" in found["tanh"]
    assert "torch/nn/modules/activation.py:" in found["sigmoid"]  # torch is not skipped


@pytest.mark.parametrize("bad", ["layer_library.py", [1]])
def test_excludes_are_a_list_of_strings(bad):
    with pytest.raises(popsim.OptionError, match="expects a list of str"):
        popsim.Options().sourceLocationExcludes(bad)
