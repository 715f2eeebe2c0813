"""PopTorch's performance counters (getPerfCounters and the latencies built on
them) on the simulated clock: PopTorch's shape (a list per input or output of
times per transfer), times consistent with the execution trace and the
call's simulated time."""

import pytest
import torch

import popsim
from models import BlockedMnistNetwork, BlockedWithLoss


class TwoOutputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 2)

    def forward(self, x, y):
        return self.linear(x) + y, y * 2


def test_before_a_call_every_counter_is_an_empty_list():
    model = popsim.inferenceModel(TwoOutputs())
    assert model.getPerfCounters() == {"input": [[]], "input_complete": [[]], "output": [[]],
                                       "output_complete": [[]]}
    assert model.getLatency() == (0.0, 0.0, 0.0)


def test_counters_have_poptorchs_shape_and_the_simulated_clocks_times():
    model = popsim.inferenceModel(TwoOutputs(), popsim.Options().deviceIterations(3))
    model(torch.randn(6, 4), torch.randn(6, 2))
    counters = model.getPerfCounters()
    # Two inputs and two outputs, three transfers each (one per device iteration).
    assert [len(counters[key]) for key in ("input", "input_complete", "output",
                                           "output_complete")] == [2, 2, 2, 2]
    assert all(len(times) == 3 for values in counters.values() for times in values)
    trace = model.executionTrace()
    hz = trace.clock_hz
    inputs = sorted((e["micro_batch"], e["start"], e["end"]) for e in trace.events
                    if e["kind"] == "host_input")
    assert counters["input"][0] == [start / hz for _, start, _ in inputs]
    assert counters["input_complete"][1] == [end / hz for _, _, end in inputs]
    for output in range(2):
        for request, done in zip(counters["output"][output], counters["output_complete"][output]):
            assert request < done
    # The last output arrives when the call ends.
    assert max(max(times) for times in counters["output_complete"]) == pytest.approx(
        model.simulatedTime())


def test_latencies_follow_poptorchs_definitions():
    model = popsim.inferenceModel(TwoOutputs(), popsim.Options().deviceIterations(4))
    model(torch.randn(8, 4), torch.randn(8, 2))
    counters = model.getPerfCounters()

    def spans(start_key, first, end_key, last):
        starts = [first(t) for t in zip(*counters[start_key])]
        ends = [last(t) for t in zip(*counters[end_key])]
        durations = [end - start for start, end in zip(starts, ends)]
        return (min(durations), max(durations), sum(durations) / len(durations))

    assert model.getHostIpuLatency() == pytest.approx(spans("input", min, "input_complete", max))
    assert model.getComputeLatency() == pytest.approx(spans("input_complete", max, "output", max))
    assert model.getIpuHostLatency() == pytest.approx(spans("output", min, "output_complete", max))
    latency = model.getLatency()
    assert latency == pytest.approx(spans("input", min, "output_complete", max))
    assert 0 < latency[0] <= latency[2] <= latency[1] <= model.simulatedTime()


def test_training_with_accumulation_has_more_input_than_output_transfers():
    """Pipelined over 4 IPUs, gradient accumulation 8, OutputMode.Final: an
    input transfer per micro-batch, one output per call."""
    opts = popsim.Options().deviceIterations(2).outputMode(popsim.OutputMode.Final)
    opts.Training.gradientAccumulation(8)
    opts.setExecutionStrategy(popsim.PipelinedExecution("B1", "B2", "B3", "B4"))
    model = BlockedWithLoss(BlockedMnistNetwork())
    trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=0.01))
    trainer(torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,)))
    counters = trainer.getPerfCounters()
    assert len(counters["input"]) == 2 and len(counters["input"][0]) == 16
    assert len(counters["output"][0]) == 1  # Final: the call's last outputs only
    low, high, mean = trainer.getLatency()
    assert 0 < low <= mean <= high <= trainer.simulatedTime()


class Regression(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, target):
        out = self.linear(x)
        return out, torch.nn.functional.mse_loss(out, target)


@pytest.mark.parametrize("mode,period", [(popsim.OutputMode.All, 1),
                                         (popsim.OutputMode.Final, 1),
                                         (popsim.OutputMode.Sum, 1),
                                         (popsim.OutputMode.EveryN, 2)])
@pytest.mark.parametrize("iterations,accumulation,replicas", [(2, 1, 1), (4, 1, 2), (2, 2, 2),
                                                              (2, 1, 4)])
@pytest.mark.parametrize("training", [False, True])
def test_each_replica_has_its_transfers_as_in_poptorch(mode, period, iterations, accumulation,
                                                       replicas, training):
    """PopTorch lists one time per micro-batch of each replica for inputs, and per returned
    output of each replica for outputs: All returns every micro-batch's, Final and Sum one,
    EveryN every N-th iteration's."""
    opts = popsim.Options().deviceIterations(iterations).replicationFactor(replicas)
    opts.outputMode(mode, period)
    if training:
        opts.Training.gradientAccumulation(accumulation)
    micro_batches = iterations * (accumulation if training else 1)
    batch = 2 * micro_batches * replicas
    x, target = torch.randn(batch, 4), torch.randn(batch, 4)
    if training:
        model = popsim.trainingModel(Regression(), opts)
        model(x, target)
    else:
        model = popsim.inferenceModel(torch.nn.Linear(4, 4), opts)
        model(x)
    counters = model.getPerfCounters()
    per_replica = {popsim.OutputMode.All: micro_batches, popsim.OutputMode.Final: 1,
                   popsim.OutputMode.Sum: 1,
                   popsim.OutputMode.EveryN: micro_batches // period}[mode]
    assert {len(times) for times in counters["input"]} == {micro_batches * replicas}
    assert {len(times) for times in counters["output_complete"]} == {per_replica * replicas}
    # Replicas run alike: replica by replica, the same times.
    first = counters["input"][0][:micro_batches]
    assert counters["input"][0] == first * replicas
    low, high, mean = model.getLatency()
    assert 0 < low <= mean <= high <= model.simulatedTime()
