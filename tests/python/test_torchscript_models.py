"""TorchScript in models: a whole model scripted (torch.jit.script) or loaded from a file
(torch.jit.load) runs and trains as eager, its forward()'s arguments read from its schema;
a model with a scripted submodule or a @torch.jit.script function inside trains as eager."""

import torch
import torch.nn as nn
import torch.nn.functional as F

import popsim
from conftest import assert_close
from models import assert_sgd_steps_match_eager


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(6, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x, labels):
        output = self.head(torch.relu(self.hidden(x)))
        return output, F.cross_entropy(output, labels)


@torch.jit.script
def scripted_gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x * 0.7071067811865476))


class WithScriptedParts(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(6, 8)
        self.mix = torch.jit.script(nn.Sequential(nn.Linear(8, 8), nn.Tanh()))
        self.head = nn.Linear(8, 3)

    def forward(self, x, labels):
        output = self.head(self.mix(scripted_gelu(self.hidden(x))))
        return output, F.cross_entropy(output, labels)


def batches():
    torch.manual_seed(2)
    return [(torch.randn(4, 6), torch.randint(0, 3, (4,))) for _ in range(3)]


def test_a_scripted_or_loaded_model_runs_as_eager(tmp_path):
    torch.manual_seed(0)
    scripted = torch.jit.script(Classifier().eval())
    torch.jit.save(scripted, str(tmp_path / "classifier.pt"))
    loaded = torch.jit.load(str(tmp_path / "classifier.pt"))
    x, labels = batches()[0]
    for model in (scripted, loaded):
        expected = model(x, labels)
        actual = popsim.inferenceModel(model)(x, labels=labels)  # by keyword, as the schema says
        for a, e in zip(actual, expected):
            assert_close(a, e.detach())


def test_a_scripted_model_trains_as_eager():
    torch.manual_seed(1)
    state = Classifier().state_dict()

    def scripted():
        model = Classifier()
        model.load_state_dict(state)
        return torch.jit.script(model)

    assert_sgd_steps_match_eager(scripted, batches())


def test_scripted_submodules_and_functions_train_as_eager():
    torch.manual_seed(1)
    state = WithScriptedParts().state_dict()

    def model():
        parts = WithScriptedParts()
        parts.load_state_dict(state)
        return parts

    assert_sgd_steps_match_eager(model, batches())
