"""The simulated clock of pipelined and sharded runs.

IPUs run in lockstep pipeline cycles (BSP: compute, then sync and exchange),
so a cycle lasts as long as its busiest IPU. With P stages, G micro-batches
and balanced stages of time T, a pipelined pass takes about (G + P - 1) x T;
a sharded one G x P x T. Inputs are prefetched here (multibuffered with
prefetchDepth 2; at the default depth 1 each task waits for its input):
each IPU's host link streams micro-batch k + 1 while the IPU works on k, so
the link is a stage of its own, and only the first input and the last output
of a call are not hidden behind other work.
"""

import functools
import math
import re

import pytest
import torch
import torch.nn as nn

import popsim


class Balanced(nn.Module):
    """Four stages of about equal compute and copies (IPU 0 receives no copy)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(16, 2048)
        self.layers = nn.ModuleList([nn.Linear(2048, 2048) for _ in range(4)])
        self.head = nn.Linear(2048, 10)

    def forward(self, x, labels=None):
        with popsim.Block("S0", ipu_id=0):
            x = self.embed(x)
        for i, layer in enumerate(self.layers):
            with popsim.Block(f"S{i}", ipu_id=i):
                x = torch.relu(layer(x))
        with popsim.Block("S3", ipu_id=3):
            x = self.head(x)
            return x if labels is None else nn.functional.cross_entropy(x, labels)


TASK_KINDS = ("forward", "backward", "forward+backward", "update")


def run_inference(strategy, micro_batches=16, batch=128):
    """Returns only the last micro-batch's output (OutputMode.Final): an output of every
    micro-batch would load the last stage with a host transfer of 50,000 cycles each."""
    opts = popsim.Options().deviceIterations(micro_batches).setExecutionStrategy(strategy)
    opts.outputMode(popsim.OutputMode.Final).prefetchDepth(2)
    model = popsim.inferenceModel(Balanced(), opts)
    model(torch.randn(batch * micro_batches, 16))
    return model.executionTrace()


@pytest.fixture(scope="module")
def pipelined_inference():
    """run_inference(popsim.PipelinedExecution()), which two tests read."""
    torch.manual_seed(0)
    return run_inference(popsim.PipelinedExecution())


TRAINING_ROWS = 8  # rows per micro-batch of training_trace


def training_trace(micro_batches=8, prefetch_depth=2,
                   schedule=popsim.PipelineSchedule.Interleaved):
    """The trace of one training step of Balanced on 4 pipelined IPUs (the defaults are
    prefetchDepth 2, multibuffered, and popsim's Interleaved), run once per arguments: the
    tests only read it."""
    return _training_trace(micro_batches, prefetch_depth, schedule)


@functools.cache  # keyed on all three arguments, however training_trace was called
def _training_trace(micro_batches, prefetch_depth, schedule):
    torch.manual_seed(0)
    opts = popsim.Options().prefetchDepth(prefetch_depth)
    opts.Training.gradientAccumulation(micro_batches)
    opts.setExecutionStrategy(popsim.PipelinedExecution(schedule=schedule))
    trainer = popsim.trainingModel(Balanced(), opts)
    trainer(torch.randn(micro_batches * TRAINING_ROWS, 16),
            torch.randint(0, 10, (micro_batches * TRAINING_ROWS,)))
    trace = trainer.executionTrace()
    trainer.destroy()
    return trace


def stage_times(trace):
    """The longest run of each task on its IPU, its incoming copies included, and of
    each IPU's host link ("link0"). Outputs to the host are left out: with
    OutputMode.Final only the last micro-batch has one (see unhidden_transfers)."""
    runs = {}
    for event in trace.events:
        if event["kind"] == "host_output":
            continue
        task = event["task"] if trace.occupies_ipu(event) else f"link{event['ipu']}"
        key = (task, event["micro_batch"])
        runs[key] = runs.get(key, 0) + event["end"] - event["start"]
    times = {}
    for (task, _), cycles in runs.items():
        times[task] = max(times.get(task, 0), cycles)
    return times


def unhidden_transfers(trace):
    """The first input streamed in and the last output streamed out, which no other
    work of the call hides."""
    inputs = [e for e in trace.events if e["kind"] == "host_input"]
    outputs = [e for e in trace.events if e["kind"] == "host_output"]
    first = min(inputs, key=lambda e: e["start"])
    last = max(outputs, key=lambda e: e["end"])
    return (first["end"] - first["start"]) + (last["end"] - last["start"])


def cycle_count(trace):
    return 1 + max(event["cycle"] for event in trace.events)


def test_pipelined_inference_follows_the_pipeline_formula(pipelined_inference):
    g, p = 16, 4
    trace = pipelined_inference
    times = stage_times(trace)
    slowest = max(times.values())
    assert cycle_count(trace) == g + p - 1
    formula = (g + p - 1) * slowest + unhidden_transfers(trace)
    assert abs(trace.total_cycles - formula) <= 0.05 * formula
    # Every IPU works on a different micro-batch in the steady state.
    for cycle in range(p - 1, g):
        busy = {(e["ipu"], e["micro_batch"]) for e in trace.events
                if e["cycle"] == cycle and e["kind"] in TASK_KINDS}
        assert busy == {(ipu, cycle - ipu) for ipu in range(p)}


def test_sharded_inference_takes_the_sum_of_its_stages(pipelined_inference):
    g = 16
    trace = run_inference(popsim.ShardedExecution())
    times = stage_times(trace)
    assert cycle_count(trace) == g * 4
    # The link streams the next input while IPUs 1 to 3 work: it is hidden.
    stages = sum(cycles for task, cycles in times.items() if not task.startswith("link"))
    expected = g * stages + unhidden_transfers(trace)
    assert abs(trace.total_cycles - expected) <= 0.01 * expected
    pipelined = pipelined_inference
    speedup = trace.total_cycles / pipelined.total_cycles
    formula = (g + 3) * max(times.values()) + unhidden_transfers(pipelined)
    assert speedup == pytest.approx(expected / formula, rel=0.05)
    assert speedup > 2.5


@pytest.mark.parametrize("schedule,cycles", [
    (popsim.PipelineSchedule.Interleaved, 8 + 7 - 1),
    (popsim.PipelineSchedule.Grouped, (8 + 4 - 1) + (8 + 3 - 1)),
    (popsim.PipelineSchedule.Sequential, 8 * 7),
])
def test_training_schedules(schedule, cycles):
    """Training on 4 IPUs has 7 pipeline stages: F0 F1 F2 FB3 B2 B1 B0, then the updates."""
    trace = training_trace(schedule=schedule)
    assert cycle_count(trace) == cycles + 1  # + the update cycle
    for ipu in range(4):
        mine = [e for e in trace.events if e["ipu"] == ipu and trace.occupies_ipu(e)]
        # Each IPU runs its forward and backward tasks once per micro-batch, in micro-batch
        # order, and its weight update last.
        # Copies come right before the task that receives them.
        for copy, task in zip(mine, mine[1:]):
            if copy["kind"] == "copy":
                assert (task["task"], task["micro_batch"]) == (copy["task"], copy["micro_batch"])
                assert task["start"] == copy["end"]
        # Prefetched inputs arrive before their task starts, one at a time on the link.
        starts = {(e["task"], e["micro_batch"]): e["start"] for e in mine}
        inputs = [e for e in trace.events if e["ipu"] == ipu and e["kind"] == "host_input"]
        for transfer, following in zip(inputs, inputs[1:] + [None]):
            assert transfer["end"] <= starts[(transfer["task"], transfer["micro_batch"])]
            assert following is None or transfer["end"] <= following["start"]
        for kind in ("forward", "backward", "forward+backward"):
            batches = [e["micro_batch"] for e in mine if e["kind"] == kind]
            assert batches in ([], list(range(8)))
        assert mine[-1]["kind"] == "update"
        assert all(a["end"] <= b["start"] for a, b in zip(mine, mine[1:]))
    # A backward task starts after its forward on the next IPU has finished.
    ends = {(e["task"], e["micro_batch"]): e["end"] for e in trace.events}
    starts = {(e["task"], e["micro_batch"]): e["start"] for e in trace.events}
    for m in range(8):
        assert starts[("B2", m)] >= ends[("FB3", m)]
        assert starts[("F1", m)] >= ends[("F0", m)]
    # Activations go forward from IPU k to k + 1 and gradients back.
    copies = {(e["ipu"], e["task"]) for e in trace.events if e["kind"] == "copy"}
    assert copies == {(1, "F1"), (2, "F2"), (3, "FB3"), (2, "B2"), (1, "B1"), (0, "B0")}
    if schedule == popsim.PipelineSchedule.Interleaved:
        # In the steady state every IPU runs a forward and a backward task per cycle.
        for cycle in range(6, 8):
            ipus = [e["ipu"] for e in trace.events
                    if e["cycle"] == cycle and e["kind"] in TASK_KINDS]
            assert sorted(ipus) == [0, 0, 1, 1, 2, 2, 3]


@pytest.mark.parametrize("micro_batches", [8, 16])
@pytest.mark.parametrize("prefetch_depth", [1, 2])
def test_pipelined_training_follows_the_pipeline_formula(micro_batches, prefetch_depth):
    """Training on K IPUs runs G + P - 1 pipeline cycles with P = 2K - 1 stages, but a
    steady-state cycle does one forward and one backward on every IPU, while ramp-up
    cycles do forwards only and ramp-down cycles backwards only. So the step takes about
    (G + K - 1) x T, T the slowest IPU's forward + backward time per micro-batch: the
    pipeline formula with each IPU's forward-backward pair as a stage, as in 1F1B
    (PipeDream-Flush). Plus the copies: the loss is streamed to the host once per step.
    Ramp-up and ramp-down run IPU 0's forwards and backwards, so the formula holds when
    IPU 0 is about as busy as the slowest IPU.
    At depth 1 (no input prepared ahead), IPU 0's input transfer makes its forward +
    backward (about 76k cycles) close to IPU 3's (about 79k). Multibuffered (depth 2),
    IPU 0 computes 26k cycles per
    micro-batch while its host link streams a 50k-cycle input: the link is the slowest
    stage, and the first input (on no other stage's time) adds one link time."""
    g, k = micro_batches, 4
    trace = training_trace(micro_batches, prefetch_depth)
    update = max(e["end"] - e["start"] for e in trace.events if e["kind"] == "update")
    step = trace.total_cycles - update
    slowest = max(trace.micro_batch_cycles() + trace.host_link_cycles())
    if prefetch_depth > 1:
        assert slowest == trace.host_link_cycles()[0] > max(trace.micro_batch_cycles())
        unhidden = unhidden_transfers(trace)
    else:
        unhidden = 50_000 + 1  # ipu-model.md: 50,000 cycles + bytes / 7 GB/s, one float
    formula = (g + k - 1) * slowest + unhidden
    assert abs(step - formula) <= 0.05 * formula
    # The ramp-up and ramp-down take the same time as K - 1 steady-state cycles, not 2K - 2.
    assert step < 0.9 * ((g + 2 * k - 2) * slowest + unhidden)


def test_trace_text_draws_one_row_per_ipu():
    trace = run_inference(popsim.PipelinedExecution(), micro_batches=4)
    lines = str(trace).splitlines()
    assert lines[0].startswith("Interleaved schedule, 4 stage(s) on 4 IPU(s)")
    assert lines[1].split() == ["IPU0", "|", "F0", "F1", "F2", "F3", ".", ".", "."]
    assert lines[4].split() == ["IPU3", "|", ".", ".", ".", "F0", "F1", "F2", "F3"]


def host_cycles(bytes_):
    """ipu-model.md: 50,000 cycles + bytes at 7 GB/s, on a 1.33 GHz Mk2."""
    return 50_000 + host_data_cycles(bytes_)


def host_data_cycles(bytes_):
    """The bytes' part of a host transfer, which the compute tiles do."""
    return math.ceil(bytes_ * 1.33e9 / 7e9)


def test_host_transfers_are_events_of_their_own():
    """Each micro-batch of the images streams into IPU 0 before its forward task and
    of the labels into IPU 3, where the loss is: the host's part (the latency) on the
    link, then the bytes on the compute tiles; the loss (OutputMode.Final) streams
    out of IPU 3 after the last micro-batch."""
    trace = training_trace()
    by_task = {}
    for event in trace.events:
        if event["kind"] in ("host_input", "stream_copy"):
            by_task.setdefault((event["ipu"], event["task"], event["kind"]), []).append(event)
    assert sorted(by_task) == [(0, "F0", "host_input"), (0, "F0", "stream_copy"),
                               (3, "FB3", "host_input"), (3, "FB3", "stream_copy")]
    assert [e["micro_batch"] for e in by_task[(0, "F0", "host_input")]] == list(range(8))
    images, labels = TRAINING_ROWS * 16 * 4, TRAINING_ROWS * 8  # bytes per micro-batch
    for ipu, task, bytes_ in ((0, "F0", images), (3, "FB3", labels)):
        assert {e["end"] - e["start"] for e in by_task[(ipu, task, "host_input")]} == {50_000}
        assert {e["end"] - e["start"] for e in by_task[(ipu, task, "stream_copy")]} == {
            host_data_cycles(bytes_)}
    outputs = [e for e in trace.events if e["kind"] == "host_output"]
    assert [(e["ipu"], e["micro_batch"], e["end"] - e["start"]) for e in outputs] == [
        (3, 7, host_cycles(4))]
    assert "host" not in str(trace)


class WithLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(16, 4)

    def forward(self, x, labels):
        return nn.functional.cross_entropy(self.linear(x), labels)


HOST_ROWS, HOST_ACCUMULATION = 8, 2  # of host_transfer_events


def host_transfer_events(replicas, processes=1, engine_options=None):
    """{kind: durations} of the host transfers of one cost-only training step of
    WithLoss on replica 0 of process 0: its inputs' host part ("host_input"), their
    bytes ("stream_copy") and the loss out ("host_output")."""
    torch.manual_seed(0)
    opts = popsim.Options().replicationFactor(replicas)
    opts.Distributed.configureProcessId(0, processes)
    opts.Training.gradientAccumulation(HOST_ACCUMULATION)
    opts.Simulator.costOnly()
    if engine_options is not None:
        opts._Popart.setEngineOptions(engine_options)
    model = WithLoss()
    trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=0.1))
    batch = HOST_ROWS * replicas * HOST_ACCUMULATION
    trainer(torch.randn(batch, 16), torch.randint(0, 4, (batch,)))
    trace = trainer.executionTrace()
    events = {"replicas_per_host_thread": trace.pipeline["replicas_per_host_thread"]}
    for event in trace.events:
        if event["kind"] in ("host_input", "stream_copy", "host_output"):
            events.setdefault(event["kind"], []).append(event["end"] - event["start"])
    return events


@pytest.mark.parametrize("replicas, processes", [(1, 1), (3, 1), (1, 3)])
def test_replicas_of_one_process_take_turns_on_its_host_thread(replicas, processes):
    """Poplar runs a process's stream callbacks on one host thread unless told otherwise,
    so with replicationFactor(r) each replica's transfers last as long as all r of them:
    r x 50,000 cycles of the host's part and r times the bytes. Replicas in processes of
    their own (Options.Distributed) have a thread each. Cost-only, so process 0 of 3
    needs no other process."""
    events = host_transfer_events(replicas, processes)
    assert events["replicas_per_host_thread"] == replicas  # recorded in the trace
    assert set(events["host_input"]) == {2 * replicas * 50_000}  # two inputs a micro-batch
    per_micro_batch = (host_data_cycles(replicas * HOST_ROWS * 16 * 4)  # the float32 inputs
                       + host_data_cycles(replicas * HOST_ROWS * 8))  # the int64 labels
    assert events["stream_copy"] == [per_micro_batch] * HOST_ACCUMULATION
    # The loss (OutputMode.Final), every replica's through the thread.
    assert events["host_output"] == [replicas * 50_000 + host_data_cycles(replicas * 4)]


MODE, WORKERS = "streamCallbacks.multiThreadMode", "streamCallbacks.numWorkerThreads"


@pytest.mark.parametrize("engine_options, turns", [
    ({WORKERS: 4}, 4),  # singleThread, the default mode, ignores the workers
    ({MODE: "collaborative"}, 4),  # 0 workers: the main thread runs every callback
    ({MODE: "dedicated", WORKERS: 0}, 4),
    ({MODE: "collaborative", WORKERS: 1}, 2),  # the main thread and 1 worker
    ({MODE: "collaborative", WORKERS: 3}, 1),
    ({MODE: "dedicated", WORKERS: "3"}, 2),  # 4 replicas on 3 workers: up to 2 each
    ({MODE: "dedicated", WORKERS: 8}, 1),
    ({MODE: "collaborative", WORKERS: "auto"}, 1),  # a thread per core: one per replica
])
def test_stream_callback_threads_share_out_the_replicas(engine_options, turns):
    """Poplar's engine options give stream callbacks numWorkerThreads worker threads
    outside singleThread mode (with the main thread in the collaborative one); the 4
    replicas share the threads out."""
    events = host_transfer_events(4, engine_options=engine_options)
    assert set(events["host_input"]) == {2 * turns * 50_000}


def test_poplar_engine_options_override_the_sessions_option_by_option(monkeypatch):
    # The variable's mode with the session's workers: the main thread and 1 worker.
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", f'{{"{MODE}": "collaborative"}}')
    events = host_transfer_events(4, engine_options={MODE: "dedicated", WORKERS: 1})
    assert set(events["host_input"]) == {2 * 2 * 50_000}


@pytest.mark.parametrize("engine_options, message", [
    ({MODE: "threaded"}, "opts._Popart.setEngineOptions: streamCallbacks.multiThreadMode must "
                         "be one of singleThread, collaborative, dedicated, got 'threaded'."),
    ({MODE: "dedicated", WORKERS: -1}, "opts._Popart.setEngineOptions: "
                                       "streamCallbacks.numWorkerThreads must be a non-negative "
                                       "integer or \"auto\", got -1."),
    ({WORKERS: True}, "must be a non-negative integer or \"auto\", got True."),
])
def test_bad_stream_callback_options_are_refused(engine_options, message):
    with pytest.raises(popsim.OptionError, match=re.escape(message)):
        host_transfer_events(2, engine_options=engine_options)


def test_a_bad_stream_callback_option_in_the_environment_is_named_there(monkeypatch):
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", f'{{"{WORKERS}": "\u00b2"}}')
    with pytest.raises(popsim.OptionError, match=re.escape(
            "POPLAR_ENGINE_OPTIONS: streamCallbacks.numWorkerThreads must be a non-negative "
            "integer or \"auto\", got '\u00b2'.")):
        host_transfer_events(2)


def test_engine_options_that_are_no_dict_are_refused():
    opts = popsim.Options()
    opts._Popart.set("engineOptions", "streamCallbacks.numWorkerThreads=4")
    model = WithLoss()
    trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(popsim.OptionError, match=re.escape(
            "Options._Popart's engineOptions must be a dict of Poplar engine options, got "
            "'streamCallbacks.numWorkerThreads=4'. Use opts._Popart.setEngineOptions({...}).")):
        trainer(torch.randn(8, 16), torch.randint(0, 4, (8,)))
