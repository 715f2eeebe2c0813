"""The planners' trace reuse (frontend/trace_reuse.py) and the cost-only
trace's placeholders: a reused trace must give the figures a fresh trace
gives, and anything the trace depends on must make a new one."""

import torch
import torch.nn as nn

import popsim
from popsim.frontend import tracing
from popsim.frontend.trace_reuse import reusing_traces


def counting_traces(monkeypatch):
    calls = []
    original = tracing._trace

    def counted(*args, **kwargs):
        calls.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(tracing, "_trace", counted)
    return calls


def model_and_batch(half=False):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 4))
    x = torch.randn(8, 16)
    return (model.half(), x.half()) if half else (model, x)


def sized(model, x, replicas):
    opts = popsim.Options().replicationFactor(replicas)
    return popsim.sizeJob(model, x, opts)


def test_a_cost_only_trace_is_reused_only_inside_the_scope(monkeypatch):
    traces = counting_traces(monkeypatch)
    model, x = model_and_batch()
    fresh = [sized(model, x, replicas).throughput for replicas in (1, 2)]
    assert len(traces) == 2, "outside reusing_traces() every compilation traces"
    with reusing_traces():
        reused = [sized(model, x, replicas).throughput for replicas in (1, 2, 1)]
    assert len(traces) == 3, "inside, the model is traced once for every option"
    assert reused == fresh + fresh[:1]


def test_what_the_trace_depends_on_makes_a_new_one(monkeypatch):
    traces = counting_traces(monkeypatch)
    model, x = model_and_batch()
    with reusing_traces():
        sized(model, x, 1)
        sized(model, torch.randn(4, 16), 1)       # another micro-batch size
        model[1].eval()
        sized(model, x, 1)                        # another train/eval flag
        sized(model, x, 2)                        # (reused)
        popsim.BeginBlock(model, "B0")
        popsim.BeginBlock(model[3], "B1")
        opts = popsim.Options().deviceIterations(2).setExecutionStrategy(
            popsim.PipelinedExecution(popsim.Stage("B0").ipu(0), popsim.Stage("B1").ipu(1)))
        popsim.sizeJob(model, x, opts)            # another annotation
        popsim.sizeJob(model, x + 1, opts)        # other values (the model may read them)
        popsim.sizeJob(model, x + 1, opts)        # (reused)
    assert len(traces) == 5


def test_a_cost_only_trace_of_float16_ops_sizes_as_a_computing_one():
    """The placeholders (zeros of each float16 op's result) change nothing the
    compilation keeps: the cost-only figures equal a computing run's."""
    model, x = model_and_batch(half=True)
    assert_sizes_as_computed(model.eval(), x)


def assert_sizes_as_computed(model, x):
    """A cost-only sizing of an inference model reports what a computing run does."""
    report = popsim.sizeJob(model, x)
    executor = popsim.inferenceModel(model)
    executor(x)
    computed = executor.sizingReport()
    assert report.throughput == computed.throughput
    assert [i.memory_bytes for i in report.ipus] == [i.memory_bytes for i in computed.ipus]


class Markers(nn.Module):
    """float16 layers through popsim's markers, an in-place add on a float16 result
    and float32 ops after it, which a cost-only trace computes."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 16)

    def forward(self, x):
        y = popsim.recomputationCheckpoint(self.a(x))
        y = popsim.set_available_memory(self.b(y), 0.3)
        y = popsim.ipu_print_tensor(y, "y")
        y += x
        z = y.float()
        z += 1.0
        return popsim.identity_loss((z * z).mean(), reduction="none")


def test_markers_and_in_place_ops_in_a_cost_only_trace_size_as_computed(capfd):
    """The markers' meta kernels and the float16 placeholders, which view one zero
    storage, change nothing the compilation keeps, in training too."""
    torch.manual_seed(0)
    model = Markers().half()
    x = torch.randn(8, 16).half()
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.01)
    opts = popsim.Options()
    report = popsim.sizeJob(model, x, opts, optimizer)
    trainer = popsim.trainingModel(model, opts, optimizer)
    trainer(x)
    computed = trainer.sizingReport()
    trainer.destroy()
    assert report.throughput == computed.throughput
    assert [i.memory_bytes for i in report.ipus] == [i.memory_bytes for i in computed.ipus]
    capfd.readouterr()  # (the printed tensor)


class ReadsStrides(nn.Module):
    """A float16 model whose forward() branches on its activation's memory format."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3)

    def forward(self, x):
        y = self.conv(x.contiguous(memory_format=torch.channels_last))
        if y.is_contiguous(memory_format=torch.channels_last):
            y = torch.relu(y) * 2
        return y.sum(dim=(2, 3))


def test_cost_only_placeholders_keep_the_strides_a_computing_run_gives():
    torch.manual_seed(0)
    assert_sizes_as_computed(ReadsStrides().half().eval(), torch.randn(2, 4, 10, 10).half())
