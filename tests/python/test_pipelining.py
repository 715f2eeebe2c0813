"""Multi-IPU execution: blocks, stages, sharded and pipelined runs.

Pipelined and sharded runs must give single-IPU results bit for bit: each
IPU computes its stages with the same kernels in the same order, gradients
are accumulated in micro-batch order whatever the thread timing, and every
IPU computes with one host thread here (Simulator.threadsPerIpu(1)), since
oneDNN splits some reductions by thread count.
"""

import copy

import pytest
import torch
import torch.nn as nn

import popsim
from conftest import assert_close
from models import (BlockedMnistNetwork, BlockedWithLoss, assert_split_training_matches_one_ipu,
                    blocked_resnet18, resnet18)

STAGES = {
    2: [popsim.Stage("B1", "B2").ipu(0), popsim.Stage("B3", "B4").ipu(1)],
    4: [popsim.Stage(f"B{i}").ipu(i - 1) for i in range(1, 5)],
}


def options(iterations=1, accumulation=1, recomputation=False):
    opts = popsim.Options().deviceIterations(iterations)
    opts.Training.gradientAccumulation(accumulation).recomputation(recomputation)
    opts.Simulator.threadsPerIpu(1)
    return opts


def strategy(kind, ipus, schedule=popsim.PipelineSchedule.Interleaved):
    if kind == "sharded":
        return popsim.ShardedExecution(*STAGES[ipus])
    return popsim.PipelinedExecution(*STAGES[ipus], schedule=schedule)


def single_ipu():
    return popsim.PipelinedExecution(popsim.Stage("B1", "B2", "B3", "B4").ipu(0))


@pytest.mark.parametrize("kind", ["pipelined", "sharded"])
@pytest.mark.parametrize("ipus", [2, 4])
def test_mnist_inference_equals_single_ipu_exactly(kind, ipus):
    model = BlockedMnistNetwork()
    x = torch.randn(8 * 5, 1, 28, 28)
    single = popsim.inferenceModel(model, options(5).setExecutionStrategy(single_ipu()))
    split = popsim.inferenceModel(model, options(5).setExecutionStrategy(strategy(kind, ipus)))
    expected = single(x)
    assert torch.equal(split(x), expected)
    assert_close(expected, model(x))
    assert split.executionTrace().num_ipus == ipus


@pytest.mark.parametrize("kind", ["pipelined", "sharded"])
@pytest.mark.parametrize("ipus", [2, 4])
def test_resnet18_with_begin_block_inference_equals_single_ipu_exactly(kind, ipus):
    model = blocked_resnet18(ipus)
    x = torch.randn(2 * 5, 3, 32, 32)
    cls = popsim.ShardedExecution if kind == "sharded" else popsim.PipelinedExecution
    single = popsim.inferenceModel(resnet18(), options(5))
    single.model.load_state_dict(model.state_dict())
    split = popsim.inferenceModel(model, options(5).setExecutionStrategy(cls()))
    expected = single(x)
    assert torch.equal(split(x), expected)
    trace = split.executionTrace()
    assert trace.num_ipus == ipus and trace.pipeline["stages"] == ipus


@pytest.mark.parametrize("kind", ["pipelined", "sharded"])
def test_layers_before_the_first_begin_block_run_on_ipu_0(kind):
    # As PopTorch places them: ResNet-18's stem, before layer1's BeginBlock, is a block of
    # its own on IPU 0, ahead of the annotated ones.
    model = resnet18()
    popsim.BeginBlock(model.layer1, "R1", ipu_id=1)
    popsim.BeginBlock(model.layer3, "R3", ipu_id=2)
    x = torch.randn(2 * 5, 3, 32, 32)
    cls = popsim.ShardedExecution if kind == "sharded" else popsim.PipelinedExecution
    single = popsim.inferenceModel(resnet18(), options(5))
    single.model.load_state_dict(model.state_dict())
    split = popsim.inferenceModel(model, options(5).setExecutionStrategy(cls()))
    assert torch.equal(split(x), single(x))
    assert split.executionTrace().num_ipus == 3
    program = split._debug_ir(optimized=True)
    stem = next(line for line in program.splitlines() if "convolution" in line)
    assert 'ipu 0, block "before the first block"' in stem


def train(strategy_, accumulation=8, iterations=2, calls=2, recomputation=False):
    """Trains the blocked MNIST network from seed 0 on fixed batches; returns the initial
    model, the batches, the losses of each call and the trained weights."""
    torch.manual_seed(0)
    model = BlockedMnistNetwork()
    initial = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(1)
    per_call = 4 * accumulation * iterations
    batches = [(torch.randn(per_call, 1, 28, 28, generator=generator),
                torch.randint(0, 10, (per_call,), generator=generator)) for _ in range(calls)]
    opts = options(iterations, accumulation, recomputation=recomputation)
    opts.setExecutionStrategy(strategy_)
    trainer = popsim.trainingModel(BlockedWithLoss(model), opts,
                                   popsim.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-6))
    losses = [trainer(x, labels)[1] for x, labels in batches]
    trainer.copyWeightsToHost()
    weights = {name: value.clone() for name, value in model.state_dict().items()}
    trainer.destroy()
    return initial, batches, torch.stack(losses), weights


def eager(initial, batches, accumulation):
    model = copy.deepcopy(initial)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-6)
    for x, labels in batches:
        for step in range(0, x.shape[0], 4 * accumulation):
            optimizer.zero_grad()
            for micro in range(step, step + 4 * accumulation, 4):
                loss = nn.functional.cross_entropy(model(x[micro:micro + 4]),
                                                   labels[micro:micro + 4])
                (loss / accumulation).backward()
            optimizer.step()
    return model.state_dict()


@pytest.fixture(scope="module")
def single_ipu_training():
    return train(single_ipu())


@pytest.fixture(scope="module")
def eager_weights(single_ipu_training):
    initial, batches, _, _ = single_ipu_training
    return eager(initial, batches, 8)


SCHEDULES = [("pipelined", popsim.PipelineSchedule.Interleaved),
             ("pipelined", popsim.PipelineSchedule.Grouped),
             ("pipelined", popsim.PipelineSchedule.Sequential),
             ("sharded", None)]


@pytest.mark.parametrize("recomputation", [False, True])
@pytest.mark.parametrize("kind,schedule", SCHEDULES)
@pytest.mark.parametrize("ipus", [2, 4])
def test_training_equals_single_ipu_and_eager(single_ipu_training, eager_weights, kind, schedule,
                                              ipus, recomputation):
    _, _, single_losses, single_weights = single_ipu_training
    _, _, losses, weights = train(strategy(kind, ipus, schedule), recomputation=recomputation)
    assert torch.equal(losses, single_losses)
    for name, expected in single_weights.items():
        assert torch.equal(weights[name], expected), name
    for name, expected in eager_weights.items():
        assert_close(weights[name], expected, rtol=1e-4, atol=1e-5)


def test_dropout_masks_match_single_ipu_when_pipelined():
    class DropoutNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 4)
            self.drop1, self.drop2 = nn.Dropout(0.3), nn.Dropout(0.5)

        def forward(self, x, labels):
            with popsim.Block("A", ipu_id=0):
                x = self.drop1(torch.relu(self.fc1(x)))
            with popsim.Block("B", ipu_id=1):
                x = self.drop2(self.fc2(x))
                return x, nn.functional.cross_entropy(x, labels)

    results = []
    for strategy_ in [popsim.PipelinedExecution(), popsim.PipelinedExecution(
            popsim.Stage("A", "B").ipu(0))]:
        torch.manual_seed(0)
        net = DropoutNet()
        opts = options(1, 6).randomSeed(7).setExecutionStrategy(strategy_)
        trainer = popsim.trainingModel(net, opts, popsim.optim.SGD(net.parameters(), lr=0.1))
        x, labels = torch.randn(24, 16), torch.randint(0, 4, (24,))
        out = [trainer(x, labels)[0] for _ in range(2)]
        results.append(torch.cat(out))
    assert torch.equal(results[0], results[1])


class DroppingLayers(nn.Module):
    """Three linear layers with dropout after each, over two blocks."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(16, 16) for _ in range(3))
        self.drop = nn.Dropout(0.4)

    def forward(self, x, labels):
        with popsim.Block("A", ipu_id=0):
            x = self.drop(torch.tanh(self.layers[0](x)))
            x = self.drop(torch.tanh(self.layers[1](x)))
        with popsim.Block("B", ipu_id=1):
            x = self.drop(self.layers[2](x))
            return x, nn.functional.cross_entropy(x, labels)


class CheckpointedLayers(nn.Module):
    """Eight tanh layers with dropout on one IPU, a checkpoint after every two."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(16, 16) for _ in range(8))
        self.drop = nn.Dropout(0.2)

    def forward(self, x, labels):
        for index, layer in enumerate(self.layers):
            x = self.drop(torch.tanh(layer(x)))
            if index % 2 == 1:
                x = popsim.recomputationCheckpoint(x)
        return x, nn.functional.cross_entropy(x, labels)


def trained_with_and_without_recomputation(network, pipelined, rows):
    """Per recomputation setting: the losses of two calls, the trained weights,
    the IPU 0 memory report's categories and the optimised IR."""
    runs = {}
    for recompute in (False, True):
        torch.manual_seed(0)
        net = network()
        opts = options(2 if pipelined else 1, 6 if pipelined else 4,
                       recomputation=recompute).randomSeed(11)
        if pipelined:
            opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
        trainer = popsim.trainingModel(net, opts, popsim.optim.SGD(net.parameters(), lr=0.1))
        generator = torch.Generator().manual_seed(1)
        x = torch.randn(rows, 16, generator=generator)
        labels = torch.randint(0, 16, (rows,), generator=generator)
        losses = torch.cat([trainer(x, labels)[0] for _ in range(2)])
        trainer.copyWeightsToHost()
        memory = {name: category["bytes"] for name, category
                  in trainer.memoryReport()["ipus"][0]["categories"].items()}
        runs[recompute] = (losses, {k: v.clone() for k, v in net.state_dict().items()}, memory,
                           trainer._debug_ir(optimized=True))
    assert torch.equal(runs[True][0], runs[False][0])
    for name, value in runs[False][1].items():
        assert torch.equal(runs[True][1][name], value), name
    return runs


def test_recomputation_repeats_dropout_masks_instead_of_stashing_them():
    """A recomputed dropout draws from the counter value its forward pass read
    (a stashed copy; the counter itself has moved on), so training is exactly
    that without recomputation, and the stash keeps only the stage's input
    and the copies."""
    runs = trained_with_and_without_recomputation(DroppingLayers, pipelined=True, rows=48)
    assert runs[True][2]["stash"] < runs[False][2]["stash"] / 2
    assert "recomputed]" in runs[True][3] and "= dropout(" in runs[True][3]


def test_one_ipu_recomputes_between_its_checkpoints():
    """With checkpoints, a stage whose forward and backward passes are one task
    (here a whole model on one IPU) recomputes each segment just before its
    backward pass: the same training, fewer activations kept."""
    runs = trained_with_and_without_recomputation(CheckpointedLayers, pipelined=False,
                                                  rows=4 * 256)
    assert runs[True][2]["activations"] < 0.7 * runs[False][2]["activations"]
    assert "recomputed]" in runs[True][3] and "recomputed]" not in runs[False][3]


class GroupedConvolutionNetwork(nn.Module):
    """A grouped, strided, dilated convolution on the second IPU: oneDNN runs it with a
    scratchpad, which must not be tied to the thread that compiled the model."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.grouped = nn.Conv2d(8, 12, 3, stride=2, dilation=2, padding=2, groups=4)
        self.head = nn.Linear(12 * 8 * 8, 10)
        self.loss = nn.CrossEntropyLoss()

    def forward(self, x, labels):
        with popsim.Block("B1"):
            x = torch.relu(self.stem(x))
        with popsim.Block("B2"):
            logits = self.head(torch.relu(self.grouped(x)).flatten(1))
            return logits, self.loss(logits, labels)


@pytest.mark.parametrize("kind", ["pipelined", "sharded"])
def test_convolutions_with_scratchpads_train_on_the_ipu_threads_as_on_one_ipu(kind):
    torch.manual_seed(3)
    model = GroupedConvolutionNetwork()
    x, labels = torch.randn(4 * 4, 3, 16, 16), torch.randint(0, 10, (4 * 4,))
    stages = [popsim.Stage("B1").ipu(0), popsim.Stage("B2").ipu(1)]
    cls = popsim.ShardedExecution if kind == "sharded" else popsim.PipelinedExecution
    results = []
    for strategy_ in [popsim.ShardedExecution(popsim.Stage("B1", "B2").ipu(0)), cls(*stages)]:
        copy_ = copy.deepcopy(model)
        trainer = popsim.trainingModel(
            copy_, options(accumulation=4).setExecutionStrategy(strategy_),
            popsim.optim.SGD(copy_.parameters(), lr=0.1))
        losses = [trainer(x, labels)[1] for _ in range(2)]
        trainer.copyWeightsToHost()
        results.append((losses, copy_.state_dict()))
    (single_losses, single_weights), (split_losses, split_weights) = results
    for got, want in zip(split_losses, single_losses):
        assert torch.equal(got, want)
    for name, want in single_weights.items():
        assert torch.equal(split_weights[name], want), name


class TiedEmbeddings(nn.Module):
    """A word embedding on IPU 0 whose transpose decodes again on IPU 0 after a
    layer on IPU 1 (BERT's tied MLM decoder): one weight, two stages of IPU 0."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(11, 6)
        self.layer = nn.Linear(6, 6)

    def forward(self, ids, labels):
        with popsim.Block("embed", ipu_id=0):
            hidden = self.embedding(ids)
        with popsim.Block("layer", ipu_id=1):
            hidden = torch.tanh(self.layer(hidden))
        with popsim.Block("decode", ipu_id=0):
            logits = hidden @ self.embedding.weight.t()
            return nn.functional.cross_entropy(logits.reshape(-1, 11), labels.reshape(-1))


@pytest.mark.parametrize("accum_type", [torch.float32, torch.float16])
def test_a_weight_tied_across_stages_of_one_ipu_trains_as_on_one_ipu(accum_type):
    """Each stage accumulates its own contribution to the tied weight's gradient (none waits
    in the stash for the other's stage): the weights trained are one IPU's."""
    torch.manual_seed(0)
    reference = TiedEmbeddings()
    ids = torch.randint(0, 11, (6 * 4, 5))
    labels = torch.randint(0, 11, (6 * 4, 5))

    def train(strategy):
        model = copy.deepcopy(reference)
        opts = popsim.Options()
        opts.Training.gradientAccumulation(6)
        opts.setExecutionStrategy(strategy)
        trainer = popsim.trainingModel(
            model, opts, popsim.optim.SGD(model.parameters(), lr=0.5, accum_type=accum_type))
        for _ in range(3):
            trainer(ids, labels)
        trainer.copyWeightsToHost()
        memory = trainer.memoryReport()["ipus"][0]["categories"]["stash"]["bytes"]
        return model.state_dict(), memory

    single, _ = train(popsim.PipelinedExecution(popsim.Stage("embed", "layer", "decode").ipu(0)))
    pipelined, stash = train(popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
    # float16 accumulators round each addition: adding the two contributions one after the
    # other rounds once more than adding their sum, within float16's rounding (4.9e-4).
    tolerance = {"rtol": 1e-3, "atol": 1e-4} if accum_type == torch.float16 else {}
    for name, weight in single.items():
        assert_close(pipelined[name], weight, **tolerance,
                     msg=lambda message, name=name: f"{name}: {message}")
    # IPU 0's stash holds activations, never the decoder's [11, 6] weight gradient.
    assert stash < 6 * 4 * 11 * 4


class SharedMask(nn.Module):
    """A causal mask registered once and read by every layer (as a model passes
    mask=self.mask to nn.TransformerEncoder), the layers on two IPUs."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(11, 8)
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(2))
        self.head = nn.Linear(8, 11)
        self.register_buffer("mask", torch.full((5, 5), float("-inf")).triu(1))

    def forward(self, ids, labels):
        hidden = self.embedding(ids)
        for index, layer in enumerate(self.layers):
            with popsim.Block(f"layer{index}", ipu_id=index):
                scores = (hidden @ hidden.transpose(1, 2) + self.mask).softmax(-1)
                hidden = torch.tanh(layer(scores @ hidden))
                if index == len(self.layers) - 1:
                    logits = self.head(hidden)
                    return nn.functional.cross_entropy(logits.reshape(-1, 11),
                                                       labels.reshape(-1))


@pytest.mark.parametrize("kind", ["pipelined", "sharded"])
def test_a_buffer_read_on_several_ipus_is_copied_to_them(kind):
    """A buffer no op writes lives on the IPU that reads it first and is copied to the
    others that read it, as a streamed input is: the weights trained are one IPU's. A
    parameter shared across IPUs stays refused (test_pipelining_errors.py)."""
    torch.manual_seed(0)
    reference = SharedMask()
    ids, labels = torch.randint(0, 11, (4 * 4, 5)), torch.randint(0, 11, (4 * 4, 5))

    assert_split_training_matches_one_ipu(reference, (ids, labels), kind, accumulation=4, lr=0.5)
