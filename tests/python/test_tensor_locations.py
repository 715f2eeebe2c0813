"""Tensor locations: the optimizer state in Streaming Memory, off chip."""

import math

import pytest
import torch

import popsim
from models import BlockedMnistNetwork, BlockedWithLoss

G = 8
FOUR = [popsim.Stage(f"B{i}").ipu(i - 1) for i in range(1, 5)]


def train(location=None, steps=3):
    torch.manual_seed(0)
    opts = popsim.Options().deviceIterations(2)
    opts.Training.gradientAccumulation(G)
    opts.setExecutionStrategy(popsim.PipelinedExecution(*FOUR))
    opts.Simulator.threadsPerIpu(1)
    if location is not None:
        opts.TensorLocations.setOptimizerLocation(location)
    model = BlockedWithLoss(BlockedMnistNetwork())
    trainer = popsim.trainingModel(model, opts, popsim.optim.AdamW(model.parameters(), lr=1e-3))
    data = torch.Generator().manual_seed(1)
    for _ in range(steps):
        trainer(torch.randn(2 * G * 4, 1, 28, 28, generator=data),
                torch.randint(0, 10, (2 * G * 4,), generator=data))
    trainer.copyWeightsToHost()
    return trainer, model


def streaming_cycles(bytes_):
    """Streaming Memory at 64 GB/s / 8, plus the IPU-Links' 3,000-cycle latency (Mk2)."""
    return 3000 + math.ceil(bytes_ * 1.33e9 / 8e9)


@pytest.mark.timeout(120)
def test_offloaded_optimizer_state_moves_off_chip_and_costs_update_time():
    on_chip, on_model = train()
    off_chip, off_model = train(popsim.TensorLocationSettings().useOnChipStorage(False))
    for name, weight in on_model.state_dict().items():
        assert torch.equal(weight, off_model.state_dict()[name]), name

    on_report, off_report = on_chip.memoryReport()["ipus"], off_chip.memoryReport()["ipus"]
    for on, off in zip(on_report, off_report):
        state = on["categories"]["optimizer state"]["bytes"]
        assert state > 0 and on["off_chip"] == 0 and on["streaming_memory"] == {}
        assert off["streaming_memory"] == {"optimizer state": state}
        assert off["categories"]["optimizer state"]["bytes"] == 0
        assert on["always_live"] - off["always_live"] == state
        assert on["not_always_live"] == off["not_always_live"]

    def update_events(trace):
        return {ipu: [e for e in trace.events if e["ipu"] == ipu and e["kind"] != "host_input"
                      and e["task"] == f"U{ipu}" and e["step"] == 0] for ipu in range(4)}

    on_updates = update_events(on_chip.executionTrace())
    off_updates = update_events(off_chip.executionTrace())
    for ipu, state in enumerate(ipu["streaming_memory"]["optimizer state"]
                                for ipu in off_report):
        assert [e["kind"] for e in on_updates[ipu]] == ["update"]
        # Streamed in before the update's ops and back out after them.
        assert [e["kind"] for e in off_updates[ipu]] == ["streaming", "update", "streaming"]
        assert [e["end"] - e["start"] for e in off_updates[ipu]] == [
            streaming_cycles(state), on_updates[ipu][0]["end"] - on_updates[ipu][0]["start"],
            streaming_cycles(state)]
    assert off_chip.executionTrace().total_cycles > on_chip.executionTrace().total_cycles
    # Only updates stream; no other task changes.
    assert {e["task"][0] for e in off_chip.executionTrace().events
            if e["kind"] == "streaming"} == {"U"}


@pytest.mark.timeout(120)
def test_small_tensors_stay_on_chip():
    """With minElementsForOffChip(100), Adam's two moments of every parameter with at
    least 100 elements go off chip; the biases of 10 and the hyper-parameters stay."""
    location = popsim.TensorLocationSettings().useOnChipStorage(False).minElementsForOffChip(100)
    trainer, model = train(location, steps=1)
    def aligned(bytes_):  # the memory plan places state tensors 64-byte aligned
        return -(-bytes_ // 64) * 64

    large = [p.numel() * 4 for p in model.parameters() if p.numel() >= 100]
    assert sum(ipu["off_chip"] for ipu in trainer.memoryReport()["ipus"]) == sum(
        2 * aligned(bytes_) for bytes_ in large)
    assert all(ipu["categories"]["optimizer state"]["bytes"] > 0
               for ipu in trainer.memoryReport()["ipus"])


def test_tensor_location_errors():
    settings = popsim.TensorLocationSettings()
    with pytest.raises(popsim.OptionError,
                       match=r"^TensorLocationSettings.useOnChipStorage expects a bool, got 0\."):
        settings.useOnChipStorage(0)
    with pytest.raises(popsim.OptionError, match=r"^TensorLocationSettings.minElementsForOffChip "
                                                 r"expects a non-negative integer, got -1\."):
        settings.minElementsForOffChip(-1)
    opts = popsim.Options()
    with pytest.raises(popsim.OptionError, match=r"^TensorLocations.setOptimizerLocation expects "
                                                 r"a popsim.TensorLocationSettings, got False\."):
        opts.TensorLocations.setOptimizerLocation(False)
    for setter, what in [("setWeightLocation", "weights"),
                         ("setAccumulatorLocation", "gradient accumulators"),
                         ("setActivationLocation", "activations")]:
        with pytest.raises(popsim.OptionError,
                           match=rf"^TensorLocations.{setter}: popsim keeps {what} on chip; it "
                                 r"simulates Streaming Memory for the optimizer state only"):
            getattr(opts.TensorLocations, setter)(
                popsim.TensorLocationSettings().useOnChipStorage(False))
        getattr(opts.TensorLocations, setter)(popsim.TensorLocationSettings())  # on chip: fine


def test_settings_are_copied_and_shown():
    settings = popsim.TensorLocationSettings().useOnChipStorage(False)
    opts = popsim.Options()
    opts.TensorLocations.setOptimizerLocation(settings)
    settings.useOnChipStorage(True)
    assert opts.TensorLocations.optimizer_location.on_chip is False
    assert opts.toDict()["TensorLocations"] == {
        "optimizer_location": "TensorLocationSettings().useOnChipStorage(False)"}
    assert opts.clone().TensorLocations.optimizer_location == popsim.TensorLocationSettings(
    ).useOnChipStorage(False)
