"""The inference executor's API: compile, destroy, introspection, PopTorch names."""

import gc
import weakref

import pytest
import torch

import popsim
import popsim as poptorch
from conftest import assert_close
from models import Function, MnistNetwork


def test_compile_then_call_and_destroy():
    model = MnistNetwork().eval()
    executor = popsim.inferenceModel(model, popsim.Options().deviceIterations(2))
    assert not executor.isCompiled()
    inputs = torch.randn(16, 1, 28, 28)
    executor.compile(inputs)
    assert executor.isCompiled()
    assert executor.compilationTime() > 0
    with torch.no_grad():
        assert_close(executor(inputs), model(inputs))
    executor.destroy()
    assert not executor.isCompiled()
    # After destroy() other shapes compile again.
    assert executor(torch.randn(4, 1, 28, 28)).shape == (4, 10)


def test_a_calls_tensors_are_freed_when_the_caller_drops_them():
    """No reference cycle holds a call's inputs or outputs: they go when the caller lets go
    of them, not when Python's garbage collector next runs (a training loop's batches and
    outputs would otherwise pile up between collections, and each call's outputs would take
    fresh pages from the OS)."""
    def outputs_and_dict(x):
        return (x * 2, [x + 1]), {"sum": x.sum()}

    inference = popsim.inferenceModel(Function(outputs_and_dict))
    inference(torch.randn(4, 3))
    gc.disable()
    try:
        inputs = torch.randn(4, 3)
        (doubled, [plus_one]), named = inference(inputs)
        held = [weakref.ref(t) for t in (inputs, doubled, plus_one, named["sum"])]
        del inputs, doubled, plus_one, named
        assert [ref() for ref in held] == [None] * len(held)
    finally:
        gc.enable()


def test_model_and_options_properties():
    model = MnistNetwork()
    opts = popsim.Options()
    executor = popsim.inferenceModel(model, opts)
    assert executor.model is model
    assert executor.options.device_iterations == 1
    # repr is the wrapped model's, with its BeginBlock annotations, as PopTorch's.
    assert repr(executor) == repr(model)
    popsim.BeginBlock(model.layer2, "B2", ipu_id=1)
    assert repr(executor) == popsim.module_repr(model)
    assert "(layer2): BeginBlock(user_id=B2, ipu_id=1)" in repr(executor)


def test_debug_ir_shows_ops_weights_and_user_lines():
    executor = popsim.inferenceModel(MnistNetwork())
    executor(torch.randn(8, 1, 28, 28))
    text = executor._debug_ir()
    assert text.startswith("graph(%x: f32[8,1,28,28]) {")
    assert "@layer3.weight: f32[256,320]" in text
    assert "= convolution(%x, @layer1.conv.weight, @layer1.conv.bias)" in text
    assert "# mnist_network.py:" in text
    assert "return (%9)" in text
    assert "reshape" in executor._debug_ir(optimized=True)


def test_memory_report_categories_add_up():
    executor = popsim.inferenceModel(MnistNetwork())
    executor(torch.randn(8, 1, 28, 28))
    report = executor.memoryReport()
    assert report["chip"] == "Mk2 (GC200)"
    (ipu,) = report["ipus"]
    assert ipu["capacity"] == 1472 * 624 * 1024
    assert sum(c["bytes"] for c in ipu["categories"].values()) == ipu["total"]
    assert ipu["always_live"] + ipu["not_always_live"] == ipu["total"]
    assert ipu["largest_tensors"][0]["description"] == "layer3.weight (weight)"


def test_cycle_count_grows_with_device_iterations():
    def cycles(iterations, prefetch_depth):
        opts = popsim.Options().deviceIterations(iterations).prefetchDepth(prefetch_depth)
        executor = popsim.inferenceModel(MnistNetwork(), opts)
        executor(torch.randn(8 * iterations, 1, 28, 28))
        return executor.cycleCount(), executor.executionTrace()

    one, _ = cycles(1, 0)
    four, _ = cycles(4, 0)
    assert 0 < one < four
    assert abs(four - 4 * one) <= 0.01 * four
    # At the default buffering depth (1) each iteration waits for its input's
    # host part, as without the buffer.
    assert cycles(4, 1)[0] == four
    # With multibuffering (depth 2), the host's part of input k (its latency)
    # runs on the link while iteration k-1 runs; the input's bytes still cross
    # on the compute tiles. Here an iteration's work (those bytes, the compute
    # and the output) takes longer than the latency, so only the first input's
    # latency is on the clock.
    prefetched, trace = cycles(4, 2)
    latencies = [e["end"] - e["start"] for e in trace.events if e["kind"] == "host_input"]
    assert latencies == [50_000] * 4
    work = one - latencies[0]
    assert work > latencies[0]
    assert prefetched == latencies[0] + 4 * work


def test_poptorch_names():
    import popsim as poptorch

    assert poptorch.PoplarExecutor is popsim.Executor
    executor = poptorch.inferenceModel(MnistNetwork(), poptorch.Options().deviceIterations(2))
    assert isinstance(executor, poptorch.PoplarExecutor)


def test_wrapping_an_executor_wraps_its_model():
    model = MnistNetwork()
    executor = popsim.inferenceModel(popsim.inferenceModel(model))
    assert executor.model is model


def test_introspection_before_compiling_is_a_clear_error():
    executor = popsim.inferenceModel(MnistNetwork())
    try:
        executor.memoryReport()
    except popsim.InputError as error:
        assert str(error) == ("memoryReport() needs a compiled model: this one has not been "
                              "compiled or has been destroyed. Call the model or compile() first.")
    else:
        raise AssertionError("expected an error")


class Named(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 2)
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, x):
        return self.linear(x) * self.scale


def test_the_executor_stands_for_the_user_model():
    """Attribute reads, state_dict(), parameters() and isinstance go to the
    wrapped model, as with PopTorch's executor."""
    model = Named()
    ipu_model = poptorch.inferenceModel(model)
    assert ipu_model.linear is model.linear
    assert torch.equal(ipu_model.scale, torch.tensor(2.0))
    assert ipu_model.state_dict().keys() == model.state_dict().keys()
    assert [p for p in ipu_model.parameters()] == [p for p in model.parameters()]
    assert isinstance(ipu_model, Named) and isinstance(ipu_model, torch.nn.Module)
    assert isinstance(ipu_model, poptorch.PoplarExecutor) and type(ipu_model) is popsim.Executor
    with pytest.raises(AttributeError, match=r"'Named' object has no attribute 'nope'"):
        ipu_model.nope


def test_state_dict_through_a_training_model_has_the_trained_weights():
    torch.manual_seed(0)
    model = Named()
    before = model.linear.weight.detach().clone()

    class WithLoss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = model

        def forward(self, x):
            return poptorch.identity_loss(self.net(x).sum(), "none")

    trainer = poptorch.trainingModel(WithLoss())
    trainer(torch.randn(4, 3))
    trained = trainer.state_dict()["net.linear.weight"]
    assert not torch.equal(trained, before)
    assert torch.equal(trained, model.linear.weight.detach())


class PicklableNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x, target):
        out = self.fc(x)
        return out, torch.nn.functional.mse_loss(out, target)


def test_pickling_a_wrapped_model_saves_the_model_it_wraps():
    """torch.save(ipu_model) saves the user's module with the device's latest
    weights; loading it needs no popsim and gives that module's class."""
    import io

    torch.manual_seed(0)
    model = PicklableNet()
    initial = model.fc.weight.detach().clone()
    trainer = popsim.trainingModel(model, popsim.Options(),
                                   torch.optim.SGD(model.parameters(), lr=0.5))
    trainer(torch.randn(8, 4), torch.randn(8, 3))
    buffer = io.BytesIO()
    torch.save(trainer, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    assert type(loaded) is PicklableNet
    trainer.copyWeightsToHost()
    assert torch.equal(loaded.fc.weight, model.fc.weight)
    assert not torch.equal(loaded.fc.weight, initial)  # the trained weights


def test_every_version_is_the_packages():
    """pyproject.toml, popsim.__version__ and the C++ package (CMakeLists.txt's project
    version, which the installed popsim/version.h and popsimConfigVersion.cmake carry)."""
    import pathlib
    import re
    root = pathlib.Path(__file__).resolve().parents[2]
    pyproject = re.search(r'^version = "([^"]+)"', (root / "pyproject.toml").read_text(),
                          re.MULTILINE).group(1)
    cmake = re.search(r"^project\(popsim VERSION ([0-9.]+) ",
                      (root / "CMakeLists.txt").read_text(), re.MULTILINE).group(1)
    assert popsim.__version__ == pyproject == cmake
