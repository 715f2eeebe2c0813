"""Errors carry their site as fields, not only in their message: an OptionError names
the option at fault in ``option`` (whether Python's setters or the C++ core raise it),
and an OutOfMemoryError has its IPU, the category that needs the most of it, the bytes
needed and available and the largest tensors, as the memory plan has them."""

import ast
import pathlib

import pytest
import torch
import torch.nn as nn

import popsim
from popsim.api.errors import OptionError

PACKAGE = pathlib.Path(popsim.__file__).parent


def test_every_option_error_popsim_raises_names_its_option():
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call)
                    and getattr(node.func, "id", getattr(node.func, "attr", None)) == "OptionError"
                    and not any(keyword.arg == "option" for keyword in node.keywords)):
                missing.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not missing, f"OptionErrors without option=: {missing}"


class TwoBlocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 8)
        self.b = nn.Linear(8, 2)

    def forward(self, x, target=None):
        with popsim.Block("A"):
            h = torch.relu(self.a(x))
        with popsim.Block("B"):
            y = self.b(h)
            return y if target is None else (y, nn.functional.mse_loss(y, target))


def pipelined():
    opts = popsim.Options()
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.Stage("A").ipu(0),
                                                        popsim.Stage("B").ipu(1)))
    return opts


def frozen_options():
    opts = popsim.Options()
    popsim.inferenceModel(nn.Linear(2, 2), opts)
    opts.deviceIterations(2)


def compile_inference(opts, batch=2):
    popsim.inferenceModel(TwoBlocks(), opts).compile(torch.randn(batch, 4))


def compile_training(opts, batch=2):
    model = TwoBlocks()
    popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=0.1)).compile(
        torch.randn(batch, 4), torch.randn(batch, 2))


def accumulating(micro_batches):
    opts = pipelined()
    opts.Training.gradientAccumulation(micro_batches)
    return opts


def unknown_block():
    opts = popsim.Options()
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.Stage("A", "C").ipu(0)))
    compile_inference(opts)


def too_few_ipus():
    opts = pipelined().deviceIterations(2)
    opts.Simulator.numIpus(1)
    compile_inference(opts, batch=4)


def anchored_gradient_of_nothing():
    opts = popsim.Options()
    opts.setExecutionStrategy(popsim.ShardedExecution(popsim.Stage("A", "B").ipu(0)))
    opts.anchorTensor("g", "Gradient___c.weight")
    compile_training(opts)


@pytest.mark.parametrize("fail,option", [
    # Python's setters.
    (lambda: popsim.Options().deviceIterations(0), "deviceIterations"),
    (lambda: popsim.Options().Training.gradientAccumulation(0), "Training.gradientAccumulation"),
    (lambda: popsim.Options().Simulator.memoryPerIpu("lots"), "Simulator.memoryPerIpu"),
    (lambda: popsim.Options().TensorLocations.numIOTiles(5), "TensorLocations.numIOTiles"),
    (lambda: popsim.Options().setAvailableMemoryProportion({"IPU0": 2.0}),
     "setAvailableMemoryProportion"),
    (lambda: popsim.Options().outputMode(popsim.OutputMode.EveryN, 0), "outputMode"),
    (lambda: popsim.Options().Precision.setPartialsType(torch.int32), "Precision.setPartialsType"),
    (lambda: popsim.Stage("A").ipu(-1), "Stage.ipu"),
    (lambda: popsim.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1, loss_scaling=0),
     "SGD.loss_scaling"),
    (frozen_options, "Options"),
    # The C++ core's, when a model compiles.
    (lambda: compile_inference(pipelined()), "deviceIterations"),
    (lambda: compile_training(accumulating(2)), "Training.gradientAccumulation"),
    (too_few_ipus, "Simulator.numIpus"),
    (unknown_block, "setExecutionStrategy"),
    (anchored_gradient_of_nothing, "anchorTensor"),
], ids=lambda value: value if isinstance(value, str) else "")
def test_option_errors_name_their_option(fail, option):
    with pytest.raises(OptionError) as error:
        fail()
    assert error.value.option == option, str(error.value)
    assert (error.value.ipu, error.value.node) == (None, None)


def small_ipu_options():
    opts = pipelined().deviceIterations(2)
    opts.Simulator.memoryPerIpu("48KiB")
    return opts


class Wide(nn.Module):
    """A wide first block, so IPU 0 runs out while IPU 1 fits."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 192)
        self.b = nn.Linear(192, 2)

    def forward(self, x):
        with popsim.Block("A"):
            h = torch.relu(self.a(x))
        with popsim.Block("B"):
            return self.b(h)


def test_out_of_memory_error_has_the_ipu_category_bytes_and_largest_tensors():
    x = torch.randn(4, 64)
    with pytest.raises(popsim.OutOfMemoryError) as raised:
        popsim.inferenceModel(Wide(), small_ipu_options()).compile(x)
    error = raised.value
    # The same program compiled cost-only, over capacity: the error's fields are its
    # memory plan's.
    sized = small_ipu_options()
    sized.Simulator.costOnly().allowOverCapacity()
    model = popsim.inferenceModel(Wide(), sized)
    model.compile(x)
    ipu = model.memoryReport()["ipus"][error.ipu]
    assert error.ipu == 0
    assert f"Out of memory on IPU {error.ipu}:" in str(error)
    assert error.required_bytes == ipu["total"] > error.capacity_bytes == ipu["capacity"]
    assert error.capacity_bytes == 48 * 1024
    categories = ipu["categories"]
    assert error.category == max(categories, key=lambda name: categories[name]["bytes"])
    assert error.largest_tensors == ipu["largest_tensors"]
    assert error.largest_tensors[0]["description"] == "a.weight (weight)"
    assert error.largest_tensors[0]["bytes"] == 64 * 192 * 4
    assert error.option is None


def test_io_tiles_out_of_memory_names_them_as_the_category():
    class Streamed(nn.Module):
        def forward(self, x):
            return popsim.set_overlap_for_input(
                x, popsim.OverlapMode.OverlapDeviceIterationLoop).sum(dim=1)

    opts = popsim.Options().deviceIterations(2)
    opts.TensorLocations.numIOTiles(32)
    opts.setExecutionStrategy(popsim.ShardedExecution())
    with pytest.raises(popsim.OutOfMemoryError) as raised:
        popsim.inferenceModel(Streamed(), opts).compile(torch.randn(8, 1 << 20))
    error = raised.value
    assert (error.ipu, error.category) == (0, "IO tiles")
    assert error.required_bytes == 2 * 4 * (1 << 20) * 4  # two buffers of a micro-batch
    assert error.capacity_bytes == 20_447_232  # 32 tiles of a Mk2's 624 KiB
