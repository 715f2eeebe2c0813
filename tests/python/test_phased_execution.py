"""PopTorch's phased executions: SerialPhasedExecution and
ParallelPhasedExecution run a model's phases one after another, each phase's
stages on the phase's IPUs, and keep tensors between phases as the
Liveness says. Results equal a single IPU's; what moves is the placement,
the memory and the simulated time."""

import copy

import pytest
import torch
from torch import nn

import popsim
from popsim.errors import OptionError

from conftest import assert_close

BLOCKS = ["A", "A2", "B", "B2", "C", "C2"]


class SixBlocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(24, 24) for _ in BLOCKS)

    def forward(self, x, target):
        for name, layer in zip(BLOCKS, self.layers):
            with popsim.Block(name):
                x = torch.tanh(layer(x))
                if name == BLOCKS[-1]:
                    return x, nn.functional.mse_loss(x, target)


def serial():
    # PopTorch's guide: three phases of two stages, all on IPUs 0 and 1.
    strategy = popsim.SerialPhasedExecution(
        popsim.Phase(popsim.Stage("A"), popsim.Stage("A2")),
        popsim.Phase(popsim.Stage("B"), popsim.Stage("B2")),
        popsim.Phase(popsim.Stage("C"), popsim.Stage("C2")))
    for phase in range(3):
        strategy.phase(phase).ipus(0, 1)
    return strategy


def train(model, strategy, steps=3):
    model = copy.deepcopy(model)
    opts = popsim.Options()
    if strategy is not None:
        opts.setExecutionStrategy(strategy)
    trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=0.1))
    generator = torch.Generator().manual_seed(2)
    for _ in range(steps):
        trainer(torch.randn(8, 24, generator=generator), torch.randn(8, 24, generator=generator))
    trainer.copyWeightsToHost()
    return model, trainer


def ipus_of(trainer):
    return {step.ipu for step in trainer._executable.program()}


def test_serial_phases_train_as_one_ipu_and_sharded_execution_do():
    model = SixBlocks()
    one_ipu, _ = train(model, popsim.ShardedExecution(popsim.Stage(*BLOCKS).ipu(0)))
    phased, trainer = train(model, serial())
    sharded, _ = train(model, popsim.ShardedExecution(
        *[popsim.Stage(name).ipu(i % 2) for i, name in enumerate(BLOCKS)]))
    for name, value in phased.state_dict().items():
        assert torch.equal(value, sharded.state_dict()[name]), name
        assert_close(value, one_ipu.state_dict()[name])
    assert ipus_of(trainer) == {0, 1}
    # Phases run one after another: one task at a time.
    assert trainer.executionTrace().pipeline["schedule"] == "Sequential"


def test_parallel_phases_alternate_between_even_and_odd_ipus():
    strategy = popsim.ParallelPhasedExecution(["A", "A2"], ["B", "B2"], ["C", "C2"])
    model, trainer = train(SixBlocks(), strategy)
    placed = {step.ipu for step in trainer._executable.program()
              if step.task.startswith("F")}
    assert placed == {0, 1, 2, 3}  # phase p, stage k: IPU 2k + p % 2
    strategy = popsim.ParallelPhasedExecution(["A", "A2"], ["B", "B2"], ["C", "C2"])
    strategy.phase(1).ipus(1, 2)
    with pytest.raises(OptionError, match=r"phase 1 runs Stage\('B2'\).ipu\(2\) on IPU 2, but "
                       r"odd phases run on odd IPUs"):
        train(SixBlocks(), strategy)


def test_liveness_moves_tensors_off_chip_between_phases():
    def report(liveness):
        strategy = serial().setTensorsLiveness(liveness)
        _, trainer = train(SixBlocks(), strategy, steps=1)
        return {ipu["ipu"]: ipu for ipu in trainer.memoryReport()["ipus"]}

    live = report(popsim.Liveness.AlwaysLive)
    after_forward = report(popsim.Liveness.OffChipAfterFwd)
    each_phase = report(popsim.Liveness.OffChipAfterEachPhase)
    for ipu in (0, 1):
        stash = live[ipu]["categories"]["stash"]["bytes"]
        assert stash > 0  # phases B and C run on the IPU between A's forward and backward
        assert after_forward[ipu]["categories"]["stash"]["bytes"] == 0
        assert after_forward[ipu]["categories"]["weights"]["bytes"] > 0
        assert each_phase[ipu]["categories"]["weights"]["bytes"] == 0
        assert each_phase[ipu]["off_chip"] > after_forward[ipu]["off_chip"] > 0


def test_off_chip_tensors_overlap_the_compute_through_io_tiles_unless_no_overlap():
    """OffChipAfterFwd and OffChipAfterEachPhase load and store through the IO tiles when
    the model sets some aside, beside the compute; OffChipAfterFwdNoOverlap, and any kind
    without IO tiles, moves the tensors through the compute tiles. Values never change."""
    def run(liveness, io_tiles):
        torch.manual_seed(0)
        model = SixBlocks()
        opts = popsim.Options().setExecutionStrategy(serial().setTensorsLiveness(liveness))
        if io_tiles:
            opts.TensorLocations.numIOTiles(io_tiles)
        trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=0.1))
        generator = torch.Generator().manual_seed(2)
        _, loss = trainer(torch.randn(64, 24, generator=generator),
                          torch.randn(64, 24, generator=generator))
        stash = [ipu["categories"]["stash"]["bytes"] for ipu in trainer.memoryReport()["ipus"]]
        return loss.item(), trainer.sizingReport().step_seconds, stash

    no_overlap = run(popsim.Liveness.OffChipAfterFwdNoOverlap, 32)
    assert no_overlap[2] == [0, 0]  # the activations wait off chip, as with OffChipAfterFwd
    assert run(popsim.Liveness.OffChipAfterFwd, 0) == no_overlap
    through_io_tiles = run(popsim.Liveness.OffChipAfterFwd, 32)
    assert through_io_tiles[0] == no_overlap[0]
    assert through_io_tiles[1] < no_overlap[1] * 0.9 and through_io_tiles[2] == [0, 0]
    assert run(popsim.Liveness.OffChipAfterEachPhase, 32)[1] < \
        run(popsim.Liveness.OffChipAfterEachPhase, 0)[1] * 0.9


def test_phased_execution_errors_name_the_phase():
    with pytest.raises(OptionError, match=r"this phase has 2 stage\(s\), so it needs as many IPUs"):
        popsim.Phase("A", "A2").ipus(0)
    with pytest.raises(OptionError, match=r"phases are numbered 0 to 2, got 3"):
        serial().phase(3)
    with pytest.raises(OptionError, match="Block 'A' associated with more than one stage"):
        popsim.SerialPhasedExecution(["A", "B"], ["A"])
    with pytest.raises(OptionError, match="setTensorsLiveness expects a popsim.Liveness"):
        serial().setTensorsLiveness("off")
    strategy = popsim.SerialPhasedExecution(["A", "A2"], ["B", "B2"])  # no phase for C, C2
    with pytest.raises(OptionError, match=r"Unknown Block 'C'"):
        train(SixBlocks(), strategy)
    assert repr(serial().useSeparateBackwardPhase()).startswith(
        "SerialPhasedExecution(Phase(Stage('A').ipu(0), Stage('A2').ipu(1))")
