"""torch.utils.checkpoint in a popsim model: its checkpoints are popsim's recomputation
checkpoints (popsim/frontend/torch_checkpoints.py), and training gives eager PyTorch's
weights, for the reentrant variant (PyTorch 1.13's default, which PyTorch's tracer cannot
record), the other, and checkpoint_sequential."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

import popsim
from models import assert_sgd_steps_match_eager


class Checkpointed(nn.Module):
    """A layer, three layers run through `run(body, hidden)`, a head."""

    def __init__(self, run):
        super().__init__()
        self.first = nn.Linear(6, 8)
        self.body = nn.Sequential(*(layer for _ in range(3)
                                    for layer in (nn.Linear(8, 8), nn.Tanh())))
        self.head = nn.Linear(8, 2)
        self.run = run

    def forward(self, x, target):
        hidden = self.run(self.body, torch.relu(self.first(x)))
        out = self.head(hidden)
        return out, F.mse_loss(out, target)


RUNS = {
    "reentrant": lambda body, hidden: checkpoint(body, hidden),
    "not reentrant": lambda body, hidden: checkpoint(body, hidden, use_reentrant=False),
    "sequential": lambda body, hidden: checkpoint_sequential(body, 2, hidden),
    "popsim's": lambda body, hidden: popsim.recomputationCheckpoint(
        body(popsim.recomputationCheckpoint(hidden))),
}


def _batches():
    generator = torch.Generator().manual_seed(0)
    return [(torch.randn(4, 6, generator=generator), torch.randn(4, 2, generator=generator))
            for _ in range(3)]


@pytest.mark.parametrize("run", ["reentrant", "not reentrant", "sequential"])
def test_a_checkpointed_model_trains_as_eager(run):
    torch.manual_seed(0)
    assert_sgd_steps_match_eager(lambda: Checkpointed(RUNS[run]), _batches())


def _recomputed_cycles(run):
    torch.manual_seed(0)
    model = Checkpointed(RUNS[run])
    opts = popsim.Options()
    opts.Training.recomputation(True)
    report = popsim.sizeJob(model, _batches()[0], opts, popsim.optim.SGD(model.parameters(),
                                                                          lr=0.1))
    return report.ipus[0].time_cycles["recomputation"]


def test_torchs_checkpoints_recompute_as_popsims_do():
    """With recomputation on, the body is recomputed in the backward pass, exactly as
    popsim.recomputationCheckpoint around it makes it."""
    popsims = _recomputed_cycles("popsim's")
    assert popsims > 0
    assert _recomputed_cycles("reentrant") == _recomputed_cycles("not reentrant") == popsims


class CheckpointsItsInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(4, 4)
        self.head = nn.Linear(4, 1)

    def forward(self, x, target):
        hidden = checkpoint(lambda value: torch.relu(self.inner(value)), x)
        return F.mse_loss(self.head(hidden), target)


def test_a_reentrant_checkpoint_of_inputs_without_gradients_trains_nothing_inside_as_eager():
    """Eager's reentrant checkpoint, none of whose inputs requires a gradient, gives outputs
    without one: the function's own parameters do not train (PyTorch warns, popsim too)."""
    torch.manual_seed(0)
    model = CheckpointsItsInput()
    inner, head = model.inner.weight.detach().clone(), model.head.weight.detach().clone()
    trainer = popsim.trainingModel(model, optimizer=popsim.optim.SGD(model.parameters(), lr=0.1))
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        trainer(torch.randn(3, 4), torch.randn(3, 1))
    trainer.copyWeightsToHost()
    assert torch.equal(model.inner.weight.detach(), inner)
    assert not torch.equal(model.head.weight.detach(), head)
