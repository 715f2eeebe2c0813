"""IR dumps reproduce their compilation: each file POPSIM_DUMP_IR writes starts
with the compilation's settings, so popsim-opt compiles the first dump, with no
options, to the program the compiler built, and runs each pass on the dump
before it to the dump after it. The configurations below set the options the
passes read (an option left out of the settings header shows up here)."""

import glob
import os
import re

import pytest
import torch
import torch.nn as nn

import popsim
import popsim.compile.gradients
from popsim import _C


class TwoLayers(nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.a = nn.Linear(6, 8)
        self.b = nn.Linear(8, 3)
        self.dropout = nn.Dropout(dropout) if dropout else nn.Identity()

    def forward(self, x, target=None):
        with popsim.Block("A"):
            h = torch.relu(self.dropout(self.a(x)))
        with popsim.Block("B"):
            y = self.b(h)
            if target is None:
                return y
            return y, nn.functional.mse_loss(y, target)


def stages(ipus=(0, 1)):
    return [popsim.Stage("A").ipu(ipus[0]), popsim.Stage("B").ipu(ipus[1])]


def dumps_of(directory):
    """The dumps of the one compilation under `directory`: (pass, text), in order."""
    files = sorted(glob.glob(os.path.join(directory, "compile-*", "*.ir")))
    assert files, "the compilation wrote no IR dump"
    assert len({os.path.dirname(path) for path in files}) == 1, files
    return [(re.sub(r"^\d+-", "", os.path.basename(path))[:-3], open(path).read())
            for path in files]


def inference_pipelined():
    opts = popsim.Options().deviceIterations(4).outputMode(popsim.OutputMode.Final)
    opts.setExecutionStrategy(popsim.PipelinedExecution(*stages()))
    model = popsim.inferenceModel(TwoLayers(), opts)
    model.compile(torch.randn(8, 6))


def training_sharded_running_mean():
    opts = popsim.Options()
    opts.Training.gradientAccumulation(2)
    opts.Training.setMeanAccumulationAndReplicationReductionStrategy(
        popsim.MeanReductionStrategy.Running)
    opts.setExecutionStrategy(popsim.ShardedExecution(*stages()))
    model = TwoLayers()
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, max_grad_norm=0.5)
    popsim.trainingModel(model, opts, optimizer).compile(torch.randn(4, 6), torch.randn(4, 3))


def training_replicated_pipeline():
    opts = popsim.Options().replicationFactor(2)
    opts.Training.gradientAccumulation(3).recomputation(True)
    opts.setExecutionStrategy(popsim.PipelinedExecution(*stages()))
    sharded = (popsim.TensorLocationSettings().useReplicatedTensorSharding(True)
               .minElementsForReplicatedTensorSharding(4))
    opts.TensorLocations.setWeightLocation(sharded).setOptimizerLocation(sharded)
    model = TwoLayers(dropout=0.25)
    optimizer = popsim.optim.Adam(model.parameters(), lr=0.01,
                                  first_order_momentum_accum_type=torch.float16)
    popsim.trainingModel(model, opts, optimizer).compile(torch.randn(12, 6),
                                                          torch.randn(12, 3))


def training_half_automatic_loss_scaling():
    opts = popsim.Options()
    opts.Training.setAutomaticLossScaling(True)
    opts.Precision.setPartialsType(torch.half)
    opts.setExecutionStrategy(popsim.ShardedExecution(*stages((0, 0))))
    opts.anchorTensor("grad_b", "Gradient___b.weight")
    model = TwoLayers().half()
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.1, accum_type=torch.float16)
    popsim.trainingModel(model, opts, optimizer).compile(torch.randn(2, 6).half(),
                                                          torch.randn(2, 3).half())


def inference_overlapped_io():
    class Overlapped(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 3)

        def forward(self, x):
            x = popsim.set_overlap_for_input(x, popsim.OverlapMode.OverlapAccumulationLoop)
            return self.fc(x)

    opts = popsim.Options().deviceIterations(2)
    opts.TensorLocations.numIOTiles(32)
    opts.setExecutionStrategy(popsim.ShardedExecution())
    popsim.inferenceModel(Overlapped(), opts).compile(torch.randn(4, 6))


def gradient_program():
    class WithLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 3)

        def forward(self, x, target):
            return nn.functional.mse_loss(self.fc(x), target)

    popsim.compile.gradients.gradients(WithLoss(), torch.randn(2, 6), torch.randn(2, 3))


CONFIGURATIONS = [inference_pipelined, training_sharded_running_mean,
                  training_replicated_pipeline, training_half_automatic_loss_scaling,
                  inference_overlapped_io, gradient_program]


@pytest.mark.parametrize("configure", CONFIGURATIONS, ids=lambda f: f.__name__)
def test_dumps_reproduce_their_compilation(configure, tmp_path, monkeypatch):
    monkeypatch.setenv("POPSIM_DUMP_IR", str(tmp_path))
    torch.manual_seed(0)
    configure()
    dumps = dumps_of(tmp_path)
    assert dumps[0][0] == "import"
    assert dumps[0][1].startswith("options {\n") or configure is gradient_program
    status, out, err = _C.popsim_opt([], dumps[0][1])
    assert status == 0, err
    assert out == dumps[-1][1]
    for (_, before), (name, after) in zip(dumps, dumps[1:]):
        status, out, err = _C.popsim_opt([f"--passes={name}"], before)
        assert status == 0, f"{name}: {err}"
        assert out == after, f"the dump after {name} does not follow from the one before"


def test_disabled_passes_are_a_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("POPSIM_DUMP_IR", str(tmp_path))
    monkeypatch.setenv("POPSIM_DISABLE_PASSES", "simplify-layout")
    inference_pipelined()
    dumps = dumps_of(tmp_path)
    assert 'disabled_passes = ["simplify-layout"]' in dumps[0][1]
    assert "simplify-layout" not in [name for name, _ in dumps]
    monkeypatch.delenv("POPSIM_DISABLE_PASSES")
    status, out, err = _C.popsim_opt([], dumps[0][1])
    assert status == 0, err
    assert out == dumps[-1][1]
