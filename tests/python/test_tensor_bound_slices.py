"""Slices whose bounds are tensors (t[e : e + n]) compile as dynamic slices, as PopTorch
compiles them: the start is data of the program, the length the example call's, checked on
every call. Results and gradients against eager PyTorch; the forms popsim cannot compile are
refused at the user's line."""

import copy

import pytest
import torch
import torch.nn as nn

import popsim
from conftest import assert_close


class Sliced(nn.Module):
    """f(t * w, e): the slice of a weighted tensor, so that training has a gradient."""

    def __init__(self, f, shape):
        super().__init__()
        self.f = f
        self.weight = nn.Parameter(torch.linspace(0.5, 1.5, int(torch.tensor(shape).prod()))
                                   .reshape(shape))

    def forward(self, t, e):
        return self.f(t * self.weight, e)


FORMS = {
    "add": (lambda t, e: t[e:e + 4], (8,), [1, 3]),
    "subtract": (lambda t, e: t[e - 4:e], (8,), [5, 8]),
    "step": (lambda t, e: t[e:e + 5:2], (8,), [0, 3]),
    "both_shifted": (lambda t, e: t[e + 3 - 2:e + 3 + 2], (8,), [0, 3]),
    "second_dimension": (lambda t, e: t[:, e:e + 2], (3, 6), [1, 4]),
    "after_an_int": (lambda t, e: t[1, e:e + 3], (3, 6), [0, 3]),
    "after_an_ellipsis": (lambda t, e: t[..., e:e + 2], (2, 3, 5), [2, 3]),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_slice_with_tensor_bounds_matches_eager_for_every_start(form):
    f, shape, starts = FORMS[form]
    model = Sliced(f, shape)
    t = torch.randn(*shape)
    inference = popsim.inferenceModel(model)
    for start in starts:  # compiled for the first, run for each
        e = torch.tensor([start])
        with torch.no_grad():
            assert_close(inference(t, e), model(t, e))


@pytest.mark.parametrize("form", ["add", "second_dimension"])
def test_training_through_a_slice_with_tensor_bounds_matches_eager(form):
    f, shape, starts = FORMS[form]
    model = Sliced(f, shape)
    eager = copy.deepcopy(model)

    class WithLoss(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, t, e):
            y = self.inner(t, e)
            return y, popsim.identity_loss((y * y).sum(), reduction="none")

    trainer = popsim.trainingModel(WithLoss(model), popsim.Options(),
                                   torch.optim.SGD(model.parameters(), lr=0.1))
    optimizer = torch.optim.SGD(eager.parameters(), lr=0.1)
    t = torch.randn(*shape)
    for start in starts:
        e = torch.tensor([start])
        trainer(t, e)
        optimizer.zero_grad()
        (eager(t, e) ** 2).sum().backward()
        optimizer.step()
    assert_close(model.weight.detach(), eager.weight.detach())


def test_a_slice_whose_length_changes_is_an_execution_error():
    model = popsim.inferenceModel(Sliced(lambda t, e: t[e:2 * e], (8,)))
    t = torch.randn(8)
    model(t, torch.tensor([2]))  # compiled 2 long
    with pytest.raises(popsim.ExecutionError,
                       match=r"the slice \[start : stop : 1\] of dimension 0, compiled as 2 long "
                             r"\(stop - start in the example call\), must keep that length: "
                             r"element 0 is 3"):
        model(t, torch.tensor([3]))


def test_a_slice_past_the_end_is_an_execution_error():
    model = popsim.inferenceModel(Sliced(lambda t, e: t[e:e + 4], (8,)))
    t = torch.randn(8)
    model(t, torch.tensor([0]))
    with pytest.raises(popsim.ExecutionError):
        model(t, torch.tensor([6]))


@pytest.mark.parametrize("f, message", [
    (lambda t, e: t[e:], "one tensor bound and one bound that is not a tensor"),
    (lambda t, e: t[2:e], "one tensor bound and one bound that is not a tensor"),
    (lambda t, e: t[e:e + 2:e], "step is a tensor"),
    (lambda t, e: t[e.float():e.float() + 2], "is a torch.float32 tensor of shape"),
    (lambda t, e: t.reshape(2, 4)[e:e + 1, e:e + 2], "several dimensions with tensor bounds"),
])
def test_slices_popsim_cannot_compile_are_refused_at_the_users_line(f, message):
    model = popsim.inferenceModel(Sliced(f, (8,)))
    with pytest.raises(popsim.UnsupportedOperationError,
                       match=message + r".*\(at .*test_tensor_bound_slices.py:\d+\)"):
        model(torch.randn(8), torch.tensor([1]))
