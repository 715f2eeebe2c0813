"""Float16 models end to end: training against eager PyTorch rounding every op
to float16, PopTorch's casting rules, loss scaling, and float16 in the memory
report and the simulated clock. (test_half_precision_ops.py checks every op.)"""

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import popsim
from models import Function
from popsim.frontend.half_tracing import HalfOnCpu

FLOAT16_ULP = 2.0**-10


class Classifier(nn.Module):
    """A float16 MLP whose loss is computed in float32, as float16 models usually are."""

    def __init__(self, features=16, hidden=32, classes=5):
        super().__init__()
        self.hidden = nn.Linear(features, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x, labels):
        scores = self.out(torch.relu(self.hidden(x)))
        return scores, F.cross_entropy(scores.float(), labels)


def batches(count, size=8, features=16, classes=5, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(size, features, generator=generator).half(),
             torch.randint(0, classes, (size,), generator=generator)) for _ in range(count)]


def eager_sgd_in_float16(model, data, lr):
    """Eager PyTorch training with every op computed in float32 and rounded to
    float16 (the mode popsim traces with), SGD updating the float16 weights."""
    losses = []
    with HalfOnCpu(downcast_mixed=False):
        for x, labels in data:
            _, loss = model(x, labels)
            loss.backward()
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter.add_(parameter.grad, alpha=-lr)
                    parameter.grad = None
            losses.append(loss.detach())
    return losses


def test_a_float16_model_trains_as_eager_pytorch_rounding_each_op():
    torch.manual_seed(0)
    model = Classifier().half()
    reference = copy.deepcopy(model)
    data = batches(6)
    trainer = popsim.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    losses = [trainer(x, labels)[1] for x, labels in data]
    expected = eager_sgd_in_float16(reference, data, lr=0.1)
    trainer.copyWeightsToHost()
    for (name, actual), (_, wanted) in zip(model.named_parameters(),
                                           reference.named_parameters()):
        assert actual.dtype == torch.float16
        torch.testing.assert_close(actual, wanted, rtol=4 * FLOAT16_ULP, atol=4 * FLOAT16_ULP,
                                   msg=name)
    torch.testing.assert_close(torch.stack(losses), torch.stack(expected), rtol=1e-3, atol=1e-3)
    # Not float32 in disguise: the weights are float16 values, and differ from float32 training.
    float32 = Classifier().float()
    float32.load_state_dict({k: v.float() for k, v in reference.state_dict().items()})
    assert all(torch.equal(p, p.half().float()) for p in float32.parameters())


def test_outputs_and_weights_keep_their_dtypes():
    torch.manual_seed(0)
    model = Classifier().half()
    x, labels = batches(1)[0]
    scores, loss = popsim.inferenceModel(model)(x, labels)
    assert scores.dtype == torch.float16 and loss.dtype == torch.float32
    expected_scores, expected_loss = model.float()(x.float(), labels)
    torch.testing.assert_close(scores.float(), expected_scores, rtol=1e-2, atol=1e-2)


def test_float32_inputs_of_a_float16_model_are_promoted_by_default_as_in_poptorch_3():
    """Precision.halfFloatCasting's Default under PopTorch 3's default frontend
    is PyTorch's promotion: a float32 input makes the float16 linear layer
    compute in float32 (eager PyTorch refuses the mix; its promotion would
    upcast the weights)."""
    torch.manual_seed(0)
    model = nn.Linear(4, 3).half()
    x = torch.randn(2, 4)
    actual = popsim.inferenceModel(model)(x)
    assert actual.dtype == torch.float32
    expected = copy.deepcopy(model).float()(x)
    torch.testing.assert_close(actual, expected, rtol=1e-6, atol=1e-6)


def test_the_legacy_tracing_frontend_downcasts_float32_inputs_of_a_float16_model():
    """Jit.traceModel(True), PopTorch's legacy tracing frontend: Default is
    FloatDowncastToHalf, so the float32 input computes in float16."""
    torch.manual_seed(0)
    model = nn.Linear(4, 3).half()
    x = torch.randn(2, 4)
    opts = popsim.Options()
    opts.Jit.traceModel(True)
    actual = popsim.inferenceModel(model, opts)(x)
    assert actual.dtype == torch.float16
    with HalfOnCpu(downcast_mixed=False):
        expected = model(x.half())
    torch.testing.assert_close(actual, expected, rtol=0, atol=0)


LAYERS_WITH_PARAMETERS = {
    "Linear": (lambda: nn.Linear(6, 4), (3, 6)),
    "Conv1d": (lambda: nn.Conv1d(2, 3, 3), (2, 2, 7)),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(2, 3, 3), (1, 2, 4, 4)),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), (2, 4, 5)),
    "PReLU": (lambda: nn.PReLU(), (2, 5)),
}


@pytest.mark.parametrize("name", sorted(LAYERS_WITH_PARAMETERS))
def test_a_float16_activation_through_float32_parameters_computes_in_float16(name):
    """PopTorch casts a layer's float32 parameters to a float16 activation's
    dtype (eager refuses the mix): the result is float16, as if the layer had
    been converted with .half()."""
    make, shape = LAYERS_WITH_PARAMETERS[name]
    torch.manual_seed(0)
    layer = make()
    x = torch.randn(*shape).half()
    actual = popsim.inferenceModel(layer)(x)
    assert actual.dtype == torch.float16
    halved = copy.deepcopy(layer).half()
    torch.testing.assert_close(actual, popsim.inferenceModel(halved)(x), rtol=0, atol=0)
    with HalfOnCpu(downcast_mixed=False):  # eager, each op rounded (as test_half_precision_ops)
        expected = halved(x)
    torch.testing.assert_close(actual, expected, rtol=4 * FLOAT16_ULP, atol=FLOAT16_ULP)
    assert all(p.dtype == torch.float32 for p in layer.parameters())


def test_float32_parameters_train_through_float16_activations():
    """The parameters stay float32 and take their float16 copies' gradients
    (the cast's backward), as eager autograd gives them through .half(): a
    float32 Classifier whose activations are float16 from the input on."""
    torch.manual_seed(0)
    model = Classifier()
    reference = copy.deepcopy(model)
    data = batches(3)
    trainer = popsim.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    for x, labels in data:
        scores, _ = trainer(x, labels)
        assert scores.dtype == torch.float16
    trainer.copyWeightsToHost()
    with HalfOnCpu(downcast_mixed=False):
        for x, labels in data:
            hidden, out = reference.hidden, reference.out
            h = torch.relu(F.linear(x, hidden.weight.half(), hidden.bias.half()))
            scores = F.linear(h, out.weight.half(), out.bias.half())
            F.cross_entropy(scores.float(), labels).backward()
            with torch.no_grad():
                for parameter in reference.parameters():
                    parameter.add_(parameter.grad, alpha=-0.1)
                    parameter.grad = None
    for (name, actual), expected in zip(model.named_parameters(), reference.parameters()):
        assert actual.dtype == torch.float32, name
        torch.testing.assert_close(actual, expected, rtol=1e-6, atol=1e-7, msg=name)


class Casts(nn.Module):
    """PopTorch's halfFloatCasting examples: x.to(y.dtype) + y, and an explicit float32."""

    def __init__(self, explicit):
        super().__init__()
        self.explicit = explicit

    def forward(self, x, y):
        return (x.to(torch.float32) if self.explicit else x.to(y.dtype)) + y


@pytest.mark.parametrize("x_dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("y_dtype", [torch.float16, torch.float32])
def test_casts_to_another_tensors_dtype_follow_it(x_dtype, y_dtype):
    x, y = torch.ones(3, dtype=x_dtype), torch.ones(3, dtype=y_dtype)
    assert popsim.inferenceModel(Casts(False))(x, y).dtype == y_dtype


@pytest.mark.parametrize("casting,expected", [
    (popsim.HalfFloatCastingBehavior.FloatDowncastToHalf, torch.float16),
    (popsim.HalfFloatCastingBehavior.HalfUpcastToFloat, torch.float32),
])
def test_half_float_casting_decides_mixed_operands(casting, expected):
    opts = popsim.Options()
    opts.Precision.halfFloatCasting(casting)
    x, y = torch.ones(3, dtype=torch.float16), torch.full((3,), 0.1, dtype=torch.float16)
    result = popsim.inferenceModel(Casts(True), opts)(x, y)
    assert result.dtype == expected
    assert result[0].item() == (torch.tensor(1.0) + torch.tensor(0.1).half().float()).to(
        expected).item()


class Mixed(nn.Module):
    """Ops mixing float32 (x) and float16 (y) operands, with y a float16
    view of values that float16 rounds (550.4 is 550.5 in float16)."""

    def forward(self, x, y, w):
        scaled = y * torch.tensor(2.0)  # a 0-d float32 does not promote
        kept = y.clone()
        kept.add_(x)  # in place: the target's dtype
        return (x == y, x + y, torch.where(x > 0, x, y), torch.cat([x, y]), x @ w, scaled,
                kept)


def test_mixed_operands_follow_pytorchs_promotion_by_default():
    """Default halfFloatCasting (PopTorch 3): every result has eager's dtype
    and value; a float32 tensor makes the op (the product too) compute in
    float32, a 0-d float32 does not, and an in-place op keeps its target's."""
    x = torch.tensor([550.4, -1.0, 0.1])
    y = torch.tensor([550.4, 2.0, 0.1]).half()
    w = torch.randn(3, 2, generator=torch.Generator().manual_seed(0)).half()
    actual = popsim.inferenceModel(Mixed())(x, y, w)
    with HalfOnCpu(downcast_mixed=False):
        expected = list(Mixed()(x, y, w[:, :]))
    expected[4] = x @ w.float()  # eager refuses a mixed product; promotion computes this
    assert [t.dtype for t in actual] == [torch.bool, torch.float32, torch.float32,
                                         torch.float32, torch.float32, torch.float16,
                                         torch.float16]
    assert actual[0].tolist() == [False, False, False]  # 550.4 != 550.5, 0.1 != 0.0999755859375
    for got, want in zip(actual, expected):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=0)


class BuiltInForward(nn.Module):
    """float16 activations with float32 tensors that forward() builds itself,
    which the trace records as constants: a causal mask (-inf above the
    diagonal, as nn.Transformer.generate_square_subsequent_mask makes it)
    added by baddbmm, and a matrix multiplied in."""

    def forward(self, q, k):
        mask = torch.triu(torch.full((4, 4), float("-inf")), diagonal=1)
        scores = torch.baddbmm(mask, q, k.transpose(-2, -1))
        return scores, q @ torch.linspace(-1.0, 1.0, 6).reshape(3, 2)


def test_float32_tensors_a_model_builds_promote_as_float32_inputs_do():
    """They take part in promotion as float32 inputs would (PyTorch's rule,
    halfFloatCasting's default): the ops compute in float32. Until 0.15.0
    baddbmm and the product refused them ("input 1 (b) must be f16")."""
    generator = torch.Generator().manual_seed(0)
    q, k = (torch.randn(2, 4, 3, generator=generator).half() for _ in range(2))
    scores, product = popsim.inferenceModel(BuiltInForward())(q, k)
    assert scores.dtype == product.dtype == torch.float32
    # Eager refuses these mixes (and float16 products on the CPU); promotion computes this.
    mask = torch.triu(torch.full((4, 4), float("-inf")), diagonal=1)
    torch.testing.assert_close(scores, torch.baddbmm(mask, q.float(), k.float().transpose(-2, -1)),
                               rtol=1e-6, atol=0)
    torch.testing.assert_close(product, q.float() @ torch.linspace(-1.0, 1.0, 6).reshape(3, 2),
                               rtol=1e-6, atol=0)


class Underflowing(nn.Module):
    """A float16 linear layer whose gradients are below float16's smallest value."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4, dtype=torch.float16))

    def forward(self, x):
        return popsim.identity_loss((x * self.weight).sum().float() * 1e-9, "none")


def test_loss_scaling_keeps_small_float16_gradients():
    """Without loss scaling the float16 gradient 1e-9 underflows to 0 and nothing
    trains; loss_scaling=2**20 scales it into float16's range and the update
    unscales it in float32."""
    x = torch.ones(1, 4, dtype=torch.float16)

    def trained(scaling):
        model = Underflowing()
        optimizer = popsim.optim.SGD(model.parameters(), lr=1e6, loss_scaling=scaling)
        trainer = popsim.trainingModel(model, optimizer=optimizer)
        trainer(x)
        trainer.copyWeightsToHost()
        return model.weight.detach()

    assert torch.equal(trained(1.0), torch.ones(4, dtype=torch.float16))
    scaled = trained(2.0**20)
    torch.testing.assert_close(scaled, torch.full((4,), 1 - 1e-3, dtype=torch.float16),
                               rtol=FLOAT16_ULP, atol=0)


def test_loss_scaling_by_a_power_of_two_changes_nothing_in_float32():
    torch.manual_seed(0)
    model = Classifier()
    data = [(x.float(), labels) for x, labels in batches(3)]
    results = []
    for scaling in (1.0, 1024.0):
        copy_ = copy.deepcopy(model)
        optimizer = popsim.optim.SGD(copy_.parameters(), lr=0.1, momentum=0.9,
                                     loss_scaling=scaling)
        trainer = popsim.trainingModel(copy_, optimizer=optimizer)
        for x, labels in data:
            trainer(x, labels)
        trainer.copyWeightsToHost()
        results.append([p.detach().clone() for p in copy_.parameters()])
    for unscaled, scaled in zip(*results):
        assert torch.equal(unscaled, scaled)


def test_set_optimizer_changes_the_loss_scaling_without_recompiling():
    x = torch.ones(1, 4, dtype=torch.float16)
    model = Underflowing()
    optimizer = popsim.optim.SGD(model.parameters(), lr=1e6, loss_scaling=1.0)
    trainer = popsim.trainingModel(model, optimizer=optimizer)
    trainer(x)
    trainer.setOptimizer(popsim.optim.SGD(model.parameters(), lr=1e6, loss_scaling=2.0**20))
    trainer(x)
    trainer.copyWeightsToHost()
    assert model.weight[0].item() < 1.0


def test_float16_halves_the_memory_of_weights_and_activations():
    def report(model):
        inference = popsim.inferenceModel(model)
        inference(torch.randn(64, 256, dtype=next(model.parameters()).dtype))
        return inference.memoryReport()["ipus"][0]["categories"]

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256))
    single = report(copy.deepcopy(model))
    half = report(copy.deepcopy(model).half())
    for category in ("weights", "activations", "input streams"):
        assert half[category]["bytes"] * 2 == pytest.approx(single[category]["bytes"], rel=0.01)


class ConvThen(nn.Module):
    """A convolution, then a layer popsim computes in float32 for float16
    inputs (so that its several IR ops round once), then a loss."""

    def __init__(self, layer):
        super().__init__()
        self.conv = nn.Conv2d(16, 16, 3, padding=1)
        self.layer = layer

    def forward(self, x):
        y = self.layer(self.conv(x)).relu()
        return y, popsim.identity_loss(y.square().mean(), "none")


@pytest.mark.parametrize("layer", [lambda: nn.GroupNorm(4, 16),
                                   lambda: nn.Upsample(scale_factor=2, mode="bilinear")],
                         ids=["group_norm", "upsample_bilinear"])
@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_ops_computed_in_float32_take_float16_memory_and_time_on_the_ipu(layer, training):
    """The IPU runs these ops on float16 in one vertex: popsim's float32 copies
    are its own, so the simulated IPU holds float16 and runs no casts."""
    def run(model, dtype):
        if training:
            executor = popsim.trainingModel(model, optimizer=popsim.optim.SGD(
                model.parameters(), lr=0.0))
        else:
            executor = popsim.inferenceModel(model)
        executor(torch.randn(8, 16, 32, 32, dtype=dtype))
        categories = executor.memoryReport()["ipus"][0]["categories"]
        casts = [step for step in executor._executable.program() if step.op.startswith("cast")]
        return categories["activations"]["bytes"], casts

    torch.manual_seed(0)
    model = ConvThen(layer())
    single, _ = run(copy.deepcopy(model), torch.float32)
    half, casts = run(copy.deepcopy(model).half(), torch.float16)
    assert half * 2 == pytest.approx(single, rel=0.02)
    assert casts and all(step.compute_cycles == 0 and step.exchange_cycles == 0
                         for step in casts)


class TwoStagesOfGroupNorm(nn.Module):
    """Float16 group norms in two pipeline stages: the stash carries what each
    stage's backward pass reads across the other micro-batches' passes."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)
        self.norm = nn.GroupNorm(2, 8)
        self.head = nn.Conv2d(8, 8, 1)
        self.norm2 = nn.GroupNorm(4, 8)

    def forward(self, x):
        with popsim.Block("A"):
            h = self.norm(self.conv(x)).relu()
        with popsim.Block("B"):
            y = self.norm2(self.head(h))
            return popsim.identity_loss(y.float().square().mean(), "none")


def test_pipelined_float16_group_norms_train_as_one_stage():
    """The host keeps its float32 copies of a float16 group norm (which the
    simulated IPU does not hold), and the stash carries them between a
    micro-batch's forward and backward passes."""
    def train(strategy):
        torch.manual_seed(0)
        model = TwoStagesOfGroupNorm().half()
        opts = popsim.Options()
        opts.Training.gradientAccumulation(4)
        opts.setExecutionStrategy(strategy)
        trainer = popsim.trainingModel(model, opts,
                                       popsim.optim.SGD(model.parameters(), lr=0.1))
        torch.manual_seed(1)
        for _ in range(2):
            trainer(torch.randn(4, 8, 6, 6).half())
        trainer.copyWeightsToHost()
        return model.state_dict()

    one = train(popsim.PipelinedExecution(popsim.Stage("A", "B").ipu(0)))
    two = train(popsim.PipelinedExecution(popsim.Stage("A").ipu(0), popsim.Stage("B").ipu(1)))
    for name, weight in one.items():
        assert torch.equal(weight, two[name]), name


def test_float16_matmuls_run_at_four_times_the_float32_rate():
    """GC200: 64 float16 against 16 float32 multiply-accumulates per tile-cycle
    (the compute part; the exchange moves half the bytes)."""
    def cycles(dtype):
        model = nn.Linear(1024, 1024, bias=False).to(dtype)
        inference = popsim.inferenceModel(model)
        inference(torch.randn(512, 1024, dtype=dtype))
        return {step.op: step.compute_cycles for step in inference._executable.program()
                if step.op.startswith("linear")}

    single, half = cycles(torch.float32), cycles(torch.float16)
    (name, float32_cycles), = single.items()
    assert 3.0 < float32_cycles / half[name] <= 4.0


class Scaled(nn.Module):
    """A float16 weight whose gradient is `size` times the input."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(8, dtype=torch.float16))

    def forward(self, x, size):
        return popsim.identity_loss((x * self.weight).sum() * size.sum(), "none")


def automatic_factors(size, steps, initial=1024.0, loss_dtype=torch.float16, **popart):
    """The device's loss scaling after each of `steps` steps of automatic loss scaling."""
    opts = popsim.Options()
    opts.Training.setAutomaticLossScaling(True)
    for name, value in popart.items():
        opts._Popart.set(f"automaticLossScalingSettings.{name}", value)
    model = Scaled()
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.0, loss_scaling=initial)
    trainer = popsim.trainingModel(model, opts, optimizer)
    x = torch.ones(1, 8, dtype=torch.float16)
    factors = []
    for _ in range(steps):
        trainer(x, torch.tensor([size], dtype=loss_dtype))
        factors.append(trainer._executable.read_variables(
            [popsim._C.LOSS_SCALING_NAME])[popsim._C.LOSS_SCALING_NAME].item())
    return factors


def test_automatic_loss_scaling_doubles_while_gradients_are_small():
    """Gradients of 1e-3 x the scale stay below the bin edge (8188): the factor
    doubles after every step, up to 2^15 for a float16 loss."""
    assert automatic_factors(1e-3, 6) == [2048.0, 4096.0, 8192.0, 16384.0, 32768.0, 32768.0]


def test_automatic_loss_scaling_halves_when_gradients_cross_the_bin_edge():
    """Gradients of 16 x the scale (16384 at a scale of 1024) lie above 8188: the factor
    halves until they fall below it, then doubles again."""
    assert automatic_factors(16.0, 5) == [512.0, 256.0, 512.0, 256.0, 512.0]


def test_automatic_loss_scaling_keeps_its_factor_across_detach_and_set_optimizer():
    """Detaching and attaching restores the device's factor; setOptimizer gives the device
    the optimizer's factor, attached or detached, as PopTorch writes it."""
    opts = popsim.Options()
    opts.Training.setAutomaticLossScaling(True)
    model = Scaled()
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.0, loss_scaling=1024.0)
    trainer = popsim.trainingModel(model, opts, optimizer)
    x, size = torch.ones(1, 8, dtype=torch.float16), torch.tensor([1e-3], dtype=torch.float16)

    def factor():
        name = popsim._C.LOSS_SCALING_NAME
        return trainer._executable.read_variables([name])[name].item()

    trainer(x, size)
    trainer(x, size)
    assert factor() == 4096.0
    trainer.detachFromDevice()
    trainer.attachToDevice()
    trainer(x, size)
    assert factor() == 8192.0  # it went on doubling from the device's 4096
    trainer.detachFromDevice()
    optimizer.loss_scaling = 256.0
    trainer.setOptimizer(optimizer)
    trainer(x, size)  # (attaches again)
    assert factor() == 512.0


def test_automatic_loss_scaling_bin_edge_and_threshold_come_from_popart_options():
    # An edge at 1/1024 of 65504 (64): gradients of 0.1 x 1024 = 102 lie above it, and of
    # 0.1 x 512 = 51 below.
    assert automatic_factors(0.1, 2, binEdgeLocation=1 / 1024) == [512.0, 1024.0]
    with pytest.raises(popsim.OptionError, match="thresholdUpperCountProportion=1.5 is out of"):
        automatic_factors(0.1, 1, thresholdUpperCountProportion=1.5)
    with pytest.raises(popsim.OptionError, match="updatePeriod=4: popsim updates"):
        automatic_factors(0.1, 1, updatePeriod=4)


class TwoBlocksHalf(nn.Module):
    """Two float16 blocks with a loss, for automatic loss scaling over stages."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 8).half()
        self.b = nn.Linear(8, 2).half()

    def forward(self, x, target):
        with popsim.Block("A"):
            h = torch.relu(self.a(x))
        with popsim.Block("B"):
            return nn.functional.mse_loss(self.b(h), target)


@pytest.mark.parametrize("ipus", [(0, 0), (0, 1)], ids=["one_ipu", "two_ipus"])
def test_automatic_loss_scaling_over_sharded_stages_trains_as_one_stage(ipus):
    """Each stage counts its own gradients (stages sharing an IPU run their backward
    passes in separate tasks), into its IPU's count, and each IPU reads the others' counts
    as they were taken, not as they are reset: the factor and the trained weights are the
    single-stage run's."""
    def train(strategy):
        torch.manual_seed(0)
        model = TwoBlocksHalf()
        opts = popsim.Options()
        opts.Training.setAutomaticLossScaling(True)
        opts.setExecutionStrategy(strategy)
        optimizer = popsim.optim.SGD(model.parameters(), lr=0.05, loss_scaling=512.0)
        trainer = popsim.trainingModel(model, opts, optimizer)
        for step in range(3):
            x = torch.randn(4, 4).half() * (10.0 if step == 1 else 1.0)  # 2nd: halves
            trainer(x, torch.randn(4, 2).half())
        factor = trainer._executable.read_variables([popsim._C.LOSS_SCALING_NAME])
        trainer.copyWeightsToHost()
        return factor[popsim._C.LOSS_SCALING_NAME].item(), model.state_dict()

    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # IPUs run concurrently: each reads the others' counts
    try:
        one_stage = train(popsim.ShardedExecution(popsim.Stage("A", "B").ipu(0)))
        split = train(popsim.ShardedExecution(popsim.Stage("A").ipu(ipus[0]),
                                              popsim.Stage("B").ipu(ipus[1])))
    finally:
        torch.set_num_threads(threads)
    assert split[0] == one_stage[0] == 1024.0  # 512 doubled, halved, doubled
    for name, weight in one_stage[1].items():
        assert torch.isfinite(weight).all(), name
        assert torch.equal(split[1][name], weight), name


def test_automatic_loss_scaling_without_float16_gradients_keeps_the_factor(capfd):
    """A float32 model has no float16 gradients to overflow: as in PopTorch, it trains with
    the option on, its loss scaling unchanged, and popsim says why (on stderr)."""
    opts = popsim.Options()
    opts.Training.setAutomaticLossScaling(True)
    torch.manual_seed(0)
    model = Classifier()
    eager = copy.deepcopy(model)
    trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=0.1,
                                                                 loss_scaling=8.0))
    reference = popsim.trainingModel(eager, popsim.Options(),
                                     popsim.optim.SGD(eager.parameters(), lr=0.1,
                                                      loss_scaling=8.0))
    for x, labels in batches(3):
        torch.testing.assert_close(trainer(x.float(), labels), reference(x.float(), labels))
    assert "computes no float16 gradients, whose statistics would set the loss scaling, so " \
           "the loss scaling keeps its value" in capfd.readouterr().err
    for name, weight in eager.state_dict().items():
        torch.testing.assert_close(model.state_dict()[name], weight)


def test_automatic_loss_scaling_reads_float16_weights_gradients_computed_in_float32():
    """A float16 model fed float32 inputs computes in float32 (PyTorch's
    promotion), and each float16 weight's gradient is rounded to float16 at
    its cast: those gradients set the loss scaling, as in PopTorch."""
    opts = popsim.Options()
    opts.Training.setAutomaticLossScaling(True)
    model = Classifier().half()
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.1, loss_scaling=512.0)
    trainer = popsim.trainingModel(model, opts, optimizer)
    x, labels = batches(1)[0]
    trainer(x.float(), labels)
    factor = trainer._executable.read_variables(
        [popsim._C.LOSS_SCALING_NAME])[popsim._C.LOSS_SCALING_NAME].item()
    assert factor == 1024.0  # small gradients: doubled
    assert all(p.dtype == torch.float16 for p in model.parameters())


class Scale(nn.Module):
    def forward(self, x):
        return x * 1.000244140625  # 1 + 2^-12: a quarter of float16's ulp at 1


def stochastic(seed, x, draws=1):
    opts = popsim.Options().randomSeed(seed)
    opts.Precision.enableStochasticRounding(True)
    model = popsim.inferenceModel(Scale(), opts)
    return [model(x) for _ in range(draws)]


def test_stochastic_rounding_is_unbiased_and_reproducible_per_seed():
    """1 + 2^-12 lies a quarter of the way from 1 to the next float16 value,
    1 + 2^-10: rounding to nearest always gives 1, stochastic rounding gives
    1 + 2^-10 a quarter of the time, so the mean is the exact product."""
    x = torch.ones(200_000, dtype=torch.float16)
    assert torch.equal(popsim.inferenceModel(Scale())(x), x)
    first, second = stochastic(7, x, draws=2)
    assert set(first.float().unique().tolist()) == {1.0, 1.0 + 2**-10}
    up = (first > 1).double().mean().item()
    assert abs(up - 0.25) < 5 * (0.25 * 0.75 / x.numel()) ** 0.5  # five standard deviations
    assert abs(first.double().mean().item() - 1.000244140625) < 1e-5
    assert not torch.equal(first, second)  # each run draws anew
    assert torch.equal(stochastic(7, x)[0], first)  # the same seed, the same numbers
    assert not torch.equal(stochastic(8, x)[0], first)


def test_stochastic_rounding_rounds_weight_updates_too():
    """An SGD step smaller than half a float16 ulp never moves a weight when
    rounding to nearest; rounded stochastically, the weights move on average."""
    def trained(stochastic_rounding):
        opts = popsim.Options().randomSeed(0)
        opts.Precision.enableStochasticRounding(stochastic_rounding)
        model = nn.Linear(1, 4096, bias=False).half()
        nn.init.ones_(model.weight)
        trainer = popsim.trainingModel(
            nn.Sequential(model, _SumLoss()), opts, popsim.optim.SGD(model.parameters(), lr=1e-4))
        trainer(torch.ones(1, 1, dtype=torch.float16))
        trainer.copyWeightsToHost()
        return model.weight.detach().double()

    assert torch.equal(trained(False), torch.ones(4096, 1, dtype=torch.float64))
    moved = trained(True)
    assert abs(moved.mean().item() - (1 - 1e-4)) < 2e-5


class _SumLoss(nn.Module):
    def forward(self, x):
        return popsim.identity_loss(x.sum(), "none")


class Overflowing(nn.Module):
    def forward(self, x):
        return x * 300.0  # 300 x 300 = 90,000: beyond float16's 65504


def test_floating_point_exceptions_name_the_op_and_its_line():
    x = torch.full((4,), 300.0, dtype=torch.float16)
    assert torch.isinf(popsim.inferenceModel(Overflowing())(x)).all()  # off: inf propagates
    opts = popsim.Options()
    opts.Precision.enableFloatingPointExceptions(True)
    model = popsim.inferenceModel(Overflowing(), opts)
    with pytest.raises(popsim.ExecutionError,
                       match=r"(?s)affine at .*test_half_precision\.py:\d+.*floating-point "
                             r"exception .*infinities, from finite operands.*float16 overflows "
                             r"beyond 65504"):
        model(x)
    assert torch.equal(model(torch.ones(4, dtype=torch.float16)),
                       torch.full((4,), 300.0, dtype=torch.float16))


def test_floating_point_exceptions_catch_invalid_operations():
    class Invalid(nn.Module):
        def forward(self, x):
            return x - x  # inf - inf

    opts = popsim.Options()
    opts.Precision.enableFloatingPointExceptions(True)
    model = popsim.inferenceModel(Invalid(), opts)
    with pytest.raises(popsim.ExecutionError, match=r"NaN, from operands without NaN"):
        model(torch.tensor([1.0, float("inf")]))


def test_floating_point_exceptions_catch_ordered_comparisons_with_nan():
    """x > NaN is False in eager PyTorch and an invalid operation in IEEE 754, which an IPU
    with the option traps; == and != with NaN are not."""
    def compare(x, y):
        return x > y, x <= y, x == y, x != y

    x, y = torch.ones(3), torch.tensor([1.0, float("nan"), 2.0])
    assert all(torch.equal(a, e) for a, e in
               zip(popsim.inferenceModel(Function(compare))(x, y), compare(x, y)))
    opts = popsim.Options()
    opts.Precision.enableFloatingPointExceptions(True)
    model = popsim.inferenceModel(Function(compare), opts)
    with pytest.raises(popsim.ExecutionError, match=r"(?s)binary_pointwise at .*test_half_"
                                                    r"precision\.py:\d+.*an ordered comparison "
                                                    r"\(<, <=, >, >=\) with a NaN operand"):
        model(x, y)
    assert all(torch.equal(a, e) for a, e in zip(model(x, x + 1), compare(x, x + 1)))
    unordered = popsim.inferenceModel(Function(lambda x, y: (x == y, x != y)), opts)
    assert torch.equal(unordered(x, y)[0], x == y)


class Normalised(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3)
        self.norm = nn.BatchNorm2d(4)

    def forward(self, x):
        return popsim.identity_loss(self.norm(self.conv(x)).float().square().mean(), "none")


@pytest.mark.parametrize("always_float", [True, False])
def test_running_statistics_stay_float32_on_the_device(always_float):
    """Precision.runningStatisticsAlwaysFloat (the default): a float16 batch norm's
    running statistics are held and updated in float32 on the device (the memory
    report shows float32 buffers); the host's buffers keep float16."""
    torch.manual_seed(0)
    model = Normalised().half()
    opts = popsim.Options()
    opts.Precision.runningStatisticsAlwaysFloat(always_float)
    trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(model.parameters(), lr=0.0))
    x = torch.randn(8, 2, 6, 6, dtype=torch.float16) * 3 + 1
    for _ in range(3):
        trainer(x)
    trainer.copyWeightsToHost()
    assert model.norm.running_mean.dtype == torch.float16
    expected = "f32[4]" if always_float else "f16[4]"
    program = trainer._debug_ir(optimized=True)
    assert f"@norm.running_mean: {expected}" in program
    assert f"@norm.running_var: {expected}" in program
    # Three momentum-0.1 updates towards the batch statistics, from 0 and 1.
    with torch.no_grad():
        y = model.conv.float()(x.float())
    mean, var = y.mean((0, 2, 3)), y.var((0, 2, 3))
    factor = 1 - 0.9**3
    torch.testing.assert_close(model.norm.running_mean.float(), factor * mean, rtol=1e-2,
                               atol=1e-2)
    torch.testing.assert_close(model.norm.running_var.float(), 0.9**3 + factor * var, rtol=1e-2,
                               atol=1e-2)


def test_a_frozen_float16_batch_norm_trains_with_float32_statistics():
    """A batch norm in eval mode inside a float16 training model normalises with
    its float32 running statistics, forward and backward, as eager PyTorch does
    with the same statistics rounded to float16 (so within float16 rounding)."""
    torch.manual_seed(0)
    model = Normalised().half()
    model.norm.running_mean.uniform_(-1, 1)
    model.norm.running_var.uniform_(0.5, 2)
    model.norm.eval()
    reference = copy.deepcopy(model)
    x = torch.randn(8, 2, 6, 6, dtype=torch.float16)
    trainer = popsim.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    trainer(x)
    trainer.copyWeightsToHost()
    with HalfOnCpu(downcast_mixed=False):
        reference(x).backward()
        with torch.no_grad():
            for parameter in reference.parameters():
                parameter.add_(parameter.grad, alpha=-0.1)
    for (name, actual), (_, expected) in zip(model.named_parameters(),
                                             reference.named_parameters()):
        torch.testing.assert_close(actual, expected, rtol=8 * FLOAT16_ULP, atol=8 * FLOAT16_ULP,
                                   msg=name)


def half_partial_sums(products):
    """Sums the last dimension of float64 products as float16 partials do: runs of
    16 summed, each sum rounded to float16 (through float32) and added to a float16
    total, rounded again."""
    total = torch.zeros(products.shape[:-1], dtype=torch.float16)
    for run in products.split(16, dim=-1):
        total = (total.float() + run.sum(-1).float().half().float()).half()
    return total


def partials_options(dtype):
    opts = popsim.Options()
    opts.Precision.setPartialsType(dtype)
    return opts


def test_half_partials_accumulate_linear_layers_in_float16():
    torch.manual_seed(0)
    layer = nn.Linear(200, 7).half()
    x = torch.randn(5, 200, dtype=torch.float16)
    products = x.double()[:, None, :] * layer.weight.double()[None, :, :]
    expected = (half_partial_sums(products).float() + layer.bias.float()).half()
    actual = popsim.inferenceModel(layer, partials_options(torch.float16))(x)
    assert torch.equal(actual, expected)
    single = popsim.inferenceModel(layer, partials_options(torch.float32))(x)
    assert not torch.equal(actual, single)  # float32 partials round once
    torch.testing.assert_close(actual, single, rtol=0.02, atol=0.02)


def test_half_partials_accumulate_matmuls_in_float16():
    torch.manual_seed(1)

    class Product(nn.Module):
        def forward(self, a, b):
            return a @ b

    a = torch.randn(2, 3, 40, dtype=torch.float16)
    b = torch.randn(2, 40, 6, dtype=torch.float16)
    products = a.double()[..., :, :, None] * b.double()[..., None, :, :]
    expected = half_partial_sums(products.transpose(-1, -2))
    actual = popsim.inferenceModel(Product(), partials_options(torch.float16))(a, b)
    assert torch.equal(actual, expected)


def test_half_partials_accumulate_convolutions_in_float16_with_the_padding_in_the_window():
    torch.manual_seed(2)
    conv = nn.Conv2d(4, 3, 3, padding=1).half()
    x = torch.randn(2, 4, 5, 5, dtype=torch.float16)
    windows = F.unfold(x.double(), 3, padding=1)  # [N, C*3*3, pixels], (c, kh, kw) order
    products = windows.transpose(1, 2)[:, :, None, :] * conv.weight.double().reshape(3, -1)
    expected = half_partial_sums(products).transpose(1, 2).reshape(2, 3, 5, 5)
    expected = (expected.float() + conv.bias.float()[:, None, None]).half()
    actual = popsim.inferenceModel(conv, partials_options(torch.float16))(x)
    assert torch.equal(actual, expected)


def test_half_partials_accumulate_convolution_gradients_in_float16():
    """dX and dW of a float16 convolution with float16 partials: each element
    sums its products in order (dX: output channel by output channel, output
    pixels in order; dW: image by image, output pixels in order; taps on the
    padding left out), in runs of 16 as in the forward pass."""
    torch.manual_seed(3)
    n_, c_, oc_, size, k_ = 2, 3, 4, 5, 3
    x = torch.randn(n_, c_, size, size, dtype=torch.float16)
    g = torch.randn(n_, oc_, size, size, dtype=torch.float16)

    class ConvGrad(nn.Module):
        def __init__(self):
            super().__init__()
            self.image = nn.Parameter(x.clone())
            self.conv = nn.Conv2d(c_, oc_, k_, padding=1, bias=False).half()

        def forward(self, grad):
            y = self.conv(self.image)
            return y, popsim.identity_loss((y * grad).sum(), reduction="none")

    model = ConvGrad()
    w = model.conv.weight.detach().clone()
    opts = partials_options(torch.float16)
    opts.anchorTensor("dx", "Gradient___image").anchorTensor("dw", "Gradient___conv.weight")
    trainer = popsim.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.0))
    trainer(g)
    dx, dw = trainer.getAnchoredTensor("dx"), trainer.getAnchoredTensor("dw")

    def taps(o):  # (input pixel or None, k) of output pixel o, in kernel order
        oy, ox = divmod(o, size)
        for k in range(k_ * k_):
            ky, kx = divmod(k, k_)
            iy, ix = oy - 1 + ky, ox - 1 + kx
            yield (iy * size + ix if 0 <= iy < size and 0 <= ix < size else None), k

    gd, xd, wd = g.double().reshape(n_, oc_, -1), x.double().reshape(n_, c_, -1), w.double()
    expected_dx = torch.zeros(n_, c_, size * size, dtype=torch.float16)
    for n in range(n_):
        for c in range(c_):
            for pixel in range(size * size):
                products = [gd[n, oc, o] * wd.reshape(oc_, c_, -1)[oc, c, k]
                            for oc in range(oc_) for o in range(size * size)
                            for p, k in taps(o) if p == pixel]
                expected_dx[n, c, pixel] = half_partial_sums(torch.stack(products))
    expected_dw = torch.zeros(oc_, c_, k_ * k_, dtype=torch.float16)
    for oc in range(oc_):
        for c in range(c_):
            for k in range(k_ * k_):
                products = [gd[n, oc, o] * xd[n, c, p] for n in range(n_)
                            for o in range(size * size) for p, kk in taps(o)
                            if kk == k and p is not None]
                expected_dw[oc, c, k] = half_partial_sums(torch.stack(products))
    assert torch.equal(dx.reshape(expected_dx.shape), expected_dx)
    assert torch.equal(dw.reshape(expected_dw.shape), expected_dw)


def test_half_partials_train_and_halve_the_partials_memory():
    torch.manual_seed(0)
    data = batches(3)

    def train(partials):
        torch.manual_seed(0)
        model = Classifier(features=16, hidden=256).half()
        trainer = popsim.trainingModel(model, partials_options(partials),
                                       torch.optim.SGD(model.parameters(), lr=0.1))
        losses = [trainer(x, labels)[1].item() for x, labels in data]
        steps = trainer._executable.program()
        return losses, {s.op: s.temporary_bytes for s in steps if s.op.startswith(
            "linear")}

    half_losses, half_temporaries = train(torch.float16)
    single_losses, single_temporaries = train(torch.float32)
    assert half_losses != single_losses
    assert half_losses == pytest.approx(single_losses, rel=0.01)
    for op, bytes_ in single_temporaries.items():
        assert half_temporaries[op] < bytes_
