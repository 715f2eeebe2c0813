"""Inputs and outputs that stream through IO tiles beside the compute
(Options.TensorLocations.numIOTiles, popsim.set_overlap_for_input /
set_overlap_for_output, popsim.OverlapMode), as PopTorch documents them:
same results, the transfers' bytes off the compute tiles' clock, fewer tiles
to compute on, the IO tiles' buffers in the memory report, and PopTorch's
errors for misplaced markers and missing options."""

import copy

import pytest
import torch

import popsim

OVERLAP = popsim.OverlapMode.OverlapDeviceIterationLoop
WIDTH = 4096  # an input row of 16 KiB, so its transfer outweighs the model's compute


class Projection(torch.nn.Module):
    """A wide input projected to a few values: a model bound by its host I/O."""

    def __init__(self, input_mode=OVERLAP, output_mode=OVERLAP):
        super().__init__()
        self.fc = torch.nn.Linear(WIDTH, 16)
        self.input_mode = input_mode
        self.output_mode = output_mode

    def forward(self, x):
        if self.input_mode is not None:
            x = popsim.set_overlap_for_input(x, self.input_mode)
        y = self.fc(x)
        if self.output_mode is not None:
            y = popsim.set_overlap_for_output(y, self.output_mode)
        return y


class ProjectionLoss(Projection):
    def forward(self, x, target):  # pylint: disable=arguments-differ
        x = popsim.set_overlap_for_input(x, self.input_mode)
        target = popsim.set_overlap_for_input(target, self.input_mode)
        out = self.fc(x)
        loss = torch.nn.functional.mse_loss(out, target)
        return popsim.set_overlap_for_output(out, self.output_mode), loss


def sharded(io_tiles=64, iterations=8):
    opts = popsim.Options().deviceIterations(iterations)
    opts.setExecutionStrategy(popsim.ShardedExecution())
    if io_tiles:
        opts.TensorLocations.numIOTiles(io_tiles)
    return opts


def run_inference(model, opts, rows=64):
    torch.manual_seed(1)
    x = torch.randn(rows, WIDTH)
    executor = popsim.inferenceModel(model, opts)
    return executor, executor(x), x


def test_results_are_the_same_and_only_the_clock_changes():
    torch.manual_seed(0)
    plain = Projection(None, None)
    overlapped = copy.deepcopy(plain)
    overlapped.input_mode = overlapped.output_mode = OVERLAP
    plain_run, plain_out, x = run_inference(plain, sharded(io_tiles=0))
    io_run, io_out, _ = run_inference(overlapped, sharded())
    assert torch.equal(plain_out, io_out)
    torch.testing.assert_close(io_out, overlapped(x), rtol=1e-5, atol=1e-5)
    # The bytes of each 32 KiB micro-batch cross beside the compute instead of on the
    # compute tiles, and the outputs leave beside it: at least a quarter fewer cycles.
    assert io_run.cycleCount() < 0.75 * plain_run.cycleCount()
    events = io_run.executionTrace().events
    inputs = [e for e in events if e["kind"] == "host_input" and e.get("io_tiles")]
    outputs = [e for e in events if e["kind"] == "host_output"]
    assert len(inputs) == 8 and all(e.get("io_tiles") for e in outputs) and len(outputs) == 8
    # The IO tiles' link carries a micro-batch's bytes (8 rows x 16 KiB at 7 GB/s on a
    # 1.33 GHz clock), the compute tiles only copy them from 64 IO tiles.
    micro_batch_bytes = 8 * WIDTH * 4
    assert {e["end"] - e["start"] for e in inputs} == {-(-micro_batch_bytes * 133 // 700)}
    copies = [e for e in events if e["kind"] == "stream_copy" and e["task"] == "F0"]
    assert {e["end"] - e["start"] for e in copies} >= {micro_batch_bytes // (64 * 4)}
    assert not any(io_run.executionTrace().occupies_ipu(e) for e in inputs + outputs)


def test_io_tiles_leave_fewer_tiles_to_compute_on():
    class Compute(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(4)])

        def forward(self, x):
            return self.layers(x)

    torch.manual_seed(0)
    model = Compute()
    x = torch.randn(8 * 256, 512)
    cycles = {}
    for io_tiles in (0, 192):
        executor = popsim.inferenceModel(copy.deepcopy(model), sharded(io_tiles))
        executor(x)
        cycles[io_tiles] = sum(e["end"] - e["start"] for e in executor.executionTrace().events
                               if e["kind"] == "forward")
    # 1472 tiles against 1280: the matmuls' compute grows by up to 1472 / 1280.
    assert cycles[0] < cycles[192] <= cycles[0] * 1472 / 1280 * 1.01


def test_accumulation_loop_overlap_stops_at_each_step():
    def train(mode):
        torch.manual_seed(0)
        model = ProjectionLoss(mode, mode)
        # Multibuffered (depth 2), so that the host prepares each transfer ahead and the
        # overlap decides when the bytes may cross.
        opts = sharded(iterations=4).prefetchDepth(2)
        opts.Training.gradientAccumulation(4)
        trainer = popsim.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.01))
        torch.manual_seed(2)
        # Micro-batches of 32 rows: 512 KiB, whose bytes take longer than the host's
        # part of a transfer (50,000 cycles) and than the micro-batch's compute.
        trainer(torch.randn(16 * 32, WIDTH), torch.randn(16 * 32, 16))
        return trainer, model

    inner, inner_model = train(popsim.OverlapMode.OverlapAccumulationLoop)
    outer, outer_model = train(OVERLAP)
    plain, plain_model = train(popsim.OverlapMode.NoOverlap)
    for parameter in ("fc.weight", "fc.bias"):
        assert torch.equal(inner_model.state_dict()[parameter],
                           plain_model.state_dict()[parameter])
        assert torch.equal(outer_model.state_dict()[parameter],
                           plain_model.state_dict()[parameter])
    # Across device iterations the next step's first micro-batch streams during this
    # step's update: the fastest; within the accumulation loop only, each step starts
    # by waiting for it; not overlapped, every micro-batch waits for its bytes.
    assert outer.cycleCount() < inner.cycleCount() < plain.cycleCount()


def test_the_program_and_the_memory_report_show_the_io_tiles():
    executor, _, _ = run_inference(Projection(), sharded())
    assert executor._debug_ir().splitlines()[0] == (
        f"graph(%x: f32[8,{WIDTH}] [overlap_device_iteration_loop]) {{")
    assert "[overlap_device_iteration_loop])" in executor._debug_ir().splitlines()[-2]
    ipu = executor.memoryReport()["ipus"][0]
    # Two buffers of the input (8 x 4096 floats) and of the output (8 x 16 floats).
    assert ipu["io_tiles"] == {"tiles": 64, "bytes": 2 * 8 * (WIDTH + 16) * 4,
                               "capacity": 64 * 638976}
    assert ipu["capacity"] == (1472 - 64) * 638976
    assert ipu["categories"]["prefetch buffers"]["bytes"] == 0  # the IO tiles hold them
    assert executor.executionTrace().pipeline["io_tiles"] == 64


def test_buffers_that_overflow_the_io_tiles_are_out_of_memory():
    class Wide(torch.nn.Module):
        def forward(self, x):
            return popsim.set_overlap_for_input(x, OVERLAP).sum(dim=1)

    x = torch.randn(4 * 2, 1 << 20)  # 16 MiB a micro-batch: 32 MiB of buffers
    executor = popsim.inferenceModel(Wide(), sharded(io_tiles=32, iterations=2))
    with pytest.raises(popsim.OutOfMemoryError,
                       match=r"^Out of memory on the IO tiles of IPU 0: the inputs and outputs "
                             r"that stream through them .* need 33,554,432 bytes "
                             r"\(32\.00 MiB\) but its 32 IO tiles have 20,447,232 bytes "
                             r"\(19\.50 MiB\)\. Set aside more with "
                             r"Options\.TensorLocations\.numIOTiles"):
        executor(x)


def test_num_io_tiles_is_an_even_number_from_32_to_192():
    locations = popsim.Options().TensorLocations
    for bad in (0, 30, 33, 194, 64.0, True):
        with pytest.raises(popsim.OptionError,
                           match=r"^numIOTiles must be an even number between 32 and 192\. "
                                 rf"TensorLocations\.numIOTiles got {bad!r}\."):
            locations.numIOTiles(bad)
    assert locations.numIOTiles(32).num_io_tiles == 32
    assert popsim.Options().TensorLocations.numIOTiles(192).num_io_tiles == 192


def test_overlap_needs_io_tiles_and_a_sharded_execution():
    x = torch.randn(8, WIDTH)
    with pytest.raises(popsim.OptionError,
                       match=r"^Overlapped IO is not supported with poptorch\.Pipelined"
                             r"Execution\. If you are using only one IPU, please switch to "
                             r"poptorch\.ShardedExecution\."):
        popsim.inferenceModel(Projection(), _with_io_tiles())(x)
    with pytest.raises(popsim.OptionError,
                       match=r"^No IO tiles allocated\. You must allocate at least 32 IO tiles "
                             r"using poptorch\.Options\(\)\.TensorLocations\.numIOTiles\."):
        popsim.inferenceModel(Projection(), sharded(io_tiles=0, iterations=1))(x)
    # NoOverlap asks for nothing: any strategy, no IO tiles.
    model = Projection(popsim.OverlapMode.NoOverlap, popsim.OverlapMode.NoOverlap)
    popsim.inferenceModel(model)(x)


def _with_io_tiles():
    opts = popsim.Options()
    opts.TensorLocations.numIOTiles(32)
    return opts


class Misplaced(torch.nn.Module):
    def __init__(self, case):
        super().__init__()
        self.case = case

    def forward(self, x):
        mark_in = popsim.set_overlap_for_input
        mark_out = popsim.set_overlap_for_output
        if self.case == "input used twice":
            return x + 1, mark_in(x, OVERLAP)
        if self.case == "input marker on a computed value":
            return mark_in(x + 1, OVERLAP)
        if self.case == "output returned twice":
            y = x + 1
            return y, mark_out(y, OVERLAP)
        assert self.case == "output marker on a value not returned"
        return mark_out(x + 1, OVERLAP).sum()


MISPLACED = {
    "input used twice": r"poptorch\.set_overlap_for_input must be the only op applied to an "
                        r"input\. This is not the case for input x\S* to the model\. "
                        r"popsim\.set_overlap_for_input at .*test_overlapped_io\.py:\d+ marks "
                        r"it, but the model also reads the input itself",
    "input marker on a computed value": r"poptorch\.set_overlap_for_input applied on a node "
                                        r"which is not a tensor input to the model\.",
    "output returned twice": r"poptorch\.set_overlap_for_output cannot be used with a tensor "
                             r"that is returned twice\. Please check all returned tensors "
                             r"including those nested in tuples/lists\. .* returned 2 times",
    "output marker on a value not returned": r"poptorch\.set_overlap_for_output applied on a "
                                             r"node which is not a tensor output to the model\.",
}


@pytest.mark.parametrize("case", sorted(MISPLACED))
def test_misplaced_markers_get_poptorchs_errors(case):
    executor = popsim.inferenceModel(Misplaced(case), sharded(iterations=1))
    with pytest.raises(popsim.CompilationError, match=MISPLACED[case]):
        executor(torch.ones(2, 3))


def test_markers_take_structures_and_pass_through_outside_a_model():
    x, y = torch.ones(2), torch.zeros(3)
    marked = popsim.set_overlap_for_input({"a": (x, [y])}, OVERLAP)
    assert marked["a"][0] is x and marked["a"][1][0] is y
    assert popsim.set_overlap_for_output(x, popsim.OverlapMode.NoOverlap) is x
    with pytest.raises(TypeError, match=r"^You may only set overlap for torch\.tensor inputs\. "
                                        r"<class 'int'> is not supported"):
        popsim.set_overlap_for_input((x, 3), OVERLAP)
    with pytest.raises(TypeError, match=r"^popsim\.set_overlap_for_output expects mode to be a "
                                        r"popsim\.OverlapMode, got 'overlap'\."):
        popsim.set_overlap_for_output(x, "overlap")

    class Pair(torch.nn.Module):
        def forward(self, pair):
            first, second = popsim.set_overlap_for_input(pair, OVERLAP)
            return popsim.set_overlap_for_output((first * 2, second + 1), OVERLAP)

    executor = popsim.inferenceModel(Pair(), sharded(iterations=1))
    first, second = executor((torch.ones(2, 3), torch.ones(2, 4)))
    assert torch.equal(first, torch.full((2, 3), 2.0)) and torch.equal(second, 2 * torch.ones(2, 4))
    assert executor._debug_ir().count("[overlap_device_iteration_loop]") == 4


def test_poptorch_spelling(tmp_path):
    import popsim as poptorch

    opts = poptorch.Options()
    opts.TensorLocations.numIOTiles(64)
    opts.setExecutionStrategy(poptorch.ShardedExecution())
    model = Projection(poptorch.OverlapMode.OverlapAccumulationLoop,
                       poptorch.OverlapMode.OverlapAccumulationLoop)
    executor = poptorch.inferenceModel(model, opts)
    executor(torch.randn(1, WIDTH))
    assert poptorch.enums.OverlapMode is poptorch.OverlapMode
    # An exported program keeps its overlap.
    path = str(tmp_path / "projection.popsim")
    executor.compileAndExport(path, torch.randn(1, WIDTH))
    loaded = poptorch.load(path, trusted=True)
    loaded(torch.randn(1, WIDTH))
    assert "[overlap_accumulation_loop]" in loaded._debug_ir(optimized=True)
    assert loaded.cycleCount() == executor.cycleCount()
