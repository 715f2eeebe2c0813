"""Tensor locations: optimizer state, weights, gradient accumulators and stashed
activations in Streaming Memory, off chip."""

import math

import pytest
import torch

import popsim
from conftest import aligned
from models import BlockedMnistNetwork, BlockedWithLoss

G = 8
FOUR = [popsim.Stage(f"B{i}").ipu(i - 1) for i in range(1, 5)]


OFF_CHIP = popsim.TensorLocationSettings().useOnChipStorage(False)


def train(location=None, steps=3, setter="setOptimizerLocation", io_tiles=0):
    torch.manual_seed(0)
    opts = popsim.Options().deviceIterations(2)
    if io_tiles:
        opts.TensorLocations.numIOTiles(io_tiles)
    opts.Training.gradientAccumulation(G)
    opts.setExecutionStrategy(popsim.PipelinedExecution(*FOUR))
    opts.Simulator.threadsPerIpu(1)
    if location is not None:
        getattr(opts.TensorLocations, setter)(location)
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
    off_chip, off_model = train(OFF_CHIP)
    for name, weight in on_model.state_dict().items():
        assert torch.equal(weight, off_model.state_dict()[name]), name

    on_report, off_report = on_chip.memoryReport()["ipus"], off_chip.memoryReport()["ipus"]
    for on, off in zip(on_report, off_report):
        state = on["categories"]["optimizer state"]["bytes"]
        assert state > 0 and on["off_chip"] == 0 and on["streaming_memory"] == {}
        assert off["streaming_memory"] == {"optimizer state": state}
        assert off["categories"]["optimizer state"]["bytes"] == 0
        assert on["always_live"] - off["always_live"] == state
        # Each Adam op streams in its own parameter's state, while no activation is
        # live (the update comes after every micro-batch), so it fits in the
        # activation arena's free space and the peak drops by the whole state.
        assert off["categories"]["streamed in"]["bytes"] == 0
        assert on["total"] - off["total"] == state

    def update_events(trace):
        return {ipu: [e for e in trace.events if e["ipu"] == ipu and e["kind"] != "host_input"
                      and e["task"] == f"U{ipu}" and e["step"] == 0] for ipu in range(4)}

    on_updates = update_events(on_chip.executionTrace())
    off_updates = update_events(off_chip.executionTrace())
    for ipu, state in enumerate(ipu["streaming_memory"]["optimizer state"]
                                for ipu in off_report):
        assert [e["kind"] for e in on_updates[ipu]] == ["update"]
        # Streamed in before the update's ops and back out after them, one transfer
        # per op (each pays the latency; TrainingExecutableTest pins the sums), so at
        # least all of the state's bytes in and all but the hyper-parameters (one
        # 64-byte slot, read, never written) out.
        assert [e["kind"] for e in off_updates[ipu]] == ["streaming", "update", "streaming"]
        cycles = [e["end"] - e["start"] for e in off_updates[ipu]]
        assert cycles[1] == on_updates[ipu][0]["end"] - on_updates[ipu][0]["start"]
        assert cycles[0] > streaming_cycles(state) and cycles[2] > streaming_cycles(state - 64)
        assert cycles[2] < cycles[0]
    assert off_chip.executionTrace().total_cycles > on_chip.executionTrace().total_cycles
    # Only updates stream; no other task changes.
    assert {e["task"][0] for e in off_chip.executionTrace().events
            if e["kind"] == "streaming"} == {"U"}


def task_events(trace, ipu, task, micro_batch):
    """The kinds and cycles of one task run in the first step (its host transfers aside)."""
    return [(e["kind"], e["end"] - e["start"]) for e in trace.events
            if e["ipu"] == ipu and e["task"] == task and e["micro_batch"] == micro_batch
            and e["step"] == 0 and e["kind"] not in ("host_input", "host_output")]


def streamed(events):
    """Cycles streamed in before the task's ops and out after them (0: none)."""
    kinds = [kind for kind, _ in events]
    work = next(i for i, kind in enumerate(kinds)
                if kind not in ("streaming", "copy", "host_input", "stream_copy"))
    before = sum(c for k, c in events[:work] if k == "streaming")
    after = sum(c for k, c in events[work + 1:] if k == "streaming")
    return before, after


@pytest.fixture(scope="module")
def on_chip_run():
    return train(steps=1)


def check_moved_off_chip(on_trainer, off_trainer, on_model, off_model, category):
    """Same weights; `category` leaves each IPU for Streaming Memory; the call is slower.
    Returns each IPU's bytes moved."""
    for name, weight in on_model.state_dict().items():
        assert torch.equal(weight, off_model.state_dict()[name]), name
    moved = []
    for on, off in zip(on_trainer.memoryReport()["ipus"], off_trainer.memoryReport()["ipus"]):
        bytes_ = on["categories"][category]["bytes"]
        assert off["categories"][category]["bytes"] == 0
        assert off["streaming_memory"] == ({category: bytes_} if bytes_ else {})
        moved.append(bytes_)
    assert (off_trainer.executionTrace().total_cycles
            > on_trainer.executionTrace().total_cycles)
    return moved


@pytest.mark.timeout(120)
def test_offloaded_weights_stream_in_for_every_task_that_uses_them(on_chip_run):
    on_trainer, on_model = on_chip_run
    trainer, model = train(OFF_CHIP, steps=1, setter="setWeightLocation")
    weights = check_moved_off_chip(on_trainer, trainer, on_model, model, "weights")
    trace = trainer.executionTrace()
    for ipu, (on, off) in enumerate(zip(on_trainer.memoryReport()["ipus"],
                                        trainer.memoryReport()["ipus"])):
        assert weights[ipu] > 0
        assert on["always_live"] - off["always_live"] == weights[ipu]
        # Each stage has one weighted layer (a convolution or a linear layer), whose op
        # streams in its weight and bias at once.
        forward = "FB3" if ipu == 3 else f"F{ipu}"
        before, after = streamed(task_events(trace, ipu, forward, 0))
        assert after == 0 and before >= streaming_cycles(weights[ipu])
        if ipu < 3:
            assert before == streaming_cycles(weights[ipu])
        # The update's two ops (weight and bias) each read and write their own.
        before, after = streamed(task_events(trace, ipu, f"U{ipu}", -1))
        assert before == after > streaming_cycles(weights[ipu])
        if ipu < 3:  # a backward reads weights to pass gradients on, and writes none
            before, after = streamed(task_events(trace, ipu, f"B{ipu}", 0))
            assert 0 <= before <= streaming_cycles(weights[ipu]) and after == 0


@pytest.mark.timeout(120)
def test_offloaded_accumulators_stream_around_each_accumulation(on_chip_run):
    on_trainer, on_model = on_chip_run
    trainer, model = train(OFF_CHIP, steps=1, setter="setAccumulatorLocation")
    accumulators = check_moved_off_chip(on_trainer, trainer, on_model, model,
                                        "gradient accumulators")
    trace = trainer.executionTrace()
    for ipu, bytes_ in enumerate(accumulators):
        assert bytes_ > 0
        backward = "FB3" if ipu == 3 else f"B{ipu}"
        # Each micro-batch adds its gradients in place (one op per parameter, each
        # streaming its accumulator in and out); the update reads the sums and clears
        # them.
        first = streamed(task_events(trace, ipu, backward, 0))
        assert first[0] == first[1] > streaming_cycles(bytes_)
        for micro_batch in range(1, G):
            assert streamed(task_events(trace, ipu, backward, micro_batch)) == first
        before, after = streamed(task_events(trace, ipu, f"U{ipu}", -1))
        assert before > streaming_cycles(bytes_) and after > streaming_cycles(bytes_)
        if ipu < 3:
            assert streamed(task_events(trace, ipu, f"F{ipu}", 0)) == (0, 0)


@pytest.mark.timeout(120)
def test_offloaded_activations_move_the_stash_off_chip(on_chip_run):
    on_trainer, on_model = on_chip_run
    trainer, model = train(OFF_CHIP, steps=1, setter="setActivationLocation")
    stash = check_moved_off_chip(on_trainer, trainer, on_model, model, "stash")
    assert stash[:3] == [b for b in stash[:3] if b > 0] and stash[3] == 0  # IPU 3 stashes none
    trace = trainer.executionTrace()
    for ipu in range(3):
        # The forward streams out what its backward will need; the backward streams it in.
        out = streamed(task_events(trace, ipu, f"F{ipu}", 0))
        back = streamed(task_events(trace, ipu, f"B{ipu}", 0))
        assert out[0] == 0 and out[1] > 0
        assert back == (out[1], 0)
    assert not [e for e in trace.events if e["ipu"] == 3 and e["kind"] == "streaming"]
    for on, off in zip(on_trainer.memoryReport()["ipus"], trainer.memoryReport()["ipus"]):
        assert on["always_live"] == off["always_live"]


@pytest.mark.timeout(120)
def test_small_tensors_stay_on_chip():
    """With minElementsForOffChip(100), Adam's two moments of every parameter with at
    least 100 elements go off chip; the biases of 10 and the hyper-parameters stay."""
    location = popsim.TensorLocationSettings().useOnChipStorage(False).minElementsForOffChip(100)
    trainer, model = train(location, steps=1)
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
    for setter in ("setWeightLocation", "setAccumulatorLocation", "setActivationLocation"):
        with pytest.raises(popsim.OptionError, match=rf"^TensorLocations.{setter} expects a "
                                                     r"popsim.TensorLocationSettings, got 'x'\."):
            getattr(opts.TensorLocations, setter)("x")


def test_settings_are_copied_and_shown():
    settings = popsim.TensorLocationSettings().useOnChipStorage(False)
    opts = popsim.Options()
    opts.TensorLocations.setOptimizerLocation(settings)
    settings.useOnChipStorage(True)
    assert opts.TensorLocations.optimizer_location.on_chip is False
    on_chip = "TensorLocationSettings().useOnChipStorage(True)"
    assert opts.toDict()["TensorLocations"] == {
        "optimizer_location": "TensorLocationSettings().useOnChipStorage(False)",
        "weight_location": on_chip, "accumulator_location": on_chip,
        "activation_location": on_chip, "num_io_tiles": 0}
    assert opts.clone().TensorLocations.optimizer_location == popsim.TensorLocationSettings(
    ).useOnChipStorage(False)


THROUGH_IO_TILES = (popsim.TensorLocationSettings().useOnChipStorage(False)
                    .useIOTilesToLoad(True).useIOTilesToStore(True))


@pytest.mark.timeout(120)
def test_weights_streamed_through_io_tiles_cost_the_compute_tiles_only_their_copies(
        on_chip_run):
    _, on_model = on_chip_run
    plain, plain_model = train(OFF_CHIP, steps=1, setter="setWeightLocation", io_tiles=64)
    routed, routed_model = train(THROUGH_IO_TILES, steps=1, setter="setWeightLocation",
                                 io_tiles=64)
    for name, weight in on_model.state_dict().items():
        assert torch.equal(weight, routed_model.state_dict()[name]), name
        assert torch.equal(weight, plain_model.state_dict()[name]), name
    trace = routed.executionTrace()
    streaming = [e for e in trace.events if e["kind"] == "streaming"]
    # Weights load before forward, backward and update tasks and store after updates,
    # all through the IO tiles, beside the compute; the compute tiles copy them over.
    assert streaming and all(e.get("io_tiles") for e in streaming)
    assert not any(trace.occupies_ipu(e) for e in streaming)
    copies = [e for e in trace.events if e["kind"] == "stream_copy" and e["task"][0] in "FBU"]
    assert {e["task"][0] for e in copies} == {"F", "B", "U"}

    def occupied(run, kinds):
        return sum(e["end"] - e["start"] for e in run.executionTrace().events
                   if e["kind"] in kinds and run.executionTrace().occupies_ipu(e))

    # On the compute tiles, 4 bytes per IO tile and cycle against Streaming Memory's
    # 8 GB/s and 3,000 cycles per transfer.
    assert occupied(routed, ("streaming", "stream_copy")) < 0.2 * occupied(plain, ("streaming",))
    assert trace.total_cycles < plain.executionTrace().total_cycles
    for ipu, plain_ipu in zip(routed.memoryReport()["ipus"], plain.memoryReport()["ipus"]):
        weights = plain_ipu["streaming_memory"]["weights"]
        # Two buffers of what one task loads and of what one stores: the update loads
        # and stores every weight of its IPU.
        assert 2 * 2 * weights <= ipu["io_tiles"]["bytes"] <= ipu["io_tiles"]["capacity"]
        assert ipu["streaming_memory"] == plain_ipu["streaming_memory"]


def test_io_tile_streaming_needs_io_tiles():
    with pytest.raises(popsim.OptionError,
                       match=r"^TensorLocations\.setWeightLocation: useIOTilesToLoad\(True\) "
                             r"streams the tensors through IO tiles, but none are set aside\. "
                             r"Use Options\.TensorLocations\.numIOTiles\(n\)"):
        train(THROUGH_IO_TILES, steps=1, setter="setWeightLocation")
    assert repr(THROUGH_IO_TILES) == ("TensorLocationSettings().useOnChipStorage(False)"
                                      ".useIOTilesToLoad(True).useIOTilesToStore(True)")
    with pytest.raises(popsim.OptionError, match=r"^TensorLocationSettings\.useIOTilesToStore "
                                                 r"expects a bool, got 1\."):
        popsim.TensorLocationSettings().useIOTilesToStore(1)
