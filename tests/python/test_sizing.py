"""The sizing report (Executor.sizingReport, popsim.sizeJob): memory by
category against capacity, the step's simulated time, throughput over all
replicas, and where each IPU's time goes, parts that add up to the call."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import popsim
from popsim.reports.sizing import TIME_PARTS


class FourLayers(nn.Module):
    """Four linear layers in two blocks, the loss in the second."""

    def __init__(self, width=48):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(4))

    def forward(self, x, target):
        for index, layer in enumerate(self.layers):
            with popsim.Block("AB"[index // 2]):
                x = torch.relu(layer(x))
                if index == 3:
                    return x, F.mse_loss(x, target)
        raise AssertionError("four layers")


class WithLoss(nn.Module):
    """`net` with `loss` of its output and the target."""

    def __init__(self, net, loss):
        super().__init__()
        self.net = net
        self.loss = loss

    def forward(self, x, target):
        out = self.net(x)
        return out, self.loss(out, target)


def _options(accumulation=8, replicas=1, recomputation=False):
    opts = popsim.Options()
    opts.Training.gradientAccumulation(accumulation)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
    if replicas > 1:
        opts.replicationFactor(replicas)
    if recomputation:
        opts.Training.recomputation(True)
    return opts


def _micro_batch(size=4, width=48):
    generator = torch.Generator().manual_seed(0)
    return (torch.randn(size, width, generator=generator),
            torch.randn(size, width, generator=generator))


def _sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def test_time_parts_add_up_to_the_call_on_every_ipu():
    model = FourLayers()
    report = popsim.sizeJob(model, _micro_batch(), _options(replicas=2, recomputation=True),
                            _sgd(model))
    assert len(report.ipus) == 2
    for ipu in report.ipus:
        assert set(ipu.time_cycles) == set(TIME_PARTS)
        assert sum(ipu.time_cycles.values()) == report.call_cycles
        assert 0 < ipu.busy_share <= 1
    total = {part: sum(ipu.time_cycles[part] for ipu in report.ipus) for part in TIME_PARTS}
    for part in ("compute", "exchange", "syncs", "collectives", "recomputation",
                 "inter-IPU copies", "host I/O", "pipeline fill and drain"):
        assert total[part] > 0, part
    assert sum(report.time_shares().values()) == pytest.approx(1.0)


def test_parts_follow_the_job():
    """No recomputation, no replicas: no recomputation and no collectives; one IPU
    has no pipeline to fill."""
    model = FourLayers()
    report = popsim.sizeJob(model, _micro_batch(), _options(), _sgd(model))
    for ipu in report.ipus:
        assert ipu.time_cycles["recomputation"] == 0
        assert ipu.time_cycles["collectives"] == 0
    opts = popsim.Options()
    opts.Training.gradientAccumulation(8)
    single = nn.Sequential(nn.Linear(48, 48))
    report = popsim.sizeJob(WithLoss(single, F.mse_loss), _micro_batch(), opts, _sgd(single))
    (ipu,) = report.ipus
    assert ipu.time_cycles["pipeline fill and drain"] == 0
    assert ipu.time_cycles["inter-IPU copies"] == 0
    assert sum(ipu.time_cycles.values()) == report.call_cycles


def test_a_sizing_equals_the_computing_run():
    """sizeJob's cycles, memory and breakdown are those of a call that computes
    the same job (with the same inputs' shapes)."""
    torch.manual_seed(0)
    model = FourLayers()
    opts = _options(accumulation=4, replicas=2)
    sized = popsim.sizeJob(model, _micro_batch(), opts, _sgd(model))
    trainer = popsim.trainingModel(model, opts, _sgd(model))
    x, target = _micro_batch(4 * 4 * 2)
    trainer(x, target)
    run = trainer.sizingReport()
    assert not run.cost_only and sized.cost_only
    assert run.call_cycles == sized.call_cycles
    assert [i.memory_by_category for i in run.ipus] == [i.memory_by_category for i in sized.ipus]
    assert [i.time_cycles for i in run.ipus] == [i.time_cycles for i in sized.ipus]
    assert run.items_per_call == sized.items_per_call == 32


def test_throughput_counts_every_replica():
    model = FourLayers()
    report = popsim.sizeJob(model, _micro_batch(4), _options(accumulation=8, replicas=4),
                            _sgd(model))
    assert report.replicas == 4 and report.total_ipus == 8
    assert report.items_per_call == 4 * 8 * 4
    assert report.throughput == pytest.approx(
        report.items_per_call / (report.call_cycles / report.clock_hz))
    assert report.step_seconds == pytest.approx(report.call_seconds)


def test_the_report_says_how_many_replicas_share_a_host_thread():
    """A process's replicas take turns on its host thread (Poplar's default stream
    callbacks): the job line says how many, to_dict keeps it, and a profile written
    before it was recorded reads as one."""
    model = FourLayers()
    report = popsim.sizeJob(model, _micro_batch(4), _options(accumulation=8, replicas=3),
                            _sgd(model))
    assert report.replicas_per_host_thread == 3
    assert report.overview_lines()[1].startswith(
        "Job: 3 replica(s) x 2 IPU(s) = 6 IPUs, 3 replicas per host thread; a call is ")
    assert popsim.SizingReport.from_dict(report.to_dict()) == report
    older = report.to_dict()
    del older["replicas_per_host_thread"]
    assert popsim.SizingReport.from_dict(older).replicas_per_host_thread == 1
    alone = popsim.sizeJob(model, _micro_batch(4), _options(accumulation=8), _sgd(model))
    assert alone.replicas_per_host_thread == 1
    assert "host thread" not in alone.overview_lines()[1]


def test_under_sync_pattern_full_every_ipu_waits_for_host_exchanges():
    """PopTorch's default SyncPattern.Full makes every IPU synchronise for a host
    exchange, so IPU 1 idles while IPU 0 receives the inputs (and IPU 0 while IPU 1
    returns the outputs); with SinglePipeline each IPU syncs with the host on its
    own and computes while the other exchanges."""
    class WideInput(nn.Module):
        """A wide input reduced on IPU 0, and most of the work on IPU 1."""

        def __init__(self):
            super().__init__()
            self.reduce = nn.Linear(4096, 64)
            self.layers = nn.ModuleList(nn.Linear(64, 64) for _ in range(8))

        def forward(self, x):
            with popsim.Block("A"):
                x = self.reduce(x)
            with popsim.Block("B"):
                for layer in self.layers:
                    x = torch.relu(layer(x))
                return popsim.identity_loss(x.square(), reduction="mean")

    model = WideInput()
    micro_batch = torch.randn(64, 4096)

    def sized(pattern=None):
        opts = _options(accumulation=16)
        if pattern is not None:
            opts.syncPattern(pattern)
        return popsim.sizeJob(model, micro_batch, opts, _sgd(model))

    full, single = sized(popsim.SyncPattern.Full), sized(popsim.SyncPattern.SinglePipeline)
    assert sized().call_cycles == full.call_cycles  # Full is the default
    assert single.call_cycles < full.call_cycles
    # Under Full the IPUs wait out each other's exchanges.
    waiting = [sum(ipu.time_cycles["waiting for other IPUs"] for ipu in report.ipus)
               for report in (single, full)]
    assert waiting[1] > waiting[0]


def test_device_iterations_are_steps_of_a_call():
    model = FourLayers()
    opts = _options(accumulation=4).deviceIterations(3)
    report = popsim.sizeJob(model, _micro_batch(2), opts, _sgd(model))
    assert report.steps_per_call == 3
    assert report.items_per_call == 2 * 4 * 3
    assert report.step_cycles == pytest.approx(report.call_cycles / 3)


def test_a_job_that_does_not_fit_is_reported_with_what_to_change():
    model = FourLayers(width=256)
    opts = _options()
    opts.Simulator.memoryPerIpu("2MiB")
    report = popsim.sizeJob(model, _micro_batch(64, 256), opts, _sgd(model))
    assert not report.fits
    over = [ipu for ipu in report.ipus if not ipu.fits]
    assert over and over[0].memory_bytes > over[0].capacity_bytes == 2 * 2**20
    text = str(report)
    assert "Fits: NO: IPU" in text and "does NOT fit" in text
    assert f"IPU {over[0].ipu} does not fit: it needs" in report.advice[0]
    assert "Try " in report.advice[0]
    # A run that computes refuses it.
    trainer = popsim.trainingModel(model, opts, _sgd(model))
    with pytest.raises(popsim.OutOfMemoryError, match="Out of memory on IPU"):
        trainer(*_micro_batch(64 * 8, 256))


def test_allow_over_capacity_needs_cost_only():
    model = FourLayers()
    opts = _options()
    opts.Simulator.allowOverCapacity()
    trainer = popsim.trainingModel(model, opts, _sgd(model))
    with pytest.raises(popsim.OptionError,
                       match=r"Simulator.allowOverCapacity\(\) needs Simulator.costOnly\(\)"):
        trainer(*_micro_batch(32))


def test_a_pod_sized_batch_is_never_allocated():
    """A call of 2**16 micro-batches of 64 images (about 150 GB of float32)
    stands for itself with stride-0 views: the sizing needs no such memory."""
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 22 * 22, 10))
    opts = popsim.Options()
    opts.Training.gradientAccumulation(2**16)
    report = popsim.sizeJob(WithLoss(model, F.cross_entropy), (torch.randn(64, 3, 24, 24), torch.randint(0, 10, (64,))),
                            opts, _sgd(model))
    assert report.items_per_call == 64 * 2**16
    assert report.fits and report.throughput > 0


def test_nested_inputs_stand_for_every_micro_batch_of_the_call():
    """Tensors in a dict or a nested tuple stand for the call's micro-batches as top-level
    ones do: the same job sized either way gives the same figures."""

    class Flat(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(32, 32)

        def forward(self, x, y):
            return self.linear(x) + y

    class Nested(Flat):
        def forward(self, inputs):  # {"x": x, "pair": (y,)}
            return self.linear(inputs["x"]) + inputs["pair"][0]

    x = torch.randn(8, 32)
    opts = popsim.Options().deviceIterations(4)
    flat = popsim.sizeJob(Flat(), (x, x), opts)
    nested = popsim.sizeJob(Nested(), ({"x": x, "pair": (x,)},), opts)
    assert nested.items_per_call == flat.items_per_call == 32
    assert nested.call_cycles == flat.call_cycles
    assert nested.throughput == flat.throughput


def test_the_printout_says_its_times_are_simulated():
    model = FourLayers()
    text = str(popsim.sizeJob(model, _micro_batch(), _options(), _sgd(model)))
    assert "cost-only: nothing was computed" in text
    for line in text.splitlines():
        if " ms " in line or "items/s" in line:
            assert line.startswith("Simulated"), line
    assert "Where each IPU's time goes (share of the simulated call)" in text


def test_sizing_report_needs_a_call():
    model = FourLayers()
    trainer = popsim.trainingModel(model, _options(), _sgd(model))
    trainer.compile(*_micro_batch(32))
    with pytest.raises(popsim.InputError, match=r"sizingReport\(\) needs a call"):
        trainer.sizingReport()


def test_an_inference_job():
    model = FourLayers()

    class Forward(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = model.layers

        def forward(self, x):
            for index, layer in enumerate(self.layers):
                with popsim.Block("AB"[index // 2]):
                    x = layer(x)
            return x

    opts = popsim.Options().deviceIterations(16)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
    report = popsim.sizeJob(Forward(), torch.randn(8, 48), opts)
    assert report.items_per_call == 8 * 16 and report.micro_batches_per_step == 1
    for ipu in report.ipus:
        assert sum(ipu.time_cycles.values()) == report.call_cycles
    assert report.to_dict()["throughput"] == report.throughput


def test_the_profile_and_report_html_carry_the_sizing(tmp_path):
    model = FourLayers()
    opts = _options(replicas=2).enableProfiling(str(tmp_path))
    opts.Simulator.costOnly()
    trainer = popsim.trainingModel(model, opts, _sgd(model))
    trainer(*_micro_batch(4 * 8 * 2))
    report = trainer.sizingReport()
    profile = popsim.profiling.load(trainer.profileDirectory())
    assert profile.sizing == report.to_dict()
    summary = profile.summary()
    assert f"Simulated throughput: {report.throughput:,.0f} items/s over 4 IPUs" in summary
    assert "\n".join(report.time_lines()) in summary
    with open(f"{trainer.profileDirectory()}/report.html", encoding="utf-8") as page:
        html = page.read()
    assert "Where each IPU's time goes (share of the simulated call):" in html


def test_a_model_too_large_for_the_host_is_out_of_scope(monkeypatch):
    """Tracing runs on the host; a model whose trace cannot be allocated there
    gets an error that says so, not PyTorch's allocator message alone."""
    from popsim.frontend import tracing as _tracing

    def no_memory(*args, **kwargs):
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:73] . DefaultCPUAllocator: can't "
                           "allocate memory: you tried to allocate 4000000000000 bytes.")

    monkeypatch.setattr(_tracing, "trace", no_memory)
    model = FourLayers()
    with pytest.raises(popsim.CompilationError,
                       match=r"The host ran out of memory tracing FourLayers on one micro-batch "
                             r"\(.*can't allocate memory.*\)\. popsim traces every model on the "
                             r"host, also with Simulator.costOnly\(\)"):
        popsim.sizeJob(model, _micro_batch(), _options(), _sgd(model))


def test_swin_t_training_sizes_at_its_standard_size():
    """torchvision's swin_t trains with stochastic depth: each block's random mask is a
    compile-time tensor written at runtime. The shape arithmetic of the next block (window
    padding, as sizes made tensors) must still fold when its tensors reuse the mask's freed
    memory, instead of failing as 105 unsupported aten::Int."""
    import torchvision

    class WithLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = torchvision.models.swin_t()

        def forward(self, images, labels):
            logits = self.model(images)
            return logits, F.cross_entropy(logits, labels)

    torch.manual_seed(0)
    model = WithLoss()
    report = popsim.sizeJob(model, (torch.randn(1, 3, 224, 224), torch.randint(0, 1000, (1,))),
                            popsim.Options(), torch.optim.SGD(model.parameters(), lr=0.1))
    assert report.fits and report.throughput > 0


class ChecksItsInputs(nn.Module):
    """Refuses inputs that are not positive, and halves its input where a mask is set:
    its trace depends on the values of its inputs, as detection models' checks of their
    boxes and masks built from token ids do."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(6, 6)

    def forward(self, x, mask):
        if bool((x <= 0).any()):
            raise ValueError("inputs must be positive")
        if bool(mask.any()):
            x = torch.where(mask, x * 0.5, x)
        return popsim.identity_loss(self.linear(x), reduction="sum")


def test_a_sizing_traces_on_the_micro_batch_given():
    """sizeJob calls with zeros standing for the job's micro-batches, but the model
    traces on the micro-batch given, as the job's call would."""
    model = ChecksItsInputs()
    x = torch.rand(4, 6) + 0.1
    opts = popsim.Options()
    opts.Training.gradientAccumulation(3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    unmasked = popsim.sizeJob(model, (x, torch.zeros(4, 6, dtype=torch.bool)), opts, optimizer)
    masked = popsim.sizeJob(model, (x, torch.ones(4, 6, dtype=torch.bool)), opts, optimizer)
    assert unmasked.fits and masked.fits
    assert masked.call_cycles > unmasked.call_cycles  # the trace took the mask's branch
    with pytest.raises(ValueError, match="inputs must be positive"):
        popsim.sizeJob(model, (-x, torch.zeros(4, 6, dtype=torch.bool)), opts, optimizer)


class _Wide(torch.nn.Module):
    """Wide activations (512 x 2048 floats per layer) in two parts."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Sequential(torch.nn.Linear(64, 2048), torch.nn.ReLU(),
                                     torch.nn.Linear(2048, 2048), torch.nn.ReLU())
        self.b = torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
                                     torch.nn.Linear(2048, 10))

    def forward(self, x, labels):
        out = self.b(self.a(x))
        return out, torch.nn.functional.cross_entropy(out, labels)


def test_advice_for_activations_says_one_ipu_recomputes_only_between_checkpoints():
    """Training.recomputation(True) alone recomputes a pipeline's stages; one IPU recomputes
    only between recomputation checkpoints, which the advice then asks for."""
    batch = (torch.randn(512, 64), torch.zeros(512, dtype=torch.long))
    advice = {}
    for ipus in (1, 2):
        model = _Wide()
        opts = popsim.Options()
        opts.Simulator.memoryPerIpu("8MiB")
        if ipus == 2:
            popsim.BeginBlock(model.b, "B1", ipu_id=1)
            opts.Training.gradientAccumulation(4)
        report = popsim.sizeJob(model, batch, opts, _sgd(model))
        advice[ipus] = report.advice[0]
        assert "mostly activations" in advice[ipus]
    assert ("recomputation checkpoints (popsim.recomputationCheckpoint with "
            "Options.Training.recomputation(True); on one IPU nothing else recomputes), or more "
            "IPUs per replica") in advice[1]
    assert ("recomputation (Options.Training.recomputation(True) or "
            "popsim.recomputationCheckpoint), or more pipeline stages") in advice[2]
