"""PopTorch's model-side helpers, checked against their documented
behaviour and eager PyTorch: dynamic_slice and dynamic_update with a start
computed on the device, serializedMatMul, for_loop, cond, nop,
ipu_print_tensor (what the device prints, gradients included), custom_op's
refusal, and the block helpers Block.start, BeginBlock on a function,
removeBlocks and module_repr."""

import contextlib
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import popsim
from models import Function, assert_sgd_steps_match_eager


def test_dynamic_slice_follows_a_start_that_changes_from_call_to_call():
    def window(x, start):
        return popsim.dynamic_slice(x, 1, start, 3, 2)

    model = popsim.inferenceModel(Function(window))
    x = torch.randn(2, 9)
    for start in (0, 2, 4):
        start = torch.tensor([start])
        torch.testing.assert_close(model(x, start), x[:, start.item():start.item() + 3:2])
    with pytest.raises(popsim.ExecutionError, match=r"index 9 .* out of range for a dimension "
                                                    r"of size 9"):
        model(x, torch.tensor([7]))


class Writer(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.register_buffer("start", torch.tensor([1]))

    def forward(self, x, target):
        canvas = torch.zeros(x.shape[0], 5, dtype=x.dtype)
        out = popsim.dynamic_update(canvas, self.linear(x), 1, self.start, 2) + x.sum(1, True)
        return out, F.mse_loss(out, target)


def test_dynamic_update_writes_and_trains_as_eager():
    torch.manual_seed(0)
    batches = [(torch.randn(3, 4), torch.randn(3, 5)) for _ in range(3)]
    assert_sgd_steps_match_eager(Writer, batches)


def test_the_start_of_the_compiling_call_is_data_not_a_constant():
    """The call that compiles may hold any start, even one outside the tensor:
    the start is data of the program, never evaluated while tracing; a later
    call with a start inside gives eager's slice and update, and one outside
    stops with an ExecutionError."""
    def window(x, start):
        return (popsim.dynamic_slice(x, 0, start, 2, 1) * 2,
                popsim.dynamic_update(x, torch.ones(2, 3), -2, start, 2))

    model = popsim.inferenceModel(Function(window))
    model.compile(torch.zeros(4, 3), torch.tensor([7]))
    x = torch.arange(12.0).view(4, 3)
    for start in (0, 1, 2):
        start = torch.tensor([start])
        expected = window(x, start)
        for actual, want in zip(model(x, start), expected):
            torch.testing.assert_close(actual, want)
    with pytest.raises(popsim.ExecutionError, match=r"out of range for a dimension of size 4"):
        model(x, torch.tensor([3]))


class TensorBoundSlices(nn.Module):
    """Slices whose bounds are one tensor of the model's data plus constants, as PopTorch
    models write them (t[e : e + n : s]), and a narrow from such a start: a constant length, a
    start that is data."""

    def forward(self, t, e):
        e32 = e.to(torch.int32)
        return (t[e:e + 4:2], t[:, e32 - 3 + 1:e32 + 2], t[(e + 3 - 10 + 3):e - 2],
                t.narrow(1, e.view(()), 3))


def test_tensor_bound_slices_follow_the_start_from_call_to_call():
    model = popsim.inferenceModel(TensorBoundSlices())
    model.compile(torch.zeros(10, 10), torch.tensor([7]))  # the start is data, never traced
    t = torch.arange(100.0).view(10, 10)
    for start in (4, 5, 6):
        e = torch.tensor([start])
        for actual, expected in zip(model(t, e), TensorBoundSlices()(t, e)):
            assert torch.equal(actual, expected)
    with pytest.raises(popsim.ExecutionError, match=r"index_select at .*test_poptorch_helpers.py"
                                                    r":\d+ .*index 10 .* out of range for a "
                                                    r"dimension of size 10"):
        model(t, torch.tensor([8]))


class SliceByTensorNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(6, 6)

    def forward(self, x, e, target):
        out = self.linear(x)[:, e + 1:e + 4]
        return out, F.mse_loss(out, target)


def test_tensor_bound_slices_train_as_eager():
    torch.manual_seed(0)
    batches = [(torch.randn(3, 6), torch.tensor([start]), torch.randn(3, 3))
               for start in (0, 2, 1)]
    assert_sgd_steps_match_eager(SliceByTensorNet, batches)


@pytest.mark.parametrize("slicing,message", [
    (lambda t, e: t[e:e], r"^The start and end of a slice must be different\. The slice at "
                          r".*test_poptorch_helpers.py:\d+ has the same tensor as its start and "
                          r"end"),
    (lambda t, e: t[e:e - 2], r"^Taking a slice of a tensor with the end less than the start is "
                              r"not supported\. The slice at .* ends 2 before it starts"),
    (lambda t, e: t[e:2 * e], r"^The size of the sliced tensor must be a constant for each "
                              r"execution of the model when running on the IPU\. The slice at .* "
                              r"has bounds computed from different tensors"),
    (lambda t, e: t[1:e], r"has its end computed from a tensor at runtime and its start from "
                          r"constants or shapes, so its length would change with the data\. "
                          r"Write the slice as t\[e \+ a : e \+ b\]"),
    (lambda t, e: t[(e + 0.5).int():e + 2], r"In this case, there is a float added to the slice "
                                            r"indices meaning it may change between runs\."),
    (lambda t, e: t.clone()[e:e + 2].add_(1), r"is written into; popsim reads such a slice as a "
                                              r"copy .* Use popsim\.dynamic_update"),
    (lambda t, e: t.clone().narrow(0, e.view(()), 2).mul_(0), r"is written into"),
])
def test_tensor_bound_slices_of_varying_length_or_written_into_are_refused(slicing, message):
    with pytest.raises(popsim.CompilationError, match=message):
        popsim.inferenceModel(Function(slicing))(torch.arange(8.0), torch.tensor([3]))


def test_slices_bounded_by_shapes_stay_views():
    """Bounds computed from shapes are constants: the slice is a view a write goes through."""
    def halve(t):
        t = t.clone()
        t[:t.shape[0] // 2] += 1
        return t

    model = popsim.inferenceModel(Function(halve))
    assert torch.equal(model(torch.zeros(6)), halve(torch.zeros(6)))


def test_dynamic_helpers_name_bad_arguments():
    with pytest.raises(TypeError, match=r"popsim.dynamic_slice expects dim in \[-2, 1\] for a "
                                        r"tensor of 2 dimensions, got 2"):
        popsim.dynamic_slice(torch.zeros(4, 3), 2, torch.tensor([0]), 2, 1)
    with pytest.raises(TypeError, match=r"popsim.dynamic_slice: size 5 is larger than the "
                                        r"tensor's dimension 0 \(4 elements\)"):
        popsim.dynamic_slice(torch.zeros(4, 3), 0, torch.tensor([0]), 5, 1)
    with pytest.raises(TypeError, match=r"^The start and end of a slice must be different\. "
                                        r"popsim.dynamic_slice expects size to be an int >= 1"):
        popsim.dynamic_slice(torch.zeros(4, 3), 0, torch.tensor([0]), 0, 1)
    with pytest.raises(TypeError, match=r"^Taking a slice of a tensor with the end less than the "
                                        r"start is not supported\. .* got -2"):
        popsim.dynamic_slice(torch.zeros(4, 3), 0, torch.tensor([0]), -2, 1)
    with pytest.raises(TypeError, match=r"popsim.dynamic_slice expects start to be an integer "
                                        r"tensor with one element"):
        popsim.dynamic_slice(torch.zeros(4), 0, torch.tensor([0, 1]), 2, 1)
    with pytest.raises(TypeError, match=r"popsim.dynamic_update: src has 3 elements along dim "
                                        r"0, but size is 2"):
        popsim.dynamic_update(torch.zeros(4), torch.zeros(3), 0, torch.tensor(0), 2)


@pytest.mark.parametrize("mode", list(popsim.MatMulSerializationMode))
def test_serialized_matmul_splits_the_matmul_and_keeps_its_result(mode):
    lhs, rhs = torch.randn(2, 6, 8), torch.randn(8, 4)

    def product(a, b):
        return popsim.serializedMatMul(a, b, mode, 2)

    model = popsim.inferenceModel(Function(product))
    torch.testing.assert_close(model(lhs, rhs), lhs @ rhs)
    matmuls = model._debug_ir(optimized=True).count("matmul")
    assert matmuls == (1 if mode == popsim.MatMulSerializationMode.Disabled else 2)
    with pytest.raises(ValueError, match=r"factor 3 does not divide"):
        popsim.serializedMatMul(lhs, rhs, popsim.MatMulSerializationMode.ReducingDim, 3)


def test_for_loop_runs_its_body_count_times():
    def accumulate(x, weights):
        total, step = popsim.for_loop(3, lambda t, s: (t + s * weights, s * 2.0),
                                      [torch.zeros_like(x), x])
        return total

    model = popsim.inferenceModel(Function(accumulate))
    x, weights = torch.randn(2, 3), torch.randn(3)
    torch.testing.assert_close(model(x, weights), accumulate(x, weights))
    torch.testing.assert_close(model(x, weights), x * weights * 7.0)
    with pytest.raises(TypeError, match=r"the body must return tensors like its inputs"):
        popsim.for_loop(1, lambda t: t.sum(), [torch.zeros(2)])


def test_cond_picks_the_branch_on_the_device_each_call():
    def branch(x, flag):
        return popsim.cond(flag, lambda t: t * 2.0, [x], lambda t: t - 1.0, [x])[0]

    model = popsim.inferenceModel(Function(branch))
    x = torch.randn(3)
    torch.testing.assert_close(model(x, torch.tensor([True])), x * 2.0)
    torch.testing.assert_close(model(x, torch.tensor([False])), x - 1.0)
    # Eagerly only the branch taken runs, as in PopTorch.
    assert popsim.cond(torch.tensor(False), lambda: 1 / 0, [], lambda: torch.ones(1), [])[0] == 1


def test_nop_is_the_identity_and_custom_op_is_refused_with_the_reason():
    x = torch.randn(3)
    torch.testing.assert_close(popsim.inferenceModel(Function(popsim.nop))(x), x)
    with pytest.raises(popsim.UnsupportedOperationError,
                       match=r"custom op 'LeakyRelu' \(domain 'custom.ops', version 1\) is "
                             r"Poplar/PopART code"):
        popsim.custom_op([x], "LeakyRelu", "custom.ops", 1, example_outputs=[x])


class Started(nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.second = nn.Linear(3, 3), nn.Linear(3, 3)
        self.head = popsim.BeginBlock(lambda t: t * 2.0, "B2", ipu_id=1)

    def forward(self, x):
        popsim.Block.start("B0", ipu_id=0)
        x = self.first(x)
        popsim.Block.start("B1", ipu_id=1)
        return self.head(self.second(x))


def test_block_start_and_begin_block_on_a_function_split_the_model():
    host = Started()
    model = popsim.inferenceModel(host, popsim.Options().deviceIterations(2))
    x = torch.randn(4, 3)
    torch.testing.assert_close(model(x), host(x))
    ipus = model.memoryReport()["ipus"]
    assert len(ipus) == 2 and all(ipu["total"] > 0 for ipu in ipus)


def test_remove_blocks_and_module_repr():
    network = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 1)))
    popsim.BeginBlock(network[1], "B1", ipu_id=1)
    shown = popsim.module_repr(network)
    assert "(1): BeginBlock(user_id=B1, ipu_id=1) Sequential(" in shown
    assert popsim.module_repr(network[1]).startswith("BeginBlock(user_id=B1, ipu_id=1) Sequential(")
    popsim.removeBlocks(network)
    assert popsim.module_repr(network) == repr(network)
    model = popsim.inferenceModel(network)
    model(torch.randn(2, 2))
    assert len(model.memoryReport()["ipus"]) == 1
    popsim.BeginBlock(network[1], "again")  # no longer annotated: allowed again


class Printing(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(2, 2)

    def forward(self, x):
        h = popsim.ipu_print_tensor(self.linear(x), "h")
        return popsim.identity_loss((h ** 2).sum(), "none")


def test_ipu_print_tensor_prints_on_each_run_and_its_gradient_in_training(capfd):
    doubled = popsim.inferenceModel(
        Function(lambda x: popsim.ipu_print_tensor(x * 2, "doubled", separator=" ")),
        popsim.Options().deviceIterations(2))
    x = torch.tensor([[1.0, -2.5], [3.25, 40.0]])
    torch.testing.assert_close(doubled(x), x * 2)
    printed = capfd.readouterr().err  # on stderr, where Poplar prints
    # each micro-batch of one row, as the device sees it
    assert printed == ("doubled: (\n ( 2.000 -5.000)\n)\n"
                       "doubled: (\n ( 6.50 80.00)\n)\n")

    model = Printing()
    with torch.no_grad():
        model.linear.weight.copy_(torch.eye(2))
        model.linear.bias.zero_()
    trainer = popsim.trainingModel(model, None, torch.optim.SGD(model.parameters(), lr=0.0))
    trainer(torch.tensor([[1.0, 2.0]]))
    printed = capfd.readouterr().err
    assert printed == "h: (\n (1.000, 2.000)\n)\nh_gradient: (\n (2.000, 4.000)\n)\n"
    # Outside a compiled model the helper is the identity and prints nothing.
    assert torch.equal(popsim.ipu_print_tensor(x, "eager"), x)
    assert capfd.readouterr() == ("", "")


class TwoBranches(torch.nn.Module):
    """Two convolutions of one input in a MultiConv block built by `multi_conv`."""

    def __init__(self, multi_conv):
        super().__init__()
        self.a = torch.nn.Conv2d(16, 64, 3, padding=1)
        self.b = torch.nn.Conv2d(16, 64, 3, padding=1)
        self.multi_conv = multi_conv

    def forward(self, x):
        with self.multi_conv():
            y, z = self.a(x), self.b(x)
        return y + z


def conv_passes(multi_conv):
    torch.manual_seed(0)
    opts = popsim.Options()
    opts.Simulator.memoryPerIpu("64MiB")
    model = popsim.inferenceModel(TwoBranches(multi_conv), opts)
    output = model(torch.ones(8, 16, 64, 64))
    return output, [step.passes for step in model._executable.program()
                    if step.op == "convolution"]


def test_multi_conv_bounds_each_convolution_by_its_proportion():
    plain, passes = conv_passes(popsim.MultiConv)
    assert passes == [1, 1]
    # 1% of 64 MiB is far below the first convolution's temporaries: it runs
    # in passes; the second keeps 60%. The numbers do not change.
    bounded, passes = conv_passes(
        lambda: popsim.MultiConv().availableMemoryProportions((0.01, 0.6))
        .planType(popsim.MultiConvPlanType.Serial).perConvReservedTiles(8).cycleBackOff(0.3)
        .partialsTypes([torch.float, popsim.MultiConvPartialsType.Float])
        .enableConvDithering(True))
    assert passes[0] > 1 and passes[1] == 1
    assert torch.equal(bounded, plain)
    _, passes = conv_passes(lambda: popsim.MultiConv().availableMemoryProportions(0.01))
    assert passes[0] == passes[1] > 1


def test_convolution_dithering_of_the_whole_model_is_recorded_and_changes_nothing():
    torch.manual_seed(0)
    model, x = TwoBranches(contextlib.nullcontext), torch.randn(2, 16, 16, 16)
    results = []
    for dithering in (False, True):
        opts = popsim.Options()
        assert opts.Training.setConvolutionDithering(dithering) is opts.Training
        assert opts.Training.convolution_dithering is dithering
        compiled = popsim.inferenceModel(model, opts)
        results.append((compiled(x), compiled.sizingReport().throughput,
                        [ipu.memory_bytes for ipu in compiled.sizingReport().ipus]))
        compiled.destroy()
    assert torch.equal(results[0][0], results[1][0]) and results[0][1:] == results[1][1:]
    with pytest.raises(popsim.OptionError, match=r"^Training\.setConvolutionDithering expects "
                                                 r"True or False, got 1\."):
        popsim.Options().Training.setConvolutionDithering(1)


def test_multi_conv_errors_name_the_problem():
    with pytest.raises(popsim.OptionError, match=r"popsim\.MultiConv: 3 "
                                                 r"availableMemoryProportions for 2 convolutions"):
        conv_passes(lambda: popsim.MultiConv().availableMemoryProportions((0.1, 0.2, 0.3)))
    with pytest.raises(popsim.OptionError, match=r"cannot be nested"):
        with popsim.MultiConv():
            with popsim.MultiConv():
                pass
    with pytest.raises(popsim.OptionError, match=r"its block ran no convolution"):
        with popsim.MultiConv():
            torch.relu(torch.ones(2))
    with pytest.raises(popsim.OptionError, match=r"^Invalid partials types\. Expecting "
                                                 r"torch\.float or torch\.half: .* got 'half'"):
        popsim.MultiConv().partialsTypes("half")
    with pytest.raises(popsim.OptionError, match=r"^Invalid partials types.* got \[\]"):
        popsim.MultiConv().partialsTypes([])
    # PopTorch asserts the plan type's class; popsim's error is an AssertionError too.
    for plan in ("parallel", popsim.MultiConvPartialsType.Float):
        with pytest.raises(AssertionError, match=r"^Invalid plan type: MultiConv\.planType "
                                                 r"expects a popsim\.MultiConvPlanType or None, "
                                                 r"got ['<]"):
            popsim.MultiConv().planType(plan)
    with pytest.raises(popsim.OptionError) as info:
        popsim.MultiConv().planType("Parallel")
    assert isinstance(info.value, popsim.PlanTypeError)
    assert info.value.option == "MultiConv.planType"
    for bad in (lambda m: m.availableMemoryProportions(1.5),
                lambda m: m.cycleBackOff(2.0),
                lambda m: m.cycleBackOff(True)):
        with pytest.raises(popsim.OptionError, match=r"^MultiConv\.\w+ expects "):
            bad(popsim.MultiConv())
    # Whole numbers stand for floats, as Python's float annotations accept them; None resets
    # the plan type, as in PopTorch.
    popsim.MultiConv().availableMemoryProportions([1, 0.5]).cycleBackOff(0).planType(None)


def half_partials_run(multi_conv, global_half, training=False):
    """One float16 TwoBranches call (or training step): its output, or its weights after."""
    torch.manual_seed(0)
    model = TwoBranches(multi_conv).half()
    opts = popsim.Options()
    if global_half:
        opts.Precision.setPartialsType(torch.half)
    x = torch.randn(2, 16, 6, 6).half()
    if not training:
        return popsim.inferenceModel(model, opts)(x)

    class Trained(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = model

        def forward(self, x):
            out = self.net(x)
            return out, popsim.identity_loss((out.float() ** 2).mean(), "none")

    trainer = popsim.trainingModel(Trained(), opts, torch.optim.SGD(model.parameters(), lr=0.1))
    trainer(x)
    trainer.copyWeightsToHost()
    return torch.cat([p.detach().float().flatten() for p in model.parameters()])


@pytest.mark.parametrize("training", [False, True])
def test_multi_conv_partials_types_set_each_convolutions_partials(training):
    """MultiConv.partialsTypes(torch.half) sums its convolutions (and their gradients) in
    float16 partials as Precision.setPartialsType(torch.half) does, bit for bit; torch.float
    keeps float32 partials under a model-wide torch.half; a list sets each convolution's."""
    def run(types=None, global_half=False):
        make = popsim.MultiConv if types is None else (
            lambda: popsim.MultiConv().partialsTypes(types))
        return half_partials_run(make, global_half, training)

    float32, float16 = run(), run(global_half=True)
    assert not torch.equal(float32, float16)  # the partials change the numbers here
    assert torch.equal(run(torch.half), float16)
    assert torch.equal(run(popsim.MultiConvPartialsType.Half), float16)
    assert torch.equal(run(torch.float, global_half=True), float32)
    mixed = run([torch.half, torch.float])
    assert not torch.equal(mixed, float16) and not torch.equal(mixed, float32)
    assert torch.equal(mixed, run([torch.half, torch.float], global_half=True))


def test_multi_conv_counts_only_its_own_threads_convolutions():
    import threading

    other = threading.Thread(target=lambda: torch.nn.functional.conv2d(
        torch.ones(1, 1, 3, 3), torch.ones(1, 1, 1, 1)))
    with popsim.MultiConv().availableMemoryProportions((0.3, 0.4)):
        other.start()
        other.join()
        torch.nn.functional.conv2d(torch.ones(1, 1, 3, 3), torch.ones(1, 1, 1, 1))
        torch.nn.functional.conv2d(torch.ones(1, 1, 3, 3), torch.ones(1, 1, 1, 1))


@pytest.mark.parametrize("call,message", [
    (lambda x: popsim.dynamic_slice(x, 0, 3, 2, 1), "dynamic_slice expects start to be a "
                                                      "torch.Tensor, got int"),
    (lambda x: popsim.dynamic_slice(x, 0, torch.tensor([3]), 2.5, 1),
     r"dynamic_slice expects size to be an int >= 1 \(a constant of the compiled program\), got "
     r"2\.5"),
    (lambda x: popsim.for_loop(2.5, lambda a: [a * 2], [x]), "for_loop expects count to be an "
                                                              "int >= 0"),
    (lambda x: popsim.for_loop(2, lambda a, b: [a * b, b], [x, 5]),
     r"expects inputs\[1\] to be a torch.Tensor, got int \(Object contained in list at index 1 "
     r"is not torch.tensor\)"),
    (lambda x: popsim.for_loop(2, lambda a: [a * 2], x), r"\(Object is not list\)"),
])
def test_helper_argument_errors_are_popsim_errors_and_type_errors(call, message):
    """PopTorch code catches poptorch.Error (or ValueError, which PopTorch raises for for_loop's
    inputs); Python code catches TypeError: all work."""
    class Model(torch.nn.Module):
        def forward(self, x):
            return call(x)

    with pytest.raises(popsim.ArgumentError, match=message) as raised:
        popsim.inferenceModel(Model())(torch.arange(10.0))
    assert isinstance(raised.value, popsim.Error) and isinstance(raised.value, TypeError)
    assert isinstance(raised.value, ValueError)


def test_testing_allclose_compares_structure_and_values_of_a_wrapped_models_outputs():
    """poptorch.testing.allclose, as ports of PopTorch's tests call it on a model's
    (hidden, output) tuples: the structure must match and each tensor be close."""
    lstm = nn.LSTM(3, 4, batch_first=True)
    x = torch.randn(2, 5, 3)
    eager = lstm(x)
    ipu = popsim.inferenceModel(lstm)(x)
    assert popsim.testing.allclose(eager, ipu)
    assert not popsim.testing.allclose(eager, (ipu[0] + 1e-3, ipu[1]))
    assert not popsim.testing.allclose(eager, list(ipu))  # a list is not the tuple expected
    assert not popsim.testing.allclose(eager, ipu[:1])
    assert popsim.testing.allclose([torch.ones(2)], [torch.ones(2) + 1e-3], atol=1e-2)
    with pytest.raises(popsim.ArgumentError, match="expected holds int 3"):
        popsim.testing.allclose(3, 3)


def test_wrapping_something_other_than_a_module_is_an_argument_error():
    with pytest.raises(popsim.ArgumentError, match="popsim wraps torch.nn.Module instances, got "
                       "int"):
        popsim.inferenceModel(3)


def test_block_annotations_show_in_module_repr_through_copies_and_saving(tmp_path):
    """module_repr of an annotated module starts with its annotation, in
    PopTorch's text, in copies and in a model saved and loaded again."""
    first = nn.Sequential(nn.Conv2d(4, 8, 3), nn.ReLU())
    second = nn.Sequential(nn.Conv2d(8, 4, 3), nn.ReLU())
    popsim.BeginBlock(first, user_id=1, ipu_id=1)
    popsim.BeginBlock(second, user_id=2, ipu_id=2)
    model = nn.Sequential(first, second)
    path = tmp_path / "model.pt"
    torch.save(model, path)
    for shown in (model, copy.copy(model), copy.deepcopy(model), torch.load(path)):
        assert popsim.module_repr(shown[0]).startswith("BeginBlock(user_id=1, ipu_id=1) Sequential(")
        assert "(1): BeginBlock(user_id=2, ipu_id=2) Sequential(" in popsim.module_repr(shown)
