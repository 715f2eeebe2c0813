"""Where the weights are while a training model runs.

The device holds the weights that count while training; the host model is
updated lazily when used, explicitly with copyWeightsToHost(), and the other
way with copyWeightsToDevice() (or the executor's load_state_dict()). Inference models of the same host model see
trained weights; detaching, attaching and destroying keep the weights and the
optimizer state. Each test checks against eager PyTorch training the same
schedule.
"""

import copy
import pickle

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import popsim
from conftest import assert_close
from models import WithLoss


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        # No bias before a batch norm: its exact gradient is zero, so Adam
        # would turn rounding noise into full steps (see test_training.py).
        self.conv = nn.Conv2d(1, 4, 3, bias=False)
        self.norm = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        return self.fc(F.relu(self.norm(self.conv(x))).flatten(1))


def batches(count, batch=4):
    return [(torch.randn(batch, 1, 8, 8), torch.randint(0, 5, (batch,))) for _ in range(count)]


def adam(model, lr=1e-2):
    return torch.optim.Adam(model.parameters(), lr=lr, eps=1e-6)


class Pair:
    """A popsim training model and an eager copy trained on the same batches."""

    def __init__(self, make_optimizer=adam):
        self.model = Classifier()
        self.eager = copy.deepcopy(self.model)
        self.optimizer = make_optimizer(self.model)
        self.eager_optimizer = make_optimizer(self.eager)
        self.trainer = popsim.trainingModel(WithLoss(self.model), popsim.Options(), self.optimizer)

    def step(self, x, labels):
        _, loss = self.trainer(x, labels)
        self.eager_optimizer.zero_grad()
        eager_loss = F.cross_entropy(self.eager(x), labels)
        eager_loss.backward()
        self.eager_optimizer.step()
        assert_close(loss, eager_loss.detach())

    def assert_host_matches_eager(self):
        state = self.model.state_dict()
        for name, expected in self.eager.state_dict().items():
            assert_close(state[name], expected)


def test_host_model_is_updated_lazily_when_used():
    pair = Pair()
    weight = pair.model.fc.weight  # the Parameter object, not a copy
    before = weight.detach().clone()
    pair.step(*batches(1)[0])
    # Nothing touched the host model yet: its tensors still hold the old values.
    assert torch.equal(weight.detach(), before)
    # Reading the parameter through the module copies all weights home once.
    assert_close(pair.model.fc.weight.detach(), pair.eager.fc.weight.detach())
    assert_close(pair.model.conv.weight.detach(), pair.eager.conv.weight.detach())
    assert torch.equal(weight.detach(), pair.model.fc.weight.detach())


@pytest.mark.parametrize("use", ["state_dict", "parameters", "named_buffers", "call"])
def test_each_way_of_using_the_host_model_copies_trained_weights(use):
    pair = Pair()
    for x, labels in batches(3):
        pair.step(x, labels)
    x = torch.randn(2, 1, 8, 8)
    if use == "state_dict":
        pair.model.state_dict()
    elif use == "parameters":
        list(pair.model.parameters())
    elif use == "named_buffers":
        dict(pair.model.named_buffers())
    else:
        pair.model.eval()
        pair.eager.eval()
        assert_close(pair.model(x), pair.eager(x))
    pair.assert_host_matches_eager()


def test_copy_weights_to_host_updates_tensors_held_elsewhere():
    pair = Pair()
    running_mean = pair.model.norm.running_mean
    for x, labels in batches(2):
        pair.step(x, labels)
    pair.trainer.copyWeightsToHost()
    assert_close(running_mean, pair.eager.norm.running_mean)


def test_copy_weights_to_device_continues_training_from_host_edits():
    pair = Pair()
    data = batches(4)
    for x, labels in data[:2]:
        pair.step(x, labels)
    with torch.no_grad():
        for model in (pair.model, pair.eager):
            model.fc.weight.mul_(0.5)
            model.norm.running_var.fill_(2.0)
    pair.trainer.copyWeightsToDevice()
    for x, labels in data[2:]:
        pair.step(x, labels)
    pair.assert_host_matches_eager()


def test_load_state_dict_on_the_executor_reaches_the_device():
    pair = Pair()
    data = batches(4)
    for x, labels in data[:2]:
        pair.step(x, labels)
    saved = copy.deepcopy(pair.trainer.state_dict())  # WithLoss's: model.<name>
    pair.step(*data[2])
    pair.trainer.load_state_dict(saved)  # back to the weights after two steps
    pair.eager.load_state_dict({name[len("model."):]: value for name, value in saved.items()})
    pair.step(*data[3])  # compares the loss: computed with the loaded weights
    pair.assert_host_matches_eager()


def test_inference_model_of_the_same_host_model_sees_trained_weights():
    pair = Pair()
    inference = popsim.inferenceModel(pair.model.eval())
    x = torch.randn(4, 1, 8, 8)
    inference(x)  # compiled with the initial weights, in eval mode
    pair.model.train()  # the training model compiles in train mode; the inference one stays
    for batch in batches(3):
        pair.step(*batch)
        pair.eager.eval()
        assert_close(inference(x), pair.eager(x))
        pair.eager.train()


def test_copy_weights_to_host_of_an_inference_model_keeps_the_training_since():
    # The inference model's device holds the weights of its last call: its explicit copy
    # home takes the training model's steps first instead of undoing them.
    pair = Pair()
    inference = popsim.inferenceModel(pair.model.eval())
    inference(torch.randn(4, 1, 8, 8))
    pair.model.train()
    for batch in batches(2):
        pair.step(*batch)
    pair.assert_host_matches_eager()  # (reading the host model copies the steps home)
    inference.copyWeightsToHost()
    pair.assert_host_matches_eager()


def test_copy_weights_to_host_if_needed_says_whether_it_copied():
    pair = Pair()
    assert pair.trainer.copyWeightsToHostIfNeeded() is False  # not compiled
    pair.step(*batches(1)[0])
    assert pair.trainer.copyWeightsToHostIfNeeded() is True
    assert pair.trainer.copyWeightsToHostIfNeeded() is False
    pair.step(*batches(1)[0])
    assert pair.model.copyWeightsToHostIfNeeded() is True  # the host model has it too
    pair.assert_host_matches_eager()


def test_detach_and_attach_keep_weights_and_optimizer_state():
    pair = Pair()
    data = batches(6)
    for x, labels in data[:3]:
        pair.step(x, labels)
    pair.trainer.detachFromDevice()
    assert not pair.trainer.isAttachedToDevice()
    # Detaching copies the optimizer state into the torch optimizer too.
    for parameter, eager_parameter in zip(pair.model.parameters(), pair.eager.parameters()):
        state = pair.optimizer.state[parameter]
        eager_state = pair.eager_optimizer.state[eager_parameter]
        assert_close(state["exp_avg"], eager_state["exp_avg"])
        assert_close(state["exp_avg_sq"], eager_state["exp_avg_sq"])
        assert float(state["step"]) == float(eager_state["step"]) == 3
    pair.trainer.attachToDevice()
    pair.step(*data[3])
    pair.trainer.detachFromDevice()
    for x, labels in data[4:]:
        pair.step(x, labels)  # calling a detached model attaches it again
    assert pair.trainer.isAttachedToDevice()
    pair.assert_host_matches_eager()


def test_destroy_copies_weights_and_optimizer_state_home_and_training_resumes():
    pair = Pair()
    data = batches(5)
    for x, labels in data[:3]:
        pair.step(x, labels)
    pair.trainer.destroy()
    # The host model is a plain model again, with the trained weights.
    assert type(pair.model) is Classifier
    pair.assert_host_matches_eager()
    # A new training model resumes from the weights and Adam's moments and step count.
    pair.trainer = popsim.trainingModel(WithLoss(pair.model), popsim.Options(), pair.optimizer)
    for x, labels in data[3:]:
        pair.step(x, labels)
    pair.assert_host_matches_eager()


def test_a_training_model_collected_during_another_trace_copies_its_weights_home_after_it():
    import gc

    model = Classifier()
    eager = copy.deepcopy(model)
    eager_optimizer = torch.optim.SGD(eager.parameters(), lr=0.01)  # popsim's default
    trainer = popsim.trainingModel(WithLoss(model))
    for x, labels in batches(2):
        trainer(x, labels)
        eager_optimizer.zero_grad()
        F.cross_entropy(eager(x), labels).backward()
        eager_optimizer.step()
    weights = model.state_dict()  # the host model's tensors (their storage)
    model.cycle = [trainer]  # a reference cycle: only the garbage collector frees the two
    del trainer, model

    class Collecting(nn.Module):
        def forward(self, x):
            gc.collect()  # drops the training model in the middle of this trace
            return x * 2

    popsim.inferenceModel(Collecting())(torch.ones(2, 3))
    # The dropped model copied its trained weights home once the trace was over.
    for name, expected in eager.state_dict().items():
        assert_close(weights[name], expected)


def test_set_optimizer_changes_the_learning_rate_without_recompiling():
    pair = Pair(lambda model: torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    data = batches(6)
    for x, labels in data[:2]:
        pair.step(x, labels)
    compilation = pair.trainer.compilationTime()
    for lr in (0.01, 0.3):
        for optimizer in (pair.optimizer, pair.eager_optimizer):
            optimizer.param_groups[0]["lr"] = lr
        pair.trainer.setOptimizer(pair.optimizer)
        for x, labels in data[2:4] if lr == 0.01 else data[4:]:
            pair.step(x, labels)
    assert pair.trainer.compilationTime() == compilation
    pair.assert_host_matches_eager()


def test_set_optimizer_follows_a_learning_rate_scheduler():
    pair = Pair()
    schedulers = [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
                  for optimizer in (pair.optimizer, pair.eager_optimizer)]
    for x, labels in batches(4):
        pair.step(x, labels)
        for scheduler in schedulers:
            scheduler.step()
        pair.trainer.setOptimizer(pair.optimizer)
    pair.assert_host_matches_eager()


@pytest.mark.parametrize("reattach", ["attachToDevice", "call"])
def test_set_optimizer_on_a_detached_model_holds_after_it_attaches_again(reattach, recwarn):
    """PopTorch's epoch loop: train, detach to validate, step the scheduler, setOptimizer;
    attaching again restores the device's state, but not the old hyper-parameters."""
    pair = Pair(lambda model: torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    schedulers = [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.1)
                  for optimizer in (pair.optimizer, pair.eager_optimizer)]
    for x, labels in batches(3):
        pair.step(x, labels)
        pair.trainer.detachFromDevice()
        for scheduler in schedulers:
            scheduler.step()
        pair.trainer.setOptimizer(pair.optimizer)
        if reattach == "attachToDevice":
            pair.trainer.attachToDevice()
    pair.step(*batches(1)[0])
    pair.assert_host_matches_eager()
    assert not [w for w in recwarn if "hyper-parameters changed" in str(w.message)]


def test_a_nan_hyperparameter_given_to_the_device_is_no_change(recwarn):
    pair = Pair(lambda model: torch.optim.SGD(model.parameters(), lr=0.1))
    pair.trainer(*batches(1)[0])
    pair.optimizer.param_groups[0]["lr"] = float("nan")
    pair.trainer.setOptimizer(pair.optimizer)
    pair.trainer(*batches(1)[0])
    assert not [w for w in recwarn if "hyper-parameters changed" in str(w.message)]
    pair.optimizer.param_groups[0]["lr"] = 0.2  # changed without setOptimizer: warned
    with pytest.warns(UserWarning, match=r"parameter group 0's lr is 0\.2, the device's nan"):
        pair.trainer(*batches(1)[0])


def test_a_training_model_dropped_without_destroy_leaves_its_weights_home():
    pair = Pair()
    for x, labels in batches(2):
        pair.step(x, labels)
    pair.trainer = None  # the only reference: the training model is collected
    assert type(pair.model) is Classifier
    pair.assert_host_matches_eager()
    # Its optimizer state went home too: a new training model resumes.
    pair.trainer = popsim.trainingModel(WithLoss(pair.model), popsim.Options(), pair.optimizer)
    pair.step(*batches(1)[0])
    pair.assert_host_matches_eager()


def test_a_destroyed_training_model_that_compiles_again_is_registered_again():
    pair = Pair()
    pair.step(*batches(1)[0])
    pair.trainer.destroy()
    pair.step(*batches(1)[0])  # compiles again
    with pytest.raises(popsim.InputError, match="already wrapped"):
        popsim.trainingModel(pair.trainer.model)
    pair.assert_host_matches_eager()


def test_eval_and_train_on_a_training_model_switch_batch_norm_and_keep_optimizer_state():
    pair = Pair()
    data = batches(6)
    for x, labels in data[:2]:
        pair.step(x, labels)
    # eval() freezes the batch norm (running statistics, no updates) in both;
    # Adam's moments and step count carry over the recompilation.
    assert pair.trainer.eval() is pair.trainer
    assert not pair.model.norm.training
    pair.eager.eval()
    for x, labels in data[2:4]:
        pair.step(x, labels)
    pair.assert_host_matches_eager()
    pair.trainer.train()
    pair.eager.train()
    for x, labels in data[4:]:
        pair.step(x, labels)
    pair.assert_host_matches_eager()


def test_flags_set_on_the_users_model_leave_the_training_model_as_it_compiled():
    """model.eval() to validate with an inference model, then training again:
    as PopTorch's executors, the training model keeps the mode it compiled
    with (its batch norm keeps training), whatever the user's module flags
    say meanwhile; the inference model runs in eval mode."""
    pair = Pair()
    data = batches(4)
    pair.step(*data[0])
    pair.model.eval()  # the user's module, not the executor
    validation = popsim.inferenceModel(pair.model)
    pair.eager.eval()
    assert_close(validation(data[1][0]), pair.eager(data[1][0]))
    pair.eager.train()
    for x, labels in data[1:3]:  # still training mode: batch statistics, updated running ones
        pair.step(x, labels)
    pair.assert_host_matches_eager()
    pair.trainer.destroy()  # compiling again keeps the training model's own flags too
    pair.step(*data[3])
    pair.assert_host_matches_eager()
    assert not pair.model.training  # the user's flags are left as the user set them


def assert_same_optimizer_state(actual, expected):
    assert actual["param_groups"] == expected["param_groups"]
    assert actual["state"].keys() == expected["state"].keys()
    for index, state in expected["state"].items():
        assert actual["state"][index].keys() == state.keys()
        for key, value in state.items():
            assert_close(actual["state"][index][key], value)


def test_optimizer_state_dict_reads_the_device_state():
    pair = Pair()
    for x, labels in batches(3):
        pair.step(x, labels)
    state = pair.optimizer.state_dict()  # no copyWeightsToHost() or destroy() needed
    assert_same_optimizer_state(state, pair.eager_optimizer.state_dict())
    assert float(state["state"][0]["step"]) == 3


def test_a_checkpoint_of_weights_and_optimizer_state_round_trips():
    pair = Pair()
    data = batches(6)
    for x, labels in data[:2]:
        pair.step(x, labels)
    saved = copy.deepcopy((pair.trainer.state_dict(), pair.optimizer.state_dict()))
    eager_saved = copy.deepcopy((pair.eager.state_dict(), pair.eager_optimizer.state_dict()))
    for x, labels in data[2:4]:
        pair.step(x, labels)
    # Back to the checkpoint, in both: the next steps are the ones after step 2.
    pair.trainer.load_state_dict(saved[0])
    pair.optimizer.load_state_dict(saved[1])
    pair.eager.load_state_dict(eager_saved[0])
    pair.eager_optimizer.load_state_dict(eager_saved[1])
    for x, labels in data[4:]:
        pair.step(x, labels)
    pair.assert_host_matches_eager()
    assert_same_optimizer_state(pair.optimizer.state_dict(), pair.eager_optimizer.state_dict())


def test_an_optimizer_in_use_pickles_and_copies_as_its_own_class():
    pair = Pair()
    for x, labels in batches(2):
        pair.step(x, labels)
    assert isinstance(pair.optimizer, torch.optim.Adam)
    for copied in (copy.deepcopy(pair.optimizer), pickle.loads(pickle.dumps(pair.optimizer))):
        assert type(copied) is torch.optim.Adam
    pair.trainer.destroy()
    assert type(pair.optimizer) is torch.optim.Adam
    assert float(pair.optimizer.state_dict()["state"][0]["step"]) == 2


def test_the_host_models_destroy_unwraps_it_and_the_executor_wraps_again():
    """As PopTorch: a trained host model's destroy() is its training model's; the
    destroyed executor can be wrapped again, training resumes where it stopped,
    and the destroyed one has no weights to copy."""
    pair = Pair()
    data = batches(4)
    for x, labels in data[:2]:
        pair.step(x, labels)
    wrapped = pair.trainer.model
    wrapped.destroy()
    assert not pair.trainer.isCompiled() and not hasattr(wrapped, "destroy")
    pair.assert_host_matches_eager()
    destroyed = pair.trainer
    with pytest.raises(popsim.InputError, match="has not been compiled or has been destroyed"):
        destroyed.copyWeightsToHost()
    with pytest.raises(popsim.InputError, match="has not been compiled or has been destroyed"):
        destroyed.copyWeightsToDevice()
    pair.trainer = popsim.trainingModel(destroyed, popsim.Options(), pair.optimizer)
    assert pair.trainer.model is wrapped
    for x, labels in data[2:]:
        pair.step(x, labels)
    pair.assert_host_matches_eager()
    with pytest.raises(popsim.InputError, match="already wrapped"):
        popsim.trainingModel(wrapped, popsim.Options(), pair.optimizer)


class OwnDestroy(Classifier):
    def destroy(self):
        return "the model's own"


def test_a_models_own_destroy_is_kept():
    model = OwnDestroy()
    trainer = popsim.trainingModel(WithLoss(model), popsim.Options(), adam(model))
    trainer(*batches(1)[0])
    assert model.destroy() == "the model's own" and trainer.isCompiled()
    trainer.destroy()
