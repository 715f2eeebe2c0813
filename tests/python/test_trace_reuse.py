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
    assert len(traces) == 4


def test_a_cost_only_trace_of_float16_ops_sizes_as_a_computing_one():
    """The placeholders (zeros of each float16 op's result) change nothing the
    compilation keeps: the cost-only figures equal a computing run's."""
    model, x = model_and_batch(half=True)
    model.eval()
    report = popsim.sizeJob(model, x)
    executor = popsim.inferenceModel(model)
    executor(x)
    computed = executor.sizingReport()
    assert report.throughput == computed.throughput
    assert [i.memory_bytes for i in report.ipus] == [i.memory_bytes for i in computed.ipus]
