"""Memory of multi-IPU programs: per-IPU reports, the stash, out-of-memory."""

import pytest
import torch

import popsim
from models import BlockedMnistNetwork, BlockedWithLoss

G = 8


def compiled_trainer(strategy, memory=None, accumulation=G, recomputation=False,
                     prefetch_depth=1):
    opts = popsim.Options().prefetchDepth(prefetch_depth)
    opts.Training.gradientAccumulation(accumulation).recomputation(recomputation)
    if strategy is not None:
        opts.setExecutionStrategy(strategy)
    if memory is not None:
        opts.Simulator.memoryPerIpu(memory)
    model = BlockedWithLoss(BlockedMnistNetwork())
    trainer = popsim.trainingModel(model, opts, popsim.optim.AdamW(model.parameters()))
    trainer.compile(torch.randn(4 * accumulation, 1, 28, 28), torch.randint(0, 10, (4 * accumulation,)))
    return trainer


def stash(trainer):
    return [ipu["categories"]["stash"]["bytes"] for ipu in trainer.memoryReport()["ipus"]]


FOUR = [popsim.Stage(f"B{i}").ipu(i - 1) for i in range(1, 5)]


@pytest.fixture(scope="module")
def four_ipus():
    """compiled_trainer(popsim.PipelinedExecution(*FOUR)), compiled once: the tests that
    share it only read its memoryReport()."""
    torch.manual_seed(0)
    return compiled_trainer(popsim.PipelinedExecution(*FOUR))


def test_stash_depth_per_schedule(four_ipus):
    grouped = stash(compiled_trainer(popsim.PipelinedExecution(
        *FOUR, schedule=popsim.PipelineSchedule.Grouped)))
    interleaved = stash(four_ipus)
    # Grouped keeps all G micro-batches of a stage; interleaved at most the
    # 2 (K - 1 - k) + 1 in flight on IPU k; the last IPU runs its forward and
    # backward passes back to back and stashes nothing.
    assert grouped[3] == interleaved[3] == 0
    for ipu in range(3):
        in_flight = 2 * (4 - 1 - ipu) + 1
        assert grouped[ipu] > 0
        assert interleaved[ipu] * G == grouped[ipu] * in_flight
    for sequential in (popsim.ShardedExecution(*FOUR), popsim.PipelinedExecution(
            *FOUR, schedule=popsim.PipelineSchedule.Sequential)):
        assert stash(compiled_trainer(sequential)) == [0, 0, 0, 0]


def test_recomputation_stashes_only_stage_inputs():
    strategy = popsim.PipelinedExecution(*FOUR)
    plain = compiled_trainer(strategy)
    recomputing = compiled_trainer(strategy, recomputation=True)
    before, after = stash(plain), stash(recomputing)
    assert after[3] == before[3] == 0
    for ipu in range(3):
        assert 0 < after[ipu] < before[ipu]
    # IPU 0 stashes only the images: 4 x 1 x 28 x 28 floats per micro-batch in flight.
    assert after[0] == 7 * 4 * 28 * 28 * 4
    # The backward tasks recompute the forward ops: more simulated time per step.
    program = recomputing._executable.program()
    recomputed = [s for s in program if s.task == "B0" and s.op == "convolution"]
    assert len(recomputed) == 1
    x, labels = torch.randn(4 * G, 1, 28, 28), torch.randint(0, 10, (4 * G,))
    plain(x, labels)
    recomputing(x, labels)
    assert recomputing.cycleCount() > plain.cycleCount()


def test_categories_add_up_per_ipu(four_ipus):
    report = four_ipus.memoryReport()
    assert len(report["ipus"]) == 4
    for ipu in report["ipus"]:
        categories = ipu["categories"]
        assert sum(c["bytes"] for c in categories.values()) == ipu["total"]
        assert sum(c["bytes"] for c in categories.values() if c["always_live"]) == ipu["always_live"]
        assert not categories["stash"]["always_live"]
    # Each IPU holds its own stage's weights: layer3 (320 x 256) sits on IPU 2.
    weights = [ipu["categories"]["weights"]["bytes"] for ipu in report["ipus"]]
    assert weights[2] == max(weights) >= 320 * 256 * 4


def test_a_model_too_big_for_one_ipu_fits_on_four(four_ipus):
    single = compiled_trainer(popsim.PipelinedExecution(popsim.Stage("B1", "B2", "B3", "B4")))
    split = four_ipus
    needed_alone = single.memoryReport()["ipus"][0]["total"]
    needed_split = max(ipu["total"] for ipu in split.memoryReport()["ipus"])
    assert needed_split < needed_alone
    memory = (needed_alone + needed_split) // 2
    with pytest.raises(popsim.OutOfMemoryError, match=r"Out of memory on IPU 0: the program needs"):
        compiled_trainer(popsim.PipelinedExecution(popsim.Stage("B1", "B2", "B3", "B4")), memory)
    fits = compiled_trainer(popsim.PipelinedExecution(*FOUR), memory)
    assert all(ipu["total"] <= memory for ipu in fits.memoryReport()["ipus"])


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_prefetch_buffers_hold_depth_micro_batches_of_inputs(depth):
    """Images stream into IPU 0 and labels into IPU 3 (where the loss is): each IPU
    keeps `depth` extra buffers of its inputs, always live."""
    trainer = compiled_trainer(popsim.PipelinedExecution(*FOUR), prefetch_depth=depth)
    buffers = [ipu["categories"]["prefetch buffers"] for ipu in trainer.memoryReport()["ipus"]]
    images, labels = 4 * 28 * 28 * 4, 4 * 8
    assert [b["bytes"] for b in buffers] == [depth * images, 0, 0, depth * labels]
    assert all(b["always_live"] for b in buffers)


class Checkpointed(torch.nn.Module):
    """Two linear layers on IPU 0 (the first one's output optionally a
    recomputation checkpoint), a classifier on IPU 1."""

    def __init__(self, checkpoint):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(16, 32), torch.nn.Linear(32, 32)
        self.fc3 = torch.nn.Linear(32, 4)
        self.checkpoint = checkpoint

    def forward(self, x, labels):
        with popsim.Block("A", ipu_id=0):
            hidden = torch.tanh(self.fc1(x))
            if self.checkpoint:
                hidden = popsim.recomputationCheckpoint(hidden)
            hidden = torch.tanh(self.fc2(hidden))
        with popsim.Block("B", ipu_id=1):
            out = self.fc3(hidden)
            return out, torch.nn.functional.cross_entropy(out, labels)


def test_recomputation_checkpoint_is_stashed_and_recomputation_restarts_from_it():
    x, labels = torch.randn(2 * 16, 16), torch.randint(0, 4, (2 * 16,))
    runs = {}
    for checkpoint, recomputation in [(False, False), (False, True), (True, True)]:
        torch.manual_seed(0)
        model = Checkpointed(checkpoint)
        opts = popsim.Options().deviceIterations(2)
        opts.Training.gradientAccumulation(4).recomputation(recomputation)
        trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=0.1))
        trainer.compile(x, labels)
        recomputed = [step.op for step in trainer._executable.program()
                      if step.task == "B0" and step.op in ("linear", "tanh")]
        losses = trainer(x, labels)[1]
        trainer.copyWeightsToHost()
        runs[checkpoint, recomputation] = (stash(trainer), recomputed, losses,
                                           [p.detach().clone() for p in model.parameters()])
    in_flight = 3  # interleaved, IPU 0 of 2: 2 (2 - 1 - 0) + 1 micro-batches of 4
    # Recomputation alone stashes the stage input, x, and recomputes both layers;
    # with the checkpoint it also stashes tanh(fc1(x)) and recomputes only fc2.
    assert runs[False, True][0] == [in_flight * 4 * 16 * 4, 0]
    assert runs[True, True][0] == [in_flight * 4 * (16 + 32) * 4, 0]
    assert runs[False, True][1] == ["linear", "tanh", "linear", "tanh"]
    assert runs[True, True][1] == ["linear", "tanh"]
    # Same results bit for bit, with or without recomputation and checkpoints.
    for key in [(False, True), (True, True)]:
        assert torch.equal(runs[key][2], runs[False, False][2])
        for got, want in zip(runs[key][3], runs[False, False][3]):
            assert torch.equal(got, want)


def test_recomputation_checkpoint_keeps_the_structure_it_is_given():
    a, b = torch.ones(2), torch.zeros(3)
    assert popsim.recomputationCheckpoint(a) is a
    pair = popsim.recomputationCheckpoint(a, [b, a])
    assert isinstance(pair, tuple) and pair[0] is a and pair[1][0] is b
    # One list or tuple comes back as it is, as PopTorch returns it: `x, y = f([x, y])`.
    listed = popsim.recomputationCheckpoint([a, b])
    assert isinstance(listed, list) and listed[0] is a and listed[1] is b
    assert popsim.recomputationCheckpoint((a, b)) == (a, b)
    with pytest.raises(TypeError, match=r"popsim\.recomputationCheckpoint expects its arguments "
                                        r"to be a torch\.Tensor, got int"):
        popsim.recomputationCheckpoint(a, 3)
