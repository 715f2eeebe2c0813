"""Every optimizer setting, parameter groups and accumulation reductions
against eager PyTorch, on a small MLP for six steps."""

import copy
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import popsim
from conftest import assert_close


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(12, 16)
        self.out = nn.Linear(16, 4)

    def forward(self, x, labels):
        output = self.out(torch.tanh(self.hidden(x)))
        return output, F.cross_entropy(output, labels)


def batches(steps, per_step):
    return [(torch.randn(3 * per_step, 12), torch.randint(0, 4, (3 * per_step,)))
            for _ in range(steps)]


def train_both(make_optimizer, steps=6, accumulation=1, reduction=None, model=None, clip=None,
               opts=None):
    """Trains with popsim and eagerly (same weights, data and schedule); returns both models.
    With `clip`, eager PyTorch clips with clip_grad_norm_ before each step."""
    model = model if model is not None else Mlp()
    eager = copy.deepcopy(model)
    opts = opts if opts is not None else popsim.Options()
    opts.Training.gradientAccumulation(accumulation)
    if reduction is not None:
        opts.Training.accumulationAndReplicationReductionType(reduction)
    trainer = popsim.trainingModel(model, opts, make_optimizer(model))
    eager_optimizer = make_optimizer(eager)
    divisor = accumulation if reduction != popsim.ReductionType.Sum else 1
    for x, labels in batches(steps, accumulation):
        trainer(x, labels)
        eager_optimizer.zero_grad()
        for micro_x, micro_labels in zip(x.chunk(accumulation), labels.chunk(accumulation)):
            (eager(micro_x, micro_labels)[1] / divisor).backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(eager.parameters(), clip)
        eager_optimizer.step()
    return model, eager


def assert_same_parameters(model, eager):
    for (name, actual), expected in zip(model.named_parameters(), eager.parameters()):
        assert_close(actual.detach(), expected.detach(), rtol=1e-5, atol=1e-6,
                     msg=lambda message: f"{name}: {message}")


OPTIMIZERS = {
    "sgd": lambda m: torch.optim.SGD(m.parameters(), lr=0.1),
    "sgd_momentum_dampening": lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9,
                                                        dampening=0.2),
    "sgd_nesterov_weight_decay": lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9,
                                                           nesterov=True, weight_decay=0.01),
    "sgd_maximize": lambda m: torch.optim.SGD(m.parameters(), lr=0.01, maximize=True),
    "adam": lambda m: torch.optim.Adam(m.parameters(), lr=0.01),
    "adam_amsgrad_weight_decay": lambda m: torch.optim.Adam(m.parameters(), lr=0.01,
                                                            amsgrad=True, weight_decay=0.01),
    "adam_maximize_betas": lambda m: torch.optim.Adam(m.parameters(), lr=0.01, maximize=True,
                                                      betas=(0.8, 0.95)),
    "adamw": lambda m: torch.optim.AdamW(m.parameters(), lr=0.01, weight_decay=0.1),
    "adamw_amsgrad": lambda m: torch.optim.AdamW(m.parameters(), lr=0.01, amsgrad=True),
    "rmsprop": lambda m: torch.optim.RMSprop(m.parameters(), lr=0.01),
    "rmsprop_centered_momentum": lambda m: torch.optim.RMSprop(m.parameters(), lr=0.01,
                                                               centered=True, momentum=0.5),
    "rmsprop_weight_decay_alpha": lambda m: torch.optim.RMSprop(m.parameters(), lr=0.01,
                                                                alpha=0.9, weight_decay=0.01),
    "popsim_sgd_scaling": lambda m: popsim.optim.SGD(m.parameters(), lr=0.1, momentum=0.5,
                                                     loss_scaling=128.0, velocity_scaling=16.0),
    "popsim_adamw_extras": lambda m: popsim.optim.AdamW(m.parameters(), lr=0.01,
                                                        accum_type=torch.float32,
                                                        max_grad_norm=float("inf")),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_settings_match_eager(name):
    assert_same_parameters(*train_both(OPTIMIZERS[name]))


def test_parameter_groups_have_their_own_settings():
    def make(model):
        return torch.optim.SGD([
            {"params": model.hidden.parameters(), "lr": 0.2, "momentum": 0.9},
            {"params": model.out.parameters()},  # defaults: no momentum
        ], lr=0.05)

    assert_same_parameters(*train_both(make))


def test_frozen_and_unlisted_parameters_stay_unchanged():
    model = Mlp()
    model.hidden.bias.requires_grad_(False)
    initial = copy.deepcopy(model)
    trained, eager = train_both(lambda m: torch.optim.Adam(m.out.parameters(), lr=0.01),
                                model=model)
    assert torch.equal(trained.hidden.weight, initial.hidden.weight)  # not in the optimizer
    assert torch.equal(trained.hidden.bias, initial.hidden.bias)  # requires_grad=False
    assert_same_parameters(trained, eager)


def test_default_optimizer_is_sgd_with_lr_0_01():
    model = Mlp()
    eager = copy.deepcopy(model)
    trainer = popsim.trainingModel(model)
    optimizer = torch.optim.SGD(eager.parameters(), lr=0.01)
    for x, labels in batches(3, 1):
        trainer(x, labels)
        optimizer.zero_grad()
        eager(x, labels)[1].backward()
        optimizer.step()
    assert_same_parameters(model, eager)


@pytest.mark.parametrize("reduction", [popsim.ReductionType.Mean, popsim.ReductionType.Sum])
def test_accumulated_gradients_are_averaged_or_summed(reduction):
    optimizer = OPTIMIZERS["sgd_momentum_dampening"]
    assert_same_parameters(*train_both(optimizer, accumulation=3, reduction=reduction))


def test_training_output_modes():
    # 24 samples = deviceIterations 2 x gradientAccumulation 2 x micro-batches of 6.
    x, labels = torch.randn(24, 12), torch.randint(0, 4, (24,))
    opts = popsim.Options().deviceIterations(2)
    opts.Training.gradientAccumulation(2)
    # Training returns the last micro-batch's outputs by default (Final).
    output, loss = popsim.trainingModel(Mlp(), opts)(x, labels)
    assert output.shape == (6, 4) and loss.shape == ()
    every = popsim.trainingModel(Mlp(), opts.clone().outputMode(popsim.OutputMode.All))
    output, loss = every(x, labels)
    assert output.shape == (24, 4) and loss.shape == (4,)


CLIPPED = {
    "sgd_momentum": lambda m, norm: popsim.optim.SGD(m.parameters(), lr=0.1, momentum=0.9,
                                                     max_grad_norm=norm),
    "adam": lambda m, norm: popsim.optim.Adam(m.parameters(), lr=0.01, max_grad_norm=norm),
    "adamw": lambda m, norm: popsim.optim.AdamW(m.parameters(), lr=0.01, max_grad_norm=norm),
    "rmsprop": lambda m, norm: popsim.optim.RMSprop(m.parameters(), lr=0.01, momentum=0.5,
                                                    max_grad_norm=norm),
}


@pytest.mark.parametrize("accumulation", [1, 3])
@pytest.mark.parametrize("name", sorted(CLIPPED))
def test_max_grad_norm_clips_as_clip_grad_norm(name, accumulation):
    """max_grad_norm=0.05 clips every step (the gradients' norm is about 1);
    1e3 never does."""
    results = {}
    for norm in (0.05, 1e3):
        torch.manual_seed(0)
        trained, eager = train_both(lambda m: CLIPPED[name](m, norm), accumulation=accumulation,
                                    clip=norm)
        assert_same_parameters(trained, eager)
        results[norm] = trained
    assert not torch.allclose(results[0.05].out.weight, results[1e3].out.weight, atol=1e-3)


class BlockedMlp(Mlp):
    def forward(self, x, labels):
        with popsim.Block("hidden", ipu_id=0):
            hidden = torch.tanh(self.hidden(x))
        with popsim.Block("out", ipu_id=1):
            output = self.out(hidden)
            return output, F.cross_entropy(output, labels)


@pytest.mark.parametrize("reduction", [popsim.ReductionType.Mean, popsim.ReductionType.Sum])
def test_max_grad_norm_over_two_pipelined_ipus_takes_the_global_norm(reduction):
    """Each IPU sums its gradients' squares; every IPU's update reads both sums."""
    opts = popsim.Options()
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.SameAsIpu))
    trained, eager = train_both(lambda m: CLIPPED["sgd_momentum"](m, 0.05), accumulation=4,
                                reduction=reduction, model=BlockedMlp(), clip=0.05, opts=opts)
    assert_same_parameters(trained, eager)


def test_max_grad_norm_is_checked_and_compiled_in():
    model = Mlp()
    for bad in (0.0, -1.0, "1", True):
        with pytest.raises(popsim.OptionError, match=r"^SGD\(max_grad_norm=.*\): max_grad_norm "
                                                     r"must be a positive number"):
            popsim.optim.SGD(model.parameters(), max_grad_norm=bad)
    trainer = popsim.trainingModel(model, None, popsim.optim.SGD(model.parameters(), lr=0.1,
                                                                 max_grad_norm=1.0))
    x, labels = batches(1, 1)[0]
    trainer(x, labels)
    with pytest.raises(popsim.OptionError, match=r"setOptimizer cannot change max_grad_norm "
                                                 r"\(from 1\.0 to 2\.0\)"):
        trainer.setOptimizer(popsim.optim.SGD(model.parameters(), lr=0.1, max_grad_norm=2.0))
    trainer.setOptimizer(popsim.optim.SGD(model.parameters(), lr=0.01, max_grad_norm=1.0))


LAMBS = {
    "lamb": lambda m: popsim.optim.LAMB(m.parameters(), lr=0.01),
    "lamb_no_bias": lambda m: popsim.optim.LAMBNoBias(m.parameters(), lr=0.01, weight_decay=0.0),
    # a max_weight_norm below the weights' norms caps every trust ratio
    "lamb_max_weight_norm": lambda m: popsim.optim.LAMB(m.parameters(), lr=0.01,
                                                        max_weight_norm=0.5, betas=(0.8, 0.9)),
    "lamb_groups": lambda m: popsim.optim.LAMB([
        {"params": m.hidden.parameters(), "lr": 0.02, "weight_decay": 0.0},
        {"params": m.out.parameters(), "eps": 1e-6}], lr=0.01),
}


@pytest.mark.parametrize("accumulation", [1, 2])
@pytest.mark.parametrize("name", sorted(LAMBS))
def test_lamb_matches_its_eager_step(name, accumulation):
    """popsim.optim.LAMB's eager step() is PopTorch's formula; the device
    computes the same (the norms in double, so within float32 rounding)."""
    assert_same_parameters(*train_both(LAMBS[name], accumulation=accumulation))


def test_lamb_trust_ratio_follows_the_formula():
    """One step from known values, against the formula in float64."""
    weight = torch.nn.Parameter(torch.tensor([[3.0, -4.0]]))  # norm 5
    grad = torch.tensor([[0.5, 0.25]])
    optimizer = popsim.optim.LAMB([weight], lr=0.1, weight_decay=0.1)
    weight.grad = grad.clone()
    optimizer.step()
    m, v = 0.1 * grad.double(), 0.001 * grad.double() ** 2
    update = (m / 0.1) / ((v / 0.001).sqrt() + 1e-8) + 0.1 * torch.tensor([[3.0, -4.0]]).double()
    expected = torch.tensor([[3.0, -4.0]]).double() - 0.1 * (5.0 / update.norm()) * update
    assert_close(weight.detach().double(), expected, rtol=1e-6, atol=1e-7)


def test_lamb_max_weight_norm_zero_stops_training_until_set_optimizer_raises_it():
    """PopTorch's documented cap on phi(norm(p)): 0 makes every trust ratio 0, so nothing
    moves, on the device as in eager step(); a zero-initialised parameter (norm 0 before the
    cap) still takes trust 1. setOptimizer then lifts the cap without recompiling."""
    model = Mlp()
    nn.init.zeros_(model.out.bias)
    before = copy.deepcopy(model)
    optimizer = popsim.optim.LAMB(model.parameters(), lr=0.01, max_weight_norm=0.0)
    trainer = popsim.trainingModel(model, None, optimizer)
    eager = copy.deepcopy(model)
    eager_optimizer = popsim.optim.LAMB(eager.parameters(), lr=0.01, max_weight_norm=0.0)
    for x, labels in batches(3, 1):
        trainer(x, labels)
        eager_optimizer.zero_grad()
        eager(x, labels)[1].backward()
        eager_optimizer.step()
    trainer.copyWeightsToHost()
    for name, start in before.named_parameters():
        moved = not torch.equal(dict(model.named_parameters())[name], start)
        assert moved == (name == "out.bias"), name
    assert_same_parameters(model, eager)
    optimizer.max_weight_norm = 100.0  # PopTorch 3's optimizer-wide attribute: every group
    assert [group["max_weight_norm"] for group in optimizer.param_groups] == [100.0]
    trainer.setOptimizer(optimizer)
    weight = model.hidden.weight.detach().clone()
    trainer(*batches(1, 1)[0])
    trainer.copyWeightsToHost()
    assert not torch.equal(model.hidden.weight, weight)


@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("accumulation", [1, 2])
def test_adamw_without_bias_correction_matches_its_eager_step(amsgrad, accumulation):
    """PopTorch's AdamW(bias_correction=False) on the device and in
    popsim.optim.AdamW's eager step() alike."""
    assert_same_parameters(*train_both(
        lambda m: popsim.optim.AdamW(m.parameters(), lr=0.01, bias_correction=False,
                                     amsgrad=amsgrad), accumulation=accumulation))


def test_adamw_without_bias_correction_follows_the_formula():
    """Two steps from known values, against the formula in float64: the
    moments are used as they are."""
    weight = torch.nn.Parameter(torch.tensor([[3.0, -4.0]]))
    grads = [torch.tensor([[0.5, 0.25]]), torch.tensor([[-1.0, 2.0]])]
    optimizer = popsim.optim.AdamW([weight], lr=0.1, weight_decay=0.1, bias_correction=False)
    expected = torch.tensor([[3.0, -4.0]]).double()
    m = v = torch.zeros(1, 2, dtype=torch.float64)
    for grad in grads:
        weight.grad = grad.clone()
        optimizer.step()
        expected = expected * (1 - 0.1 * 0.1)
        m = 0.9 * m + 0.1 * grad.double()
        v = 0.999 * v + 0.001 * grad.double() ** 2
        expected = expected - 0.1 * m / (v.sqrt() + 1e-8)
    assert_close(weight.detach().double(), expected, rtol=1e-6, atol=1e-7)
    with pytest.raises(popsim.OptionError, match=r"AdamW\(bias_correction='no'\): expected True "
                                                 r"or False"):
        popsim.optim.AdamW([weight], bias_correction="no")


@pytest.mark.parametrize("settings", [
    {}, {"momentum": 0.9}, {"centered": True, "weight_decay": 0.01},
    {"centered": True, "momentum": 0.5, "alpha": 0.9}])
@pytest.mark.parametrize("accumulation", [1, 2])
def test_rmsprop_tf_variant_matches_its_eager_step(settings, accumulation):
    """PopTorch's RMSprop(use_tf_variant=True) on the device and in
    popsim.optim.RMSprop's eager step() alike."""
    assert_same_parameters(*train_both(
        lambda m: popsim.optim.RMSprop(m.parameters(), lr=0.01, use_tf_variant=True, **settings),
        accumulation=accumulation))


def test_rmsprop_tf_variant_follows_tensorflows_formula():
    """Two steps from known values in float64: the square average starts at
    ones, eps sits inside the root, the buffer accumulates lr * g / root."""
    weight = torch.nn.Parameter(torch.tensor([[3.0, -4.0]]))
    grads = [torch.tensor([[0.5, 0.25]]), torch.tensor([[-1.0, 2.0]])]
    optimizer = popsim.optim.RMSprop([weight], lr=0.1, alpha=0.9, eps=1e-3, momentum=0.5,
                                     use_tf_variant=True)
    expected = torch.tensor([[3.0, -4.0]]).double()
    square, buffer = torch.ones(1, 2, dtype=torch.float64), torch.zeros(1, 2, dtype=torch.float64)
    for grad in grads:
        weight.grad = grad.clone()
        optimizer.step()
        square = 0.9 * square + 0.1 * grad.double() ** 2
        buffer = 0.5 * buffer + 0.1 * grad.double() / (square + 1e-3).sqrt()
        expected = expected - buffer
    assert_close(weight.detach().double(), expected, rtol=1e-6, atol=1e-7)
    assert float(optimizer.state[weight]["square_avg"][0, 0]) == pytest.approx(
        float(square[0, 0]), rel=1e-6)


def test_lamb_state_round_trips_and_checks_its_arguments():
    model = Mlp()
    optimizer = popsim.optim.LAMB(model.parameters(), lr=0.01)
    trainer = popsim.trainingModel(model, None, optimizer)
    for x, labels in batches(2, 1):
        trainer(x, labels)
    state = optimizer.state_dict()["state"]
    assert sorted(state[0]) == ["exp_avg", "exp_avg_sq", "step"] and float(state[0]["step"]) == 2
    for bad in ({"lr": -1.0}, {"betas": (0.9, 1.0)}, {"max_weight_norm": -1.0}):
        with pytest.raises(popsim.OptionError, match=r"^LAMB\(.*\): expected lr, eps and "
                                                     r"weight_decay >= 0"):
            popsim.optim.LAMB(model.parameters(), **bad)


def test_variable_attrs_mark_what_set_optimizer_may_change():
    """As PopTorch's: constructor arguments are variable, the rest constant."""
    model = Mlp()
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    attributes = optimizer.variable_attrs
    assert not attributes.isConstant("lr") and not attributes.isConstant("momentum")
    assert attributes.isConstant("weight_decay") and attributes.isConstant("dampening")
    assert optimizer.max_grad_norm == float("inf") and optimizer.loss_scaling == 1.0
    trainer = popsim.trainingModel(model, None, optimizer)
    x, labels = batches(1, 1)[0]
    trainer(x, labels)
    with pytest.raises(popsim.OptionError,
                       match=r"^setOptimizer cannot change weight_decay of parameter group 0 from "
                             r"0\.0 to 0\.01: it is a constant of the compiled program .* call "
                             r"optimizer\.variable_attrs\.markAsVariable\('weight_decay'\)"):
        trainer.setOptimizer(popsim.optim.SGD(model.parameters(), lr=0.1, momentum=0.9,
                                              weight_decay=0.01))
    trainer.setOptimizer(popsim.optim.SGD(model.parameters(), lr=0.05, momentum=0.5))

    marked = popsim.optim.Adam(Mlp().parameters(), lr=0.01)
    marked.variable_attrs.markAsVariable("weight_decay")
    marked.variable_attrs.markAsConstant("lr")
    assert marked.variable_attrs.isConstant("lr") and not marked.variable_attrs.isConstant(
        "weight_decay")
    with pytest.raises(popsim.OptionError, match=r"variable_attrs: unknown attribute 'speed'"):
        marked.variable_attrs.markAsVariable("speed")


def test_lamb_no_bias_keeps_the_arguments_it_passes_on():
    """LAMBNoBias hands loss_scaling, max_weight_norm and the state dtypes to LAMB through
    **kwargs; they stay set, and variable, as LAMB's own."""
    params = [torch.nn.Parameter(torch.zeros(3))]
    no_bias = popsim.optim.LAMBNoBias(params, loss_scaling=128.0, max_weight_norm=3.0,
                                      accum_type=torch.float16)
    lamb = popsim.optim.LAMB(params, loss_scaling=128.0, max_weight_norm=3.0,
                             accum_type=torch.float16)
    for optimizer in (no_bias, lamb):
        assert optimizer.loss_scaling == 128.0 and optimizer.accum_type == torch.float16
        assert not optimizer.variable_attrs.isConstant("loss_scaling")
        assert not optimizer.variable_attrs.isConstant("max_weight_norm")
        assert optimizer.variable_attrs.isConstant("eps")


def test_state_dict_holds_the_devices_state_and_hyper_parameters_as_poptorchs():
    """state_dict()["ipu_state"] and ["ipu_param"]: None before the model
    compiles; then the device's optimizer state by PopTorch's names (the same
    values as "state": SGD's velocity Accl___, times the loss scaling of 1) and
    each parameter's compound scalars. A loaded "ipu_state" is written to the
    device: zeroed momentum buffers make the next step eager's from zero
    momentum."""
    torch.manual_seed(0)
    model = Mlp()
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    trainer = popsim.trainingModel(model, None, optimizer)
    assert optimizer.state_dict()["ipu_state"] is None
    data = batches(3, 1)
    for x, labels in data[:2]:
        trainer(x, labels)
    state = optimizer.state_dict()
    ipu_state, ipu_param = state["ipu_state"], state["ipu_param"]
    assert ipu_state and all(isinstance(k, str) and isinstance(v, torch.Tensor)
                             for k, v in ipu_state.items())
    buffers = [v for k, v in ipu_state.items() if k.startswith("Accl___model.")]
    assert len(buffers) == 4 and any(torch.equal(b, state["state"][0]["momentum_buffer"])
                                     for b in buffers)
    name = next(name for name, _ in model.named_parameters())
    # SGD with momentum is PopART's SGD2: its learning rate divided by the loss scaling.
    assert ipu_param[f"scaledLearningRate2___specific___model.{name}"].item() == \
        pytest.approx(0.1)
    assert ipu_param[f"scaledMomentum2___specific___model.{name}"].item() == pytest.approx(0.9)
    # Zero the device's momentum through ipu_state alone, then step once more.
    reference = copy.deepcopy(model)
    trainer.copyWeightsToHost()
    reference.load_state_dict(model.state_dict())
    zeroed = {k: torch.zeros_like(v) if k.startswith("Accl___") else v
              for k, v in ipu_state.items()}
    optimizer.load_state_dict({**state, "ipu_state": zeroed})
    trainer(*data[2])
    trainer.copyWeightsToHost()
    eager = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    reference(*data[2])[1].backward()
    eager.step()
    assert_same_parameters(model, reference)
    with pytest.raises(popsim.OptionError, match=r"ipu_state\['nothing'\] is not a state of this "
                                                 r"program"):
        optimizer.load_state_dict({**state, "ipu_state": {"nothing": torch.zeros(1)}})


class _Linear(torch.nn.Module):
    """A linear layer whose loss is its output's sum."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        out = self.lin(x)
        return out, popsim.identity_loss(out.sum(), reduction="none")


@pytest.mark.parametrize("kind", ["SGD", "Adam", "AdamW", "RMSprop", "LAMB"])
def test_ipu_state_and_param_have_poptorchs_names_and_popart_scalars(kind):
    """PopTorch's checkpoints name the device state as PopART does: accumulators per parameter
    (inside PopTorch's wrapper: "model." and the model's path), each variable hyper-parameter
    as the compound scalar PopART's update reads, and the loss scaling; constants are not
    listed."""
    lr, wd, ls = 0.05, 0.025, 0.75
    model = _Linear()
    optimizer = getattr(popsim.optim, kind)(model.parameters(), lr=lr, weight_decay=wd,
                                            loss_scaling=ls)
    trainer = popsim.trainingModel(model, optimizer=optimizer)
    assert optimizer.state_dict()["ipu_param"] is None
    trainer.compile(torch.randn(3))
    state = optimizer.state_dict()
    param, ipu_state = state["ipu_param"], state["ipu_state"]
    assert param["lossScaling_FLOAT"].item() == pytest.approx(ls)
    for name in ("lin.weight", "lin.bias"):
        key = f"___specific___model.{name}"
        if kind == "SGD":  # momentum a constant 0: PopART's SGD0
            assert set(param) == {"lossScaling_FLOAT"} | {
                f"{scalar}___specific___model.{n}" for n in ("lin.weight", "lin.bias")
                for scalar in ("scaledLearningRate0", "weightDecayScaleFactor0")}
            assert param["scaledLearningRate0" + key].item() == pytest.approx(lr / ls)
            assert param["weightDecayScaleFactor0" + key].item() == pytest.approx(1 - lr * wd)
            assert ipu_state == {}
            continue
        assert param["learningRate" + key].item() == pytest.approx(lr)
        assert param["weightDecay" + key].item() == pytest.approx(wd)
        gradient_scaling = "adaptiveGradientScaling" if kind == "RMSprop" else "adamGradientScaling"
        assert param[gradient_scaling + key].item() == pytest.approx(1 / ls)
        assert not any(k.startswith(("adamBeta", "adamEps", "adaptiveEps", "maxWeightNorm"))
                       for k in param)  # constants of the program
        assert f"Accl1___model.{name}" in ipu_state and f"Step___model.{name}" in ipu_state
    if kind != "SGD":  # a step changes the state
        trainer(torch.randn(3))
        after = optimizer.state_dict()["ipu_state"]
        assert not all(torch.equal(ipu_state[k], after[k]) for k in ipu_state)


def test_a_loaded_ipu_param_sets_the_hyper_parameters_its_scalars_give():
    """A checkpoint's ipu_param changes what its scalars give otherwise than its param_groups
    (PopART's inverse formulas): the next steps use it, and state_dict() reads it back."""
    torch.manual_seed(0)
    model = _Linear()
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.05, weight_decay=0.01)
    trainer = popsim.trainingModel(model, optimizer=optimizer)
    x = torch.randn(3)
    trainer(x)
    state = optimizer.state_dict()
    for key in state["ipu_param"]:
        if key.startswith("scaledLearningRate0"):  # lr / loss scaling (1): a new lr of 0.2
            state["ipu_param"][key] = torch.tensor(0.2)
    optimizer.load_state_dict(state)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.2)
    # weightDecayScaleFactor0 (1 - lr x weight decay) is as before, 1 - 0.05 x 0.01: with lr 0.2
    # it stands for a weight decay of 0.0025, as on PopART.
    decay = optimizer.param_groups[0]["weight_decay"]
    assert decay == pytest.approx(0.0025, rel=1e-4)  # (from the scalar in float32)
    trainer(x)
    trainer.copyWeightsToHost()
    reference = _Linear()
    reference.load_state_dict(model.state_dict())
    eager = torch.optim.SGD(reference.parameters(), lr=0.2, weight_decay=decay)
    reference(x)[1].backward()
    eager.step()
    trainer(x)
    trainer.copyWeightsToHost()
    assert_same_parameters(model, reference)
    read = optimizer.state_dict()["ipu_param"]
    assert read["scaledLearningRate0___specific___model.lin.bias"].item() == pytest.approx(0.2)
    # Parameters of one group given two learning rates: popsim keeps one per group.
    state["ipu_param"]["scaledLearningRate0___specific___model.lin.bias"] = torch.tensor(0.3)
    with pytest.raises(popsim.OptionError, match=(
            r"ipu_param\['scaledLearningRate0___specific___model\.lin\.(bias|weight)'\] is .* "
            r"two values for parameters of parameter group 0; popsim keeps one value per "
            r"parameter group")):
        optimizer.load_state_dict(state)


def test_a_loaded_ipu_param_is_read_with_its_own_loss_scaling():
    """A checkpoint of lr 0.2 and loss scaling 2 has SGD2's scaledLearningRate2 = 0.1, what lr
    0.1 with loss scaling 1 gives too: read with the checkpoint's loss scaling, it is lr 0.2."""
    from popsim.training.poptorch_state_names import StateNames
    names = StateNames("sgd", [["lin.weight", "lin.bias"]], {}, constant_loss_scaling=False)
    group = {"lr": 0.1, "momentum": 0.9, "dampening": 0.0, "weight_decay": 0.0}
    checkpoint = names.ipu_param([dict(group, lr=0.2)], grad_scale=1.0, loss_scaling=2.0)
    assert checkpoint["scaledLearningRate2___specific___model.lin.bias"].item() == \
        pytest.approx(0.1)
    updates, scaling = names.hyperparameters(checkpoint, [group], grad_scale=1.0,
                                             loss_scaling=1.0)
    assert scaling == 2.0 and updates[0]["lr"] == pytest.approx(0.2)
    assert "momentum" not in updates[0]  # as before


def test_sgd_with_momentum_names_its_weight_decay_as_popart_and_reads_it_back():
    """SGD with momentum (PopART's SGD2) keeps its velocity on the loss scaling's scale, so
    its weight decay term is scaledWeightDecay1 = (1 - dampening) x weight decay x loss
    scaling; a checkpoint's value is read back by the inverse, with the checkpoint's own
    dampening. RMSprop's smoothing constant, when variable, is adaptiveAlpha."""
    from popsim.training.poptorch_state_names import StateNames
    names = StateNames("sgd", [["lin.weight", "lin.bias"]], {}, constant_loss_scaling=False)
    group = {"lr": 0.1, "momentum": 0.9, "dampening": 0.5, "weight_decay": 0.01}
    param = names.ipu_param([group], grad_scale=1.0, loss_scaling=4.0)
    key = "scaledWeightDecay1___specific___model.lin.weight"
    assert param[key].item() == pytest.approx(0.5 * 0.01 * 4.0)
    # A checkpoint of weight decay 0.03 and dampening 0.25 (same loss scaling).
    checkpoint = names.ipu_param([dict(group, weight_decay=0.03, dampening=0.25)],
                                 grad_scale=1.0, loss_scaling=4.0)
    updates, scaling = names.hyperparameters(checkpoint, [group], grad_scale=1.0,
                                             loss_scaling=4.0)
    assert scaling is None
    assert updates[0]["dampening"] == pytest.approx(0.25)
    assert updates[0]["weight_decay"] == pytest.approx(0.03)
    rmsprop = StateNames("rmsprop", [["lin.weight"]], {}, constant_loss_scaling=True)
    param = rmsprop.ipu_param([{"lr": 0.1, "alpha": 0.95, "eps": 1e-8, "momentum": 0.0,
                                "weight_decay": 0.0}], grad_scale=1.0, loss_scaling=1.0)
    assert param["adaptiveAlpha___specific___model.lin.weight"].item() == pytest.approx(0.95)


def test_float16_accumulators_and_velocity_round_as_the_device_stores_them():
    """accum_type and velocity_accum_type float16: each micro-batch's gradient
    is added to a float16 accumulator (rounded), and the momentum buffer is
    stored rounded to float16; the update itself computes in float32 (from
    the stored values), as an eager reference that rounds there shows."""
    torch.manual_seed(0)
    model = Mlp()
    reference = copy.deepcopy(model)
    opts = popsim.Options()
    opts.Training.gradientAccumulation(2)
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.1, momentum=0.9,
                                 accum_type=torch.float16, velocity_accum_type=torch.float16)
    trainer = popsim.trainingModel(model, opts, optimizer)
    velocity = {}
    for step, (x, labels) in enumerate(batches(3, 2)):
        trainer(x, labels)
        accumulators = {name: torch.zeros_like(p).half() for name, p in reference.named_parameters()}
        for micro_x, micro_labels in zip(x.chunk(2), labels.chunk(2)):
            reference.zero_grad()
            reference(micro_x, micro_labels)[1].backward()
            for name, p in reference.named_parameters():
                accumulators[name] = (accumulators[name].float() + p.grad).half()
        with torch.no_grad():
            for name, p in reference.named_parameters():
                d_p = accumulators[name].float() * 0.5
                buffer = d_p if step == 0 else velocity[name].float() * 0.9 + d_p
                p -= 0.1 * buffer
                velocity[name] = buffer.half()
    trainer.copyWeightsToHost()
    for (name, actual), expected in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-6, msg=name)
    state = optimizer.state_dict()
    assert state["state"][0]["momentum_buffer"].dtype == torch.float16


@pytest.mark.parametrize("make", [
    lambda m, t: popsim.optim.Adam(m.parameters(), lr=0.01, first_order_momentum_accum_type=t),
    lambda m, t: popsim.optim.LAMB(m.parameters(), lr=0.01, accum_type=t,
                                   second_order_momentum_accum_type=t),
    # (centred RMSprop's variance estimate, a difference of two float16
    # averages, is too coarse in float16 for a tolerance to mean anything)
    lambda m, t: popsim.optim.RMSprop(m.parameters(), lr=0.01, momentum=0.5, eps=1e-4,
                                      first_order_momentum_accum_type=t,
                                      second_order_momentum_accum_type=t),
])
def test_float16_optimizer_state_halves_its_memory_and_trains_close_to_float32(make):
    """The state PopTorch's type arguments name is float16 on the device (and
    in the state dict), takes half the bytes, and six steps stay within
    float16 state precision (1e-2) of float32 state."""
    half = Mlp()
    full = copy.deepcopy(half)
    opts = popsim.Options()
    opts.Training.gradientAccumulation(2)
    trainers = []
    data = batches(6, 2)
    for model, dtype in ((half, torch.float16), (full, torch.float32)):
        trainer = popsim.trainingModel(model, opts.clone(), make(model, dtype))
        for x, labels in data:
            trainer(x, labels)
        trainer.copyWeightsToHost()
        trainers.append(trainer)
    sizes = [t.memoryReport()["ipus"][0]["categories"] for t in trainers]
    assert sizes[0]["optimizer state"]["bytes"] < sizes[1]["optimizer state"]["bytes"]
    for actual, expected in zip(half.parameters(), full.parameters()):
        torch.testing.assert_close(actual, expected, rtol=0, atol=1e-2)
    dtypes = {value.dtype for value in trainers[0]._optimizer.state_dict()["ipu_state"].values()}
    assert torch.float16 in dtypes


def test_hyper_parameters_changed_without_set_optimizer_warn_once_naming_the_change():
    """As in PopTorch, the device keeps the hyper-parameters setOptimizer last gave it; a
    learning rate scheduler's step() without setOptimizer() is then named, once."""
    class Regression(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(3, 1)

        def forward(self, x, y):
            return F.mse_loss(self.linear(x), y)

    model = Regression()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.5)
    trainer = popsim.trainingModel(model, optimizer=optimizer)
    x, y = torch.randn(4, 3), torch.randn(4, 1)
    trainer(x, y)
    scheduler.step()
    trainer.setOptimizer(optimizer)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trainer(x, y)  # given to the device: no warning
    scheduler.step()
    with pytest.warns(UserWarning) as caught:
        trainer(x, y)
        trainer(x, y)
    assert [str(w.message) for w in caught] == [
        "The optimizer's hyper-parameters changed since they were last given to the device "
        "(parameter group 0's lr is 0.025, the device's 0.05): as in PopTorch, call "
        "setOptimizer(optimizer) on the training model after changing them (after a learning "
        "rate scheduler's step(), for one), or the device keeps training with the old ones."]
    assert caught[0].filename == __file__


def test_torchs_keywords_are_taken_and_poptorchs_base_class_names_them_all():
    # PopTorch's optimizers take torch's foreach, differentiable, capturable and fused (the
    # eager step's implementation choices; the device's step is popsim's).
    params = [torch.nn.Parameter(torch.randn(3))]
    made = [popsim.optim.SGD(params, lr=0.1, foreach=False, differentiable=False),
            popsim.optim.Adam(params, foreach=False, capturable=False, differentiable=False,
                              fused=False),
            popsim.optim.AdamW(params, foreach=False, capturable=False),
            popsim.optim.RMSprop(params, foreach=False, differentiable=False),
            popsim.optim.LAMB(params)]
    assert all(isinstance(optimizer, popsim.optim.Optimizer) for optimizer in made)
    assert made[0].param_groups[0]["foreach"] is False
