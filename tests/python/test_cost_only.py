"""Cost-only runs (Options.Simulator.costOnly): the same program, memory plan,
simulated clock and profile as a run that computes, with no kernel, no
device memory and no value. A call returns meta tensors (shapes and dtypes,
no values), the host model keeps its weights, and inputs are never read."""

import copy
import json
import os

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import popsim
from models import BlockedMnistNetwork, BlockedWithLoss, MnistNetwork, WithLoss, resnet18


def _mnist_batch(count, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(count, 1, 28, 28, generator=generator),
            torch.randint(0, 10, (count,), generator=generator))


class Tanhs(nn.Module):
    """Six linear layers in three blocks, for the phased executions."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(24, 24) for _ in range(6))

    def forward(self, x, target):
        for index, layer in enumerate(self.layers):
            with popsim.Block("ABC"[index // 2] + str(index % 2)):
                x = torch.tanh(layer(x))
                if index == len(self.layers) - 1:
                    return x, F.mse_loss(x, target)
        raise AssertionError("six layers")


def _pipelined_training():
    opts = popsim.Options().deviceIterations(2)
    opts.Training.gradientAccumulation(8)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
    return BlockedWithLoss(BlockedMnistNetwork()), opts, _mnist_batch(2 * 8 * 4), True


def _sharded_inference():
    opts = popsim.Options().deviceIterations(3)
    opts.setExecutionStrategy(popsim.ShardedExecution(popsim.AutoStage.AutoIncrement))
    return BlockedMnistNetwork(), opts, (torch.randn(3 * 5, 1, 28, 28),), False


def _resnet18_training():
    opts = popsim.Options()
    opts.Training.gradientAccumulation(2)
    return (WithLoss(resnet18().train()), opts,
            (torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))), True)


def _replicated_training():
    opts = popsim.Options().replicationFactor(2).deviceIterations(2)
    opts.Training.gradientAccumulation(3)
    return WithLoss(MnistNetwork()), opts, _mnist_batch(2 * 3 * 2 * 2), True


def _float16_training():
    opts = popsim.Options()
    opts.Training.gradientAccumulation(8)
    opts.Precision.setPartialsType(torch.half)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
    images, labels = _mnist_batch(8 * 2)
    return BlockedWithLoss(BlockedMnistNetwork()).half(), opts, (images.half(), labels), True


def _phased_training():
    strategy = popsim.SerialPhasedExecution(
        popsim.Phase(popsim.Stage("A0"), popsim.Stage("A1")),
        popsim.Phase(popsim.Stage("B0"), popsim.Stage("B1")),
        popsim.Phase(popsim.Stage("C0"), popsim.Stage("C1")))
    for phase in range(3):
        strategy.phase(phase).ipus(0, 1)
    opts = popsim.Options().setExecutionStrategy(strategy)
    return Tanhs(), opts, (torch.randn(8, 24), torch.randn(8, 24)), True


def _recomputed_off_chip_training():
    opts = popsim.Options()
    opts.Training.gradientAccumulation(8).recomputation(True)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
    opts.TensorLocations.setOptimizerLocation(
        popsim.TensorLocationSettings().useOnChipStorage(False))
    return BlockedWithLoss(BlockedMnistNetwork()), opts, _mnist_batch(8 * 2), True


class Recurrent(torch.nn.Module):
    """A batch-first GRU and LSTM: in float16 their kernels transpose in place
    (transpose_) and split their gates (unsafe_split) while the trace runs."""

    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(6, 8, num_layers=2, batch_first=True)
        self.lstm = torch.nn.LSTM(8, 4, batch_first=True)

    def forward(self, x, target):
        hidden, _ = self.gru(x)
        out, _ = self.lstm(hidden)
        return out, torch.nn.functional.mse_loss(out.float(), target)


def _float16_recurrent_training():
    generator = torch.Generator().manual_seed(0)
    inputs = (torch.randn(2, 5, 6, generator=generator).half(),
              torch.randn(2, 5, 4, generator=generator))
    return Recurrent().half(), popsim.Options(), inputs, True


class BranchesOnAComputedValue(torch.nn.Module):
    """forward() decides with a value computed from a product, which a cost-only
    trace does not compute (its placeholder's zeros would take the other branch)."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.extra = torch.nn.Linear(4, 4)
        with torch.no_grad():
            self.linear.bias.fill_(1.0)

    def forward(self, x):
        y = self.linear(x)
        if y.sum() > 0:
            y = self.extra(torch.relu(y))
        return y, torch.nn.functional.mse_loss(y, torch.zeros_like(y))


def _branching_training():
    return BranchesOnAComputedValue(), popsim.Options(), (torch.ones(2, 4),), True


JOBS = {"pipelined training": _pipelined_training, "sharded inference": _sharded_inference,
        "ResNet-18 training": _resnet18_training, "replicated training": _replicated_training,
        "float16 training": _float16_training, "phased training": _phased_training,
        "recomputation, optimizer state off chip": _recomputed_off_chip_training,
        "float16 recurrent training": _float16_recurrent_training,
        "a branch on a computed value": _branching_training}


def _run(job, cost_only, profile_dir=None):
    torch.manual_seed(0)
    model, opts, inputs, training = job()
    if cost_only:
        opts.Simulator.costOnly()
    if profile_dir is not None:
        opts.enableProfiling(str(profile_dir))
    if training:
        optimizer = popsim.optim.Adam(model.parameters(), lr=1e-3)
        wrapped = popsim.trainingModel(model, opts, optimizer)
    else:
        wrapped = popsim.inferenceModel(model, opts)
    outputs = wrapped(*inputs)
    return wrapped, outputs


def _simulated_profile(directory):
    """What a profile says about the simulated IPUs: trace.json without the
    host's measured wall times and the kernels that computed (none in a
    cost-only run), and memory.json."""
    (kind,) = os.listdir(directory)
    trace = json.loads((directory / kind / "trace.json").read_text())
    host = next(event["pid"] for event in trace["traceEvents"]  # the host's process
                if event["name"] == "process_name" and event["args"]["name"] == "host")
    events = [event for event in trace["traceEvents"] if event.get("pid") != host]
    for event in events:
        event.get("args", {}).pop("implementation", None)
    memory = json.loads((directory / kind / "memory.json").read_text())
    return events, memory


def _flat(outputs):
    return list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]


@pytest.mark.parametrize("name", list(JOBS))
def test_a_cost_only_run_simulates_what_a_computing_run_does(name, tmp_path):
    computed, computed_outputs = _run(JOBS[name], False, tmp_path / "computed")
    costed, costed_outputs = _run(JOBS[name], True, tmp_path / "costed")
    assert costed.cycleCount() == computed.cycleCount() > 0
    assert costed.memoryReport() == computed.memoryReport()
    assert costed.executionTrace().events == computed.executionTrace().events
    assert costed.simulatedTime() == computed.simulatedTime()
    assert _simulated_profile(tmp_path / "costed") == _simulated_profile(tmp_path / "computed")
    listing = [(step.op, step.task, step.ipu, step.cycles, step.temporary_bytes)
               for step in computed._executable.program()]
    assert [(step.op, step.task, step.ipu, step.cycles, step.temporary_bytes)
            for step in costed._executable.program()] == listing
    # The outputs: the computing run's shapes and dtypes, without values.
    for costed_output, computed_output in zip(_flat(costed_outputs), _flat(computed_outputs)):
        assert costed_output.device.type == "meta"
        assert (costed_output.shape, costed_output.dtype) == (computed_output.shape,
                                                              computed_output.dtype)


def test_outputs_hold_no_values_and_the_host_model_is_untouched():
    model, opts, (images, labels), _ = _pipelined_training()
    opts.Simulator.costOnly()
    before = copy.deepcopy(model.state_dict())
    trainer = popsim.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.5))
    output, loss = trainer(images, labels)
    assert output.device.type == "meta" and output.shape == (4, 10)
    with pytest.raises(Exception):  # torch refuses to read a meta tensor's value
        loss.item()
    trainer(images, labels)
    trainer.copyWeightsToHost()  # nothing was computed: nothing to copy
    for name, value in model.state_dict().items():
        assert torch.equal(value, before[name]), name
    # The optimizer state is the host's (empty: SGD without momentum never stepped).
    assert trainer._optimizer.state_dict()["state"] == {}
    trainer.detachFromDevice()
    trainer.attachToDevice()
    trainer.destroy()
    for name, value in model.state_dict().items():
        assert torch.equal(value, before[name]), name


def test_inputs_are_never_read_or_written():
    """A stride-0 view stands for a batch without its bytes: the combined
    batch of a large job costs no host memory."""
    class Scale(nn.Module):
        def forward(self, x):
            x.mul_(2)  # written in place: a computing run copies it back
            return x.sum(dim=1)

    opts = popsim.Options().deviceIterations(1000)
    opts.Simulator.costOnly()
    model = popsim.inferenceModel(Scale(), opts)
    one = torch.ones(1, 1 << 20)
    batch = one.expand(1000 * 4, 1 << 20)  # 16 GB of float32 as a view of 4 MB
    (total,) = [model(batch)]
    assert total.device.type == "meta" and total.shape == (4000,)
    assert torch.equal(one, torch.ones(1, 1 << 20))


def test_device_state_reads_give_meta_tensors():
    model, opts, (images, labels), _ = _pipelined_training()
    opts.Simulator.costOnly()
    opts.anchorTensor("fc", "model.layer4.weight")
    trainer = popsim.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.5))
    trainer(images, labels)
    anchored = trainer.getAnchoredTensor("fc")
    assert anchored.device.type == "meta"
    assert anchored.shape == model.model.layer4.weight.shape


def test_a_wrong_input_shape_is_refused_as_in_a_computing_run():
    model, opts, (images, labels), _ = _pipelined_training()
    opts.Simulator.costOnly()
    trainer = popsim.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.5))
    trainer(images, labels)
    with pytest.raises(popsim.InputError, match=r"Input 'images' has 8 samples in dimension 0 "
                                                r"but the model was compiled for 64 per call"):
        trainer(images[:8], labels[:8])


@pytest.mark.parametrize("weight_dtype,input_dtype,downcast,expected", [
    (torch.float32, torch.float32, True, torch.float32),
    (torch.float16, torch.float16, False, torch.float16),
    (torch.float16, torch.float32, True, torch.float16),
    (torch.float16, torch.float32, False, torch.float32)])
def test_a_cost_only_trace_does_not_compute_products(weight_dtype, input_dtype, downcast,
                                                     expected):
    """While a cost-only model traces, matmuls and convolutions give zeros of
    their results' shapes and dtypes (the dtypes a computing trace gives)
    instead of computing: NaN weights leave no trace."""
    from popsim.frontend.half_tracing import half_on_cpu

    linear = nn.Linear(6, 5).to(weight_dtype)
    conv = nn.Conv2d(2, 3, 3).to(weight_dtype)
    with torch.no_grad():
        for module in (linear, conv):
            module.weight.fill_(float("nan"))
    with half_on_cpu(downcast, shapes_only=True):
        out = linear(torch.ones(4, 6, dtype=input_dtype))
        image = conv(torch.ones(1, 2, 7, 7, dtype=input_dtype))
    assert out.shape == (4, 5) and out.dtype == expected
    assert image.shape == (1, 3, 5, 5) and image.dtype == expected
    assert not out.isnan().any() and not image.isnan().any()


def test_a_cost_only_trace_does_not_compute_what_follows_a_product():
    """Ops on a skipped product's placeholder give placeholders of their eager
    results' shapes, strides and dtypes without computing (a softmax of zeros
    would be uniform, not zero), in-place ops leave placeholders as they are,
    and ops on real values still compute."""
    from popsim.frontend.half_tracing import half_on_cpu

    linear = nn.Linear(6, 5)
    inputs, offsets = torch.ones(4, 6), torch.zeros(5)
    with torch.no_grad(), half_on_cpu(False, shapes_only=True):
        scores = linear(inputs)
        probabilities = scores.t().softmax(0)
        chosen = scores.argmax(1)
        scores.add_(1.0)
        relu = F.relu(scores, inplace=True)
        offsets.add_(2.0)
        shifted = scores + offsets
        sparse = torch.eye(5).to_sparse().mul(2.0)  # no storage to ask, computed as it is
    eager = linear(inputs).t().softmax(0)
    assert (probabilities.shape, probabilities.stride(), probabilities.dtype) == (
        eager.shape, eager.stride(), eager.dtype)
    assert chosen.dtype == torch.int64 and chosen.shape == (4,)
    for placeholder in (scores, probabilities, chosen, relu, shifted):
        assert not placeholder.any()
    assert torch.equal(offsets, torch.full((5,), 2.0))
    assert torch.equal(sparse.to_dense(), torch.eye(5) * 2)


def test_8_bit_inputs_cross_from_the_host_as_bytes():
    """uint8 images are int32 on the device, but the host streams them as bytes:
    their transfer's bytes part is a quarter of int32 images'."""
    def stream_cycles(dtype):
        class Cast(nn.Module):
            def __init__(self):
                super().__init__()
                self.model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10))

            def forward(self, x):
                return self.model(x.float())

        inference = popsim.inferenceModel(Cast())
        inference(torch.zeros(64, 3, 32, 32, dtype=dtype))
        assert "{streamed_bytes=1}" in inference._debug_ir() or dtype != torch.uint8
        return [e["end"] - e["start"] for e in inference.executionTrace().events
                if e["kind"] == "stream_copy"]

    (as_bytes,), (as_ints,) = stream_cycles(torch.uint8), stream_cycles(torch.int32)
    elements = 64 * 3 * 32 * 32
    assert as_bytes == pytest.approx(elements * 1.33e9 / 7e9, abs=1)
    assert as_ints == pytest.approx(4 * elements * 1.33e9 / 7e9, abs=1)
