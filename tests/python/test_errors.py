"""Errors users can cause, each pinned on its message."""

import inspect
import re

import pytest
import torch

import popsim
from conftest import line_in
from models import Function, MnistNetwork, WithLoss


def line_of(marker):
    """The line of this file that contains `marker`."""
    return line_in(__file__, marker)


class UsesUnsupportedOps(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = torch.special.gammainc(self.lin(x).exp(), x.exp())  # unsupported: gammainc
        return torch.special.zeta(y, 2.0)  # unsupported: zeta


def test_unsupported_ops_are_listed_with_their_source_lines_at_compile_time():
    model = popsim.inferenceModel(UsesUnsupportedOps())
    with pytest.raises(popsim.UnsupportedOperationError) as error:
        model.compile(torch.randn(2, 4))
    message = str(error.value)
    assert message.startswith(
        "Unsupported ops found in compiled model: [aten::igamma, "
        "aten::special_zeta]\n")
    assert (f"aten::igamma at {__file__}:{line_of('unsupported: gammainc')} "
            "(in forward)" in message)
    assert (f"aten::special_zeta at {__file__}:{line_of('unsupported: zeta')} "
            "(in forward)" in message)
    assert not model.isCompiled()


class UsesAnUnsupportedOpOften(torch.nn.Module):
    def forward(self, x):
        for _ in range(3):
            x = torch.special.zeta(x.tanh() + 2, 1.5)  # unsupported: zeta in a loop
        return torch.special.zeta(x, 2.0)  # unsupported: zeta once more


def test_an_unsupported_op_is_listed_once_with_its_uses_and_lines():
    with pytest.raises(popsim.UnsupportedOperationError) as error:
        popsim.inferenceModel(UsesAnUnsupportedOpOften())(torch.randn(2, 4))
    message = str(error.value)
    assert message.startswith(
        "Unsupported ops found in compiled model: [aten::special_zeta]\n")
    # the list, then one line for all four uses
    assert message.count("aten::special_zeta") == 2
    assert (f"  aten::special_zeta, 4 uses at 2 lines: "
            f"{__file__}:{line_of('unsupported: zeta in a loop')} (in forward), "
            f"{__file__}:{line_of('unsupported: zeta once more')} (in forward)\n") in message


class ShapesOfAnUnsupportedResult(torch.nn.Module):
    def forward(self, x):
        y = torch.special.zeta(x, 2.0)  # unsupported: zeta with a shape read after
        positions = torch.arange(y.shape[1])  # a tensor made from the shape
        return y.reshape(y.shape[0], -1) * 2, positions


def test_only_the_unsupported_op_is_listed_not_the_numbers_read_from_its_result():
    """The shapes the reshape and the arange read from the unsupported op's result are
    aten::Int and the size in the trace; they would have been numbers known when
    compiling, so neither they nor the arange (run then) are listed."""
    with pytest.raises(popsim.UnsupportedOperationError) as error:
        popsim.inferenceModel(ShapesOfAnUnsupportedResult())(torch.randn(2, 3, 3))
    message = str(error.value)
    assert message.startswith(
        "Unsupported ops found in compiled model: [aten::special_zeta]\n")
    assert "aten::Int" not in message and "aten::arange" not in message


class ComplexRotation(torch.nn.Module):
    """Rotary position embeddings as LLaMA's reference code writes them."""

    def __init__(self):
        super().__init__()
        angles = torch.outer(torch.arange(4.0), torch.tensor([1.0, 0.1]))
        self.register_buffer("rotation", torch.polar(torch.ones_like(angles), angles))

    def forward(self, x):
        pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))  # complex: pairs
        return torch.view_as_real(pairs * self.rotation).flatten(-2)  # complex: product


def test_complex_numbers_are_refused_with_what_to_write_instead():
    """The IPU has no complex arithmetic: a complex buffer and the complex ops are
    refused, each saying what to write with real tensors."""
    with pytest.raises(popsim.UnsupportedOperationError) as error:
        popsim.inferenceModel(ComplexRotation())(torch.randn(2, 4, 4))
    message = str(error.value)
    assert ("buffer 'rotation' is complex (torch.complex64), which the IPU does not compute "
            "with: keep its real and imaginary parts (or the cos and sin of its angles) as "
            "float tensors") in message
    assert (f"aten::view_as_complex at {__file__}:{line_of('complex: pairs')} (in forward): "
            "complex numbers, which the IPU does not compute with: write the arithmetic with "
            "real tensors (rotary embeddings: x * cos + rotate_half(x) * sin") in message


def test_fourier_transforms_are_refused_with_what_to_write_instead():
    def spectrogram(waveform):
        return torch.stft(waveform, 32, 8, window=torch.hann_window(32),
                          return_complex=True).abs() + torch.fft.rfft(waveform).abs().mean()

    with pytest.raises(popsim.UnsupportedOperationError) as error:
        popsim.inferenceModel(Function(spectrogram))(torch.randn(2, 256))
    message = str(error.value)
    assert message.startswith(
        "Unsupported ops found in compiled model: [aten::fft_rfft, aten::stft]\n")
    assert ("a Fourier transform, whose result is complex numbers, which the IPU does not "
            "compute with: compute spectrograms on the host (in the DataLoader's workers) "
            "before the model, or as a Conv1d whose fixed weights are the windowed cosine and "
            "sine rows of the transform (the real and imaginary parts), from which magnitudes "
            "follow as sqrt(re^2 + im^2)") in message


def _derivatives(call):
    return Function(lambda x: torch.cat([g.flatten() for g in call(x)]))


def test_torch_gradient_refuses_coordinates_of_another_length():
    """Coordinates as long as their dimension, or popsim says which (eager broadcasts
    them, or fails in the middle of its arithmetic); eager's own checks of edge_order and
    of a dimension's size reach the user as eager raises them."""
    with pytest.raises(popsim.UnsupportedOperationError) as error:
        popsim.inferenceModel(_derivatives(
            lambda x: torch.gradient(x, spacing=(torch.arange(3.0),), dim=0)))(torch.randn(4, 2))
    assert ("torch.gradient with coordinates of f32[3] for dimension 0 of size 4 (each is a "
            "1-D tensor of the dimension's size)") in str(error.value)
    with pytest.raises(RuntimeError, match="only supports edge_order=1 and edge_order=2"):
        popsim.inferenceModel(_derivatives(lambda x: torch.gradient(x, edge_order=3)))(
            torch.randn(4, 5))
    with pytest.raises(RuntimeError, match="each dimension size to be at least edge_order"):
        popsim.inferenceModel(_derivatives(lambda x: torch.gradient(x, dim=1, edge_order=2)))(
            torch.randn(4, 2))


def test_mvlgamma_checks_its_domain_when_it_runs():
    """Every element above (p - 1) / 2, or the run stops naming the element, as eager
    refuses such inputs (its message names no element)."""
    model = popsim.inferenceModel(Function(lambda x: torch.mvlgamma(x, 4)))
    model(torch.full((2, 3), 1.6))
    with pytest.raises(popsim.ExecutionError, match=r"mvlgamma: every element must be greater "
                                                     r"than \(p - 1\) / 2 = 1\.5 \(p = 4\): "
                                                     r"element 4 is 1\.5"):
        model(torch.tensor([[1.6, 1.7, 2.0], [3.0, 1.5, 2.0]]))


def test_polygamma_of_an_order_beyond_popsims_is_refused_with_the_orders_it_computes():
    with pytest.raises(popsim.UnsupportedOperationError,
                       match=r"polygamma of order n = 60 \(popsim computes orders 0 to 59\)"):
        popsim.inferenceModel(Function(lambda x: torch.polygamma(60, x)))(torch.rand(3) + 1)


def test_histc_between_the_data_extremes_checks_they_are_finite_when_it_runs():
    """histc with min == max spans the data, so an infinity or a NaN stops the run naming
    the element (eager: "range of [1, inf] is not finite"); with min and max given, the
    elements outside are not counted. Training through histc is refused, as in eager."""
    model = popsim.inferenceModel(Function(lambda x: torch.histc(x, 4)))
    model(torch.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(popsim.ExecutionError, match=r"histc with min == max \(the default\) "
                                                     r"counts between the input's smallest and "
                                                     r"largest values, so every element must be "
                                                     r"finite; pass min and max to count the "
                                                     r"finite elements between them: element 2 "
                                                     r"is inf"):
        model(torch.tensor([1.0, 2.0, float("inf")]))
    ranged = popsim.inferenceModel(Function(lambda x: torch.histc(x, 4, 0.0, 4.0)))
    assert ranged(torch.tensor([1.0, 2.0, float("inf")])).tolist() == [0.0, 1.0, 1.0, 0.0]


def test_an_orthogonal_polynomials_degree_computed_when_the_model_runs_is_refused():
    """One degree per op: a tensor of degrees the model receives is refused with the reason
    (a number or a 0-d tensor written in the model compiles)."""
    with pytest.raises(popsim.UnsupportedOperationError,
                       match=r"chebyshev_polynomial_t with the degree n as a tensor of several "
                             r"values, or computed when the model runs; popsim takes one degree "
                             r"per op \(a number or a 0-d tensor written in the model\)"):
        popsim.inferenceModel(Function(torch.special.chebyshev_polynomial_t))(
            torch.rand(3), torch.tensor([2, 3, 4]))


@pytest.mark.parametrize("op", ["take", "put"])
def test_take_and_put_name_an_index_out_of_range_as_the_model_gave_it(op):
    """Indices count from either end; one beyond stops the run naming the op and the
    index before it is wrapped (-13, not -1), as eager raises for it."""
    def function(x, i):
        return torch.take(x, i) if op == "take" else x.put(i, torch.ones(2))
    model = popsim.inferenceModel(Function(function))
    x = torch.randn(3, 4)
    index = torch.tensor([0, -12])
    torch.testing.assert_close(model(x, index), function(x, index))
    with pytest.raises(popsim.ExecutionError, match=rf"{op}: every index must be in \[-12, 12\) "
                                                     r"for a tensor of 12 elements \(PyTorch "
                                                     r"raises for this too\): element 1 is -13"):
        model(x, torch.tensor([0, -13]))


class RangeOfAnInput(torch.nn.Module):
    def forward(self, x, n):
        return torch.arange(n) + x.sum()  # a number read from a tensor


def test_an_op_the_tracer_made_is_placed_at_the_line_that_reads_it():
    """aten::ScalarImplicit (the tracer's, without a line of its own) at its reader's line."""
    with pytest.raises(popsim.UnsupportedOperationError) as error:
        popsim.inferenceModel(RangeOfAnInput())(torch.randn(3), torch.tensor(4))
    message = str(error.value)
    assert (f"aten::ScalarImplicit at {__file__}:{line_of('a number read from a tensor')} "
            f"(in forward): it turns a tensor computed at runtime into a Python number") in message
    assert "(read there by aten::arange)" in message


def test_input_shape_change_after_compilation():
    model = popsim.inferenceModel(MnistNetwork())
    model(torch.randn(8, 1, 28, 28))
    with pytest.raises(popsim.InputError) as error:
        model(torch.randn(4, 1, 28, 28))
    assert str(error.value) == (
        "Shape mismatch for x: expected torch.Size([8, 1, 28, 28]) but got "
        "torch.Size([4, 1, 28, 28]). "  # PopTorch's sentence, then popsim's explanation
        "Input 'x' has 4 samples in dimension 0 but the model was compiled for 8 per call "
        "(micro-batch 8 x deviceIterations 1 x gradientAccumulation 1). Pass batches of 8 (a "
        "popsim.DataLoader with drop_last=True, the default, yields only full ones), or call "
        "destroy() to compile for another batch size.")
    with pytest.raises(popsim.InputError) as error:
        model(torch.randn(8, 1, 28, 27))
    assert str(error.value) == (
        "Shape mismatch for x: expected torch.Size([8, 1, 28, 28]) but got "
        "torch.Size([8, 1, 28, 27]). "
        "Input 'x' has shape [8, 1, 28, 27] but the model was compiled for [8, 1, 28, 28]. "
        "popsim compiles one program per input signature: wrap the model again for the new "
        "inputs, or call destroy() on this one first.")

class ScaledByASum(torch.nn.Module):
    def forward(self, x, y):
        return x * y.sum()


class Sum(torch.nn.Module):
    def forward(self, x, y):
        return x + y


def test_a_trace_failing_on_micro_batches_of_different_sizes_says_how_they_were_cut():
    # Eager's message alone quotes the micro-batches' sizes (2 and 3), not the call's.
    model = popsim.inferenceModel(Sum(), popsim.Options().deviceIterations(2))
    with pytest.raises(RuntimeError, match=(
            r"The size of tensor a \(2\) must match the size of tensor b \(3\).*\n\(popsim "
            r"traced forward\(\) on one micro-batch of each input, its rows of the call split by "
            r"deviceIterations, gradientAccumulation and the replicas: x 4 -> 2, y 6 -> 3\.")):
        model(torch.randn(4, 3), torch.randn(6, 3))


def test_the_batch_explanation_is_the_inputs_own():
    # Inputs may differ in dimension 0: each one's micro-batch is its own rows, split.
    model = popsim.inferenceModel(ScaledByASum(), popsim.Options().deviceIterations(2))
    model(torch.randn(8, 3), torch.randn(2, 3))
    with pytest.raises(popsim.InputError, match=(
            r"Input 'y' has 4 samples in dimension 0 but the model was compiled for 2 per call "
            r"\(micro-batch 1 x deviceIterations 2 x gradientAccumulation 1\)")):
        model(torch.randn(8, 3), torch.randn(4, 3))



def test_input_dtype_and_argument_changes_after_compilation():
    model = popsim.inferenceModel(MnistNetwork())
    model(torch.randn(8, 1, 28, 28))
    with pytest.raises(popsim.InputError, match=r"^Data type mismatch for x: expected "
                                                r"torch.float32 but got torch.int64\. Input 'x' "
                                                r"has dtype torch.int64 but the model was "
                                                r"compiled for torch.float32"):
        model(torch.ones(8, 1, 28, 28, dtype=torch.int64))
    with pytest.raises(popsim.InputError, match=r"^Number of positional arguments mismatch: "
                                                r"expected 1 arguments but got 2\. The model was "
                                                r"compiled for inputs structured as"):
        model(torch.randn(8, 1, 28, 28), torch.randn(1))


def test_arguments_left_out_after_compilation_are_named_in_poptorch_wording():
    """A later call with fewer positional arguments says how many (positional ones only, as
    PopTorch counts them); one without a keyword argument the compiled call had names it."""

    class Many(torch.nn.Module):
        def forward(self, a, b, *rest, scale=None, **extra):
            return a + b + sum(rest) + sum(extra.values())

    model = popsim.inferenceModel(Many())
    ones = torch.ones(2)
    model(ones, ones, ones, ones, scale=1.0, z=ones)
    with pytest.raises(popsim.InputError, match=r"^Number of positional arguments mismatch: "
                                                r"expected 4 arguments but got 3\. "):
        model(ones, ones, ones, scale=1.0, z=ones)
    with pytest.raises(popsim.InputError, match=r"^Missing arguments: z\. The model was "
                                                r"compiled for inputs structured as"):
        model(ones, ones, ones, ones, scale=1.0)
    # A call forward() itself could not take names the arguments it has.
    with pytest.raises(popsim.InputError, match=r"^Number of positional arguments mismatch: "
                                                r"expected 4 arguments but got 1\. .* but was "
                                                r"called with \{'a': \*\} \(a\)\. "):
        model(ones)


def test_non_tensor_argument_changes_after_compilation_use_poptorch_wording():
    class Scaled(torch.nn.Module):
        def forward(self, x, scale):
            return x * scale

    model = popsim.inferenceModel(Scaled())
    model(torch.ones(2), 2.0)
    with pytest.raises(popsim.InputError, match=r"^Value mismatch for scale: expected 2\.0 but "
                                                r"got 3\.0\. Input 'scale' was 2\.0 when the "
                                                r"model was compiled and is now 3\.0; non-tensor "
                                                r"inputs are compiled into the program"):
        model(torch.ones(2), 3.0)
    with pytest.raises(popsim.InputError, match=r"^Type mismatch for scale: expected <class "
                                                r"'float'> but got <class 'torch.Tensor'>\. "):
        model(torch.ones(2), torch.tensor(2.0))
    with pytest.raises(popsim.InputError, match=r"^Type mismatch for x: expected <class "
                                                r"'torch.Tensor'> but got <class 'float'>\. Input "
                                                r"'x' was a tensor when the model was compiled"):
        model(1.0, 2.0)


def test_batch_dimension_must_split_into_device_iterations():
    model = popsim.inferenceModel(MnistNetwork(), popsim.Options().deviceIterations(4))
    with pytest.raises(popsim.InputError) as error:
        model(torch.randn(10, 1, 28, 28))
    assert str(error.value) == (
        "Invalid batch dimension: input 'x' has 10 samples in dimension 0, which must be a "
        "multiple of deviceIterations (4): each call runs 4 device iteration(s) on micro-batches "
        "of equal size.")


def test_out_of_memory_on_a_small_ipu_names_the_ipu_bytes_and_largest_tensors():
    opts = popsim.Options()
    opts.Simulator.memoryPerIpu("1MiB")
    model = popsim.inferenceModel(MnistNetwork(), opts)
    with pytest.raises(popsim.OutOfMemoryError) as error:
        model(torch.randn(8, 1, 28, 28))
    message = str(error.value)
    assert re.match(r"Out of memory on IPU 0: the program needs [\d,]+ bytes \([\d.]+ MiB\) but "
                    r"IPU 0 has 1,048,576 bytes \(1\.00 MiB\) \(set by "
                    r"Options\.Simulator\.memoryPerIpu\)\.", message), message
    assert "weights: 360,256 bytes (351.81 KiB) (always live)" in message
    assert "Largest tensors on IPU 0:\n    layer3.weight (weight) f32[256,320]: 327,680 bytes" in message
    assert "give each IPU more memory with Options.Simulator.memoryPerIpu" in message
    # The same model fits in a full Mk2 IPU.
    popsim.inferenceModel(MnistNetwork())(torch.randn(8, 1, 28, 28))


def test_out_of_memory_advice_follows_what_fills_the_ipu():
    """A training program whose optimizer state and activations fill the IPU is told to
    recompute and to keep the state off chip, the largest first; more memoryPerIpu is not
    offered when even the chip's whole SRAM would not hold the program."""
    model = torch.nn.Sequential(torch.nn.Linear(256, 12288), torch.nn.Linear(12288, 12288),
                                torch.nn.Linear(12288, 10))
    opts = popsim.Options()
    opts.Simulator.costOnly()
    trainer = popsim.trainingModel(WithLoss(model), opts,
                                   torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    with pytest.raises(popsim.OutOfMemoryError) as error:
        trainer(torch.randn(8, 256), torch.randint(0, 10, (8,)))
    advice = str(error.value).split("To make it fit: ")[1]
    assert advice.startswith("recompute activations in the backward pass "
                             "(Options.Training.recomputation(True)"), advice
    assert ("keep the optimizer state off chip (Options.TensorLocations.setOptimizerLocation("
            "TensorLocationSettings().useOnChipStorage(False))" in advice)
    assert "memoryPerIpu" not in advice


@pytest.mark.parametrize("make_options,message", [
    (lambda: popsim.Options().deviceIterations(0),
     "deviceIterations expects a positive integer, got 0 (int)."),
    (lambda: popsim.Options().deviceIterations("4"),
     "deviceIterations expects a positive integer, got '4' (str)."),
    (lambda: popsim.Options().deviceIterations(True),
     "deviceIterations expects a positive integer, got True (bool)."),
    (lambda: popsim.Options().outputMode(popsim.OutputMode.EveryN),
     "outputMode(OutputMode.EveryN, output_return_period) expects a positive integer, got None "
     "(NoneType)."),
    (lambda: popsim.Options().connectionType("Never"),
     "connectionType expects a popsim.ConnectionType, got 'Never'."),
    (lambda: popsim.Options().useOfflineIpuTarget(3),
     "useOfflineIpuTarget expects IPU version 1 (Mk1), 2 (Mk2) or 21 (Bow), got 3."),
    (lambda: popsim.Options().updatableNamedBuffers("running_mean"),
     "updatableNamedBuffers expects a list of buffer names, got 'running_mean'."),
    (lambda: popsim.Options().autoRoundNumIPUs(1),
     "autoRoundNumIPUs expects True or False, got 1."),
    (lambda: popsim.Options().outputMode("All"),
     "outputMode expects a popsim.OutputMode, got 'All'."),
    (lambda: popsim.Options().randomSeed(-1),
     "randomSeed expects an integer in [0, 2**64) (an unsigned 64-bit seed), got -1."),
    (lambda: popsim.Options().randomSeed(2**64),
     "randomSeed expects an integer in [0, 2**64) (an unsigned 64-bit seed), got "
     "18446744073709551616."),
    (lambda: popsim.Options().Simulator.memoryPerIpu("lots"),
     "Simulator.memoryPerIpu expects a size in bytes (an int) or a string such as '64MiB' or "
     "'512KB', got 'lots'."),
    (lambda: popsim.Options().Simulator.ipuVersion("Mk3"),
     "Simulator.ipuVersion expects 'Mk1', 'Mk2' or 'Bow', got 'Mk3'."),
    (lambda: popsim.Options().Training.gradientAccumulation(-2),
     "Training.gradientAccumulation expects a positive integer, got -2 (int)."),
])
def test_bad_option_values(make_options, message):
    with pytest.raises(popsim.OptionError) as error:
        make_options()
    assert str(error.value) == message


def test_options_that_do_not_fit_the_model_kind():
    opts = popsim.Options()
    opts.Training.gradientAccumulation(4)
    with pytest.raises(popsim.OptionError) as error:
        popsim.inferenceModel(MnistNetwork(), opts)
    assert str(error.value) == (
        "Inference models do not accumulate gradients: set opts.Training.gradientAccumulation(1) "
        "(it is 4). To run several micro-batches per call, use opts.deviceIterations(n).")
    opts = popsim.Options().deviceIterations(3).outputMode(popsim.OutputMode.EveryN, 2)
    with pytest.raises(popsim.OptionError, match=r"EveryN with output_return_period 2 needs "
                                                  r"deviceIterations to be a multiple of it, "
                                                  r"got 3\.$"):
        popsim.inferenceModel(MnistNetwork(), opts)(torch.randn(3, 1, 28, 28))


def test_memory_per_ipu_larger_than_the_chip():
    opts = popsim.Options()
    opts.Simulator.ipuVersion("Mk1").memoryPerIpu("1GiB")
    with pytest.raises(popsim.OptionError) as error:
        popsim.inferenceModel(MnistNetwork(), opts)(torch.randn(8, 1, 28, 28))
    assert str(error.value) == ("memory per IPU (1,073,741,824 bytes (1.00 GiB)) exceeds the Mk1 "
                                "(GC2) SRAM of 318,767,104 bytes (304.00 MiB).")


def test_scalar_inputs_are_one_micro_batch():
    """As in PopTorch, a 0-d input is the call's one micro-batch; with several
    micro-batches per call it cannot be split."""
    class Scale(torch.nn.Module):
        def forward(self, x, factor):
            return x * factor

    x, factor = torch.randn(3), torch.tensor(-1.5)
    assert torch.equal(popsim.inferenceModel(Scale())(x, factor), x * factor)
    model = popsim.inferenceModel(Scale(), popsim.Options().deviceIterations(3))
    with pytest.raises(popsim.InputError) as error:
        model(x, factor)
    assert str(error.value) == (
        "Input 'factor' is a scalar (0-d tensor), but popsim splits each input along dimension 0 "
        "into deviceIterations (3): each call runs 3 device iteration(s) on micro-batches of "
        "equal size. Give it a batch dimension (e.g. factor.expand(3)), or use one device "
        "iteration and no gradient accumulation.")


def test_float64_inputs_are_converted_to_float32_with_one_warning():
    """As PopTorch does: the model sees, and returns, float32."""
    linear = torch.nn.Linear(3, 2)
    model = popsim.inferenceModel(linear)
    x = torch.randn(2, 3, dtype=torch.float64)
    with pytest.warns(UserWarning) as record:
        first = model(x)
        second = model(x)
    messages = [str(w.message) for w in record if "float64" in str(w.message)]
    assert messages == [
        "Input(s) 'input' of dtype torch.float64 are converted to float32: popsim, like PopTorch "
        "on the IPU, computes in float32 (convert them with .float() to silence this warning)."]
    assert first.dtype == torch.float32
    torch.testing.assert_close(first, linear(x.float()))
    torch.testing.assert_close(second, first)
    doubled = torch.ones(2, 3, dtype=torch.float64)  # written in place: back in float64
    with pytest.warns(UserWarning):
        popsim.inferenceModel(Function(lambda t: t.mul_(2) + 1))(doubled)
    assert doubled.dtype == torch.float64 and bool((doubled == 2).all())


def test_bfloat16_inputs_are_rejected_with_a_hint():
    with pytest.raises(popsim.InputError) as error:
        popsim.inferenceModel(torch.nn.Linear(3, 2))(torch.randn(2, 3, dtype=torch.bfloat16))
    assert str(error.value) == (
        "Input 'input' has dtype torch.bfloat16; popsim takes float32, float16, int32, int64, "
        "bool, uint8, int8 and int16 tensors, and float64 ones as float32 (convert it, e.g. "
        "with .float()).")


def test_float64_parameters_compute_as_float32_with_a_warning():
    """As PopTorch: the IPU has no float64, so a float64 parameter is held and
    used as float32; the warning names it."""
    class Mixed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.full((3,), 1.5, dtype=torch.float64))

        def forward(self, x):
            return x * self.scale.float()

    x = torch.randn(2, 3)
    with pytest.warns(UserWarning, match=r"The model uses torch.float64 \(parameters and buffers "
                                         r"'scale'\).*computes float64 as float32"):
        result = popsim.inferenceModel(Mixed())(x)
    torch.testing.assert_close(result, x * 1.5)


def test_embedding_index_out_of_range_is_an_execution_error_naming_the_node():
    model = popsim.inferenceModel(torch.nn.Embedding(5, 2))
    model(torch.tensor([[0, 1]]))
    with pytest.raises(popsim.ExecutionError) as error:
        model(torch.tensor([[0, 9]]))
    assert re.fullmatch(
        r"embedding at .*test_errors.py:\d+ \(forward, task F0 on IPU0, micro-batch 0 of the "
        r"call\): index 9 \(at position 1 of the indices\) is out of range for weight 'weight' "
        r"with 5 rows. Valid indices are 0 to 4.", str(error.value))
    assert (error.value.op, error.value.task, error.value.ipu, error.value.micro_batch) == (
        "embedding", "F0", 0, 0)


def test_errors_outside_any_op_have_no_site():
    model = popsim.inferenceModel(torch.nn.Linear(3, 2))
    model(torch.randn(2, 3))
    with pytest.raises(popsim.Error) as error:
        model(torch.randn(2, 3, dtype=torch.float64).half())
    assert (error.value.node, error.value.op, error.value.task, error.value.ipu,
            error.value.micro_batch) == (None, None, None, None, None)


class CtcModel(torch.nn.Module):
    def forward(self, scores, targets, input_lengths, target_lengths):
        return torch.nn.functional.ctc_loss(scores.log_softmax(2), targets, input_lengths,
                                            target_lengths)


@pytest.mark.parametrize("targets,input_lengths,message", [
    ([[1, 2]], [9], r"input length 9 of sample 0 is not in \[1, 6\] \(the frames of log_probs\)"),
    ([[1, 3]], [6], r"target label 3 at position 1 of sample 0 is not a class index in \[0, 3\)"),
])
def test_ctc_loss_lengths_and_labels_out_of_range_are_execution_errors(targets, input_lengths,
                                                                       message):
    model = popsim.inferenceModel(CtcModel())
    scores = torch.randn(6, 1, 3)
    model(scores, torch.tensor([[1, 2]]), torch.tensor([6]), torch.tensor([2]))
    with pytest.raises(popsim.ExecutionError, match=r"ctc_loss at .*test_errors.py:\d+ .*: " + message):
        model(scores, torch.tensor(targets), torch.tensor(input_lengths), torch.tensor([2]))


@pytest.mark.parametrize("bad", [1.5, -0.25, float("nan")])
def test_binary_cross_entropy_refuses_inputs_outside_0_and_1_as_eager(bad):
    model = popsim.inferenceModel(Function(torch.nn.functional.binary_cross_entropy))
    target = torch.rand(2, 3)
    model(torch.rand(2, 3), target)
    x = torch.rand(2, 3)
    x[1, 0] = bad
    with pytest.raises(RuntimeError):
        torch.nn.functional.binary_cross_entropy(x, target)
    with pytest.raises(popsim.ExecutionError,
                       match=r"check_range at .*: binary_cross_entropy: every element of the input "
                             r"must be between 0 and 1 \(PyTorch raises for this too\): element 3 "
                             rf"is {bad}\."):
        model(x, target)


class TwoIpuClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden, self.head = torch.nn.Linear(4, 4), torch.nn.Linear(4, 3)

    def forward(self, x, labels):
        with popsim.Block("B0", ipu_id=0):
            x = self.hidden(x)
        with popsim.Block("B1", ipu_id=1):
            return torch.nn.functional.cross_entropy(self.head(x), labels)


def test_errors_while_running_name_the_op_line_block_task_ipu_and_micro_batch():
    opts = popsim.Options()
    opts.Training.gradientAccumulation(4)
    opts.setExecutionStrategy(popsim.PipelinedExecution("B0", "B1"))
    model = TwoIpuClassifier()
    trainer = popsim.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.1))
    trainer(torch.randn(8, 4), torch.tensor([0, 1, 2, 0, 1, 2, 1, 1]))
    with pytest.raises(popsim.ExecutionError) as error:
        trainer(torch.randn(8, 4), torch.tensor([0, 1, 2, 0, 1, 2, 7, 1]))
    lines, first = inspect.getsourcelines(TwoIpuClassifier.forward)
    loss_line = first + len(lines) - 1
    assert re.fullmatch(
        rf"nll_loss at .*test_errors.py:{loss_line} \(forward of block \"B1\", task FB1 on IPU1, "
        r"micro-batch 3 of the call\): target 7 of sample 0 is not a class index in \[0, 3\).",
        str(error.value))
    # The same, as fields for code to read.
    failure = error.value
    assert (failure.op, failure.block, failure.task, failure.ipu, failure.micro_batch,
            failure.replica) == ("nll_loss", "B1", "FB1", 1, 3, None)
    assert failure.source.endswith(f"test_errors.py:{loss_line}")
    assert failure.node == f"nll_loss at {failure.source}"
    # The other IPU's thread stopped too: the model runs again.
    trainer(torch.randn(8, 4), torch.tensor([0, 1, 2, 0, 1, 2, 1, 1]))


@pytest.mark.parametrize("kind,cls", [
    ("Internal", popsim.InternalError), ("Unsupported", popsim.UnsupportedOperationError),
    ("OutOfMemory", popsim.OutOfMemoryError), ("InvalidInput", popsim.InputError),
    ("InvalidOption", popsim.OptionError), ("Compilation", popsim.CompilationError),
    ("Execution", popsim.ExecutionError), ("InvalidFile", popsim.ExecutableFileError),
])
def test_cpp_errors_arrive_as_popsim_errors(kind, cls):
    with pytest.raises(cls, match="^the message$") as error:
        popsim._C._raise_for_test(kind, "the message")
    assert isinstance(error.value, popsim.Error)


@pytest.mark.parametrize("module,shape,message", [
    (torch.nn.ConvTranspose2d(2, 3, 3, stride=1, dilation=3, output_padding=2), (1, 2, 4, 4),
     r"aten::_convolution at .*: a transposed convolution with output_padding 2 not smaller "
     r"than its stride 1"),
])
def test_convolutions_popsim_cannot_run_are_named(module, shape, message):
    with pytest.raises(popsim.UnsupportedOperationError, match=message):
        popsim.inferenceModel(module)(torch.randn(*shape))


def test_an_input_without_elements_is_refused_with_the_reason():
    # PopTorch's words first (its tests match them), then the input and what to do.
    with pytest.raises(popsim.InputError, match=r"^Zero-sized tensors are unsupported \(Got shape "
                                                r"\[0, 3\]\): input 'input' has no elements\. "
                                                r"popsim, as PopTorch, streams tensors that "
                                                r"hold data"):
        popsim.inferenceModel(torch.nn.Linear(3, 2))(torch.zeros(0, 3))


@pytest.mark.parametrize("function", [
    lambda x: x[:, :0].sum(1),                      # a sum over nothing: zeros
    lambda x: x[:, :0] @ x[:0, :] + 1,              # a product over K = 0
    lambda x: torch.cat([x[:0], x]) * 2,            # an empty part of a cat
    lambda x: torch.softmax(x[:, :0], 1).sum() + x.sum(),
    lambda x: torch.relu(x[:0]).sum() + x.mean(),
])
def test_empty_slices_inside_a_model_compute_as_eager(function):
    """Tensors without elements inside the model (not inputs) run the
    reference loops (oneDNN cannot describe them) and give eager's values."""
    x = torch.randn(3, 3)
    actual = popsim.inferenceModel(Function(function))(x)
    torch.testing.assert_close(actual, function(x))


def test_matrix_decompositions_are_refused_with_what_to_do_instead():
    def log_likelihood_terms(a):
        covariance = a @ a.transpose(-1, -2) + torch.eye(3)
        return torch.logdet(covariance), torch.linalg.cholesky(covariance)

    with pytest.raises(popsim.UnsupportedOperationError) as error:
        popsim.inferenceModel(Function(log_likelihood_terms))(torch.randn(2, 3, 3))
    message = str(error.value)
    assert message.startswith(
        "Unsupported ops found in compiled model: [aten::linalg_cholesky, aten::logdet]\n")
    assert ("matrix decompositions, inverses, solves and determinants have no IPU kernels "
            "(PopLibs has none, and PopTorch does not run them): compute this on the host, "
            "before or after the popsim model, or parameterise the model without it") in message


def test_detection_ops_are_refused_with_the_reason_even_after_another():
    """torchvision's region pooling and non-maximum suppression are listed with their
    reasons; a refused op after another unsupported op's result is listed too."""
    import torchvision

    def detect(features, boxes, scores):
        pooled = torchvision.ops.roi_align(features, [boxes], output_size=2)
        kept = torchvision.ops.nms(boxes, scores, 0.5)
        return pooled.sum() + kept.sum(), torch.view_as_complex(
            torch.special.zeta(features, 2.0)[..., :2])

    with pytest.raises(popsim.UnsupportedOperationError) as error:
        popsim.inferenceModel(Function(detect))(
            torch.rand(1, 3, 8, 8), torch.tensor([[0.0, 0.0, 4.0, 4.0], [1.0, 1.0, 5.0, 6.0]]),
            torch.tensor([0.9, 0.8]))
    message = str(error.value)
    assert message.startswith("Unsupported ops found in compiled model: [aten::special_zeta, "
                              "aten::view_as_complex, torchvision::nms, torchvision::roi_align]")
    assert ("torchvision's region pooling and deformable convolution have no popsim lowering; "
            "detection models also select boxes by score and size at run time: run the "
            "backbone (and the heads' convolutions) with popsim and the box selection on the "
            "host") in message
    assert "non-maximum suppression keeps a number of boxes that depends on the data" in message
    assert "aten::view_as_complex" in message and "complex numbers, which the IPU" in message


def test_as_strided_views_popsim_cannot_place_are_refused_with_the_reason():
    """as_strided reads eager PyTorch's memory: an explicit storage offset needs to know
    where the tensor starts in it (unknown for a model input), and a view must stay among
    the tensor's own elements (popsim keeps no others)."""
    def from_offset(x):
        return x.as_strided((2, 2), (1, 1), 3)

    def outside(x):
        return x[:, :2].as_strided((2, 4), (5, 1))

    with pytest.raises(popsim.UnsupportedOperationError) as error:
        popsim.inferenceModel(Function(from_offset))(torch.randn(4, 5))
    assert ("aten::as_strided at " in str(error.value) and "as_strided with storage_offset=3 of "
            "a model input or of a view of another tensor: popsim does not know where that "
            "tensor starts in eager PyTorch's memory; leave storage_offset out (the view then "
            "starts where the tensor starts)") in str(error.value)
    with pytest.raises(popsim.UnsupportedOperationError) as error:
        popsim.inferenceModel(Function(outside))(torch.randn(4, 5))
    assert ("as_strided (sizes [2, 4], strides [5, 1]) that reads position 2 of the memory of "
            "a tensor of shape [4, 2] with strides [5, 1], which holds none of its elements: "
            "popsim keeps only a tensor's own elements, so a view must stay inside the tensor "
            "it is taken of") in str(error.value)


def test_a_returned_view_popsim_cannot_recompute_is_refused_with_the_reason():
    def stale_window(x):
        window = x.as_strided((2, 2), (1, 1))
        x.add_(1)
        return window

    with pytest.raises(popsim.UnsupportedOperationError,
                       match=r"^popsim cannot compute a tensor the model returns: a view made by "
                             r"aten::as_strided is read after the tensor it views was modified "
                             r"in place, and popsim cannot recompute that view; take the view "
                             r"after the in-place op, or make the in-place op out of place\.$"):
        popsim.inferenceModel(Function(stale_window))(torch.randn(4, 5))


def test_sparse_inputs_and_buffers_are_refused_naming_them():
    class Propagation(torch.nn.Module):
        def __init__(self, adjacency=None):
            super().__init__()
            self.weight = torch.nn.Linear(4, 4)
            if adjacency is not None:
                self.register_buffer("adjacency", adjacency)

        def forward(self, x, adjacency=None):
            a = self.adjacency if adjacency is None else adjacency
            return torch.sparse.mm(a, self.weight(x))

    adjacency = (torch.eye(5) + torch.rand(5, 5).round()).to_sparse()
    with pytest.raises(popsim.InputError, match=re.escape(
            "Input 'adjacency' is a torch.sparse_coo tensor; popsim, like PopTorch, takes dense "
            "tensors only: pass it as .to_dense() and compute with dense ops (torch.mm or @ in "
            "place of torch.sparse.mm).")):
        popsim.inferenceModel(Propagation())(torch.randn(5, 4), adjacency)
    with pytest.raises(popsim.CompilationError, match=re.escape(
            "Buffer 'adjacency' of the model is a torch.sparse_coo tensor; popsim, like "
            "PopTorch, holds dense tensors only")):
        popsim.inferenceModel(Propagation(adjacency))(torch.randn(5, 4))


def test_a_masked_selection_written_back_after_its_source_changed_stays_refused():
    """x[mask] = src[mask] runs as a where (frontend/masked_copies.cpp) only when nothing
    writes in place between the read and the write: here src changes in between, and the
    selection, whose length depends on the data, is refused as before."""
    def stale_selection(x, src):
        y, source = x * 1, src * 1
        mask = source > 0
        selected = source[mask]
        source.add_(1)
        y[mask] = selected
        return y + source

    with pytest.raises(popsim.UnsupportedOperationError,
                       match=r"aten::index at .*: indexing with a boolean mask \(the result's "
                             r"shape depends on the data\)"):
        popsim.inferenceModel(Function(stale_selection))(torch.randn(4, 3), torch.randn(4, 3))
