"""Indexing by tensors beyond the case table (indexing_cases.py): training
through gathers and scatters against eager PyTorch, and the errors: indices
out of range at run time; reading with boolean masks, masked_select,
unique, nonzero, one_hot without num_classes and x[mask] = a value per
selected element (shapes that depend on the data) and fractional
max pooling (random regions); scatter with reduce, which PyTorch cannot
differentiate; and training through scatter_reduce's product, zeros
included."""

import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import popsim
from models import Function, assert_sgd_steps_match_eager
from popsim.compile.gradients import gradients
from test_gradients import Projected


class Lookup(nn.Module):
    """A model that reads and writes its weights through index tensors."""

    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(6, 4))
        self.head = nn.Linear(4, 3)
        self.register_buffer("rows", torch.tensor([5, 0, 5, 2]))
        self.register_buffer("targets", torch.tensor([[0, 0, 3, 1]] * 4))
        self.register_buffer("order", torch.tensor([[3, 2, 1, 0]] * 4))
        self.register_buffer("written", torch.tensor([1, 3]))
        self.register_buffer("columns", torch.tensor([0, 0, 1, 2]))

    def forward(self, x, target):
        picked = self.table.index_select(0, self.rows)  # [4, 4], row 5 twice
        mixed = picked.scatter_add(1, self.targets, x)
        mixed = torch.gather(mixed, 1, self.order)
        mixed = mixed.index_put((self.written,), mixed[self.rows[:2] - 2] * 0.5)
        out = self.head(mixed[:, self.columns])
        return out, F.cross_entropy(out, target)


def test_training_through_gathers_and_scatters_matches_eager():
    torch.manual_seed(0)
    batches = [(torch.randn(4, 4), torch.randint(0, 3, (4,))) for _ in range(3)]
    assert_sgd_steps_match_eager(Lookup, batches)


def test_an_index_out_of_range_is_an_execution_error():
    model = popsim.inferenceModel(Function(lambda x, i: torch.index_select(x, 0, i)))
    model(torch.randn(3, 2), torch.tensor([0, 2]))
    with pytest.raises(popsim.ExecutionError,
                       match=r"index_select at .*: index 3 \(at position 1 of the index\) is out "
                             r"of range for a dimension of size 3; indices must be in \[0, 3\)"):
        model(torch.randn(3, 2), torch.tensor([0, 3]))


def test_negative_indices_count_from_the_end_in_advanced_indexing():
    x = torch.arange(12.0).reshape(3, 4)
    index = torch.tensor([-1, 0, -3])
    model = popsim.inferenceModel(Function(lambda x, i: x[i, i]))
    torch.testing.assert_close(model(x, index), x[index, index])


@pytest.mark.parametrize("function,message", [
    (lambda x: x[x > 0], r"aten::index at .*: indexing with a boolean mask \(the result's shape "
                         r"depends on the data\); use torch.where"),
    (lambda x: torch.masked_select(x, x > 0), r"masked_select \(the result's size depends on "
                                              r"the data"),
    (lambda x: F.one_hot(x.long().abs()), r"OneHot num classes must be specified and must be "
                                          r"constant: one_hot without num_classes"),
    (lambda x: torch.unique(x), r"aten::_unique2 at .*: aten::_unique2 \(its output's size "
                                r"depends on the data"),
    (lambda x: torch.nonzero(x), r"aten::nonzero \(its output's size depends on the data"),
    (lambda x: torch.bincount(x.long().abs().flatten()),
     r"bincount without minlength \(its length, the largest value \+ 1, depends on the data\); "
     r"pass minlength=n with every value below n"),
    (lambda x: F.fractional_max_pool2d(x[None], 2, output_size=(1, 1)),
     r"aten::fractional_max_pool2d \(its pooling regions are drawn at random"),
])
def test_what_a_compiled_program_cannot_compute_is_refused_with_the_reason(function, message):
    with pytest.raises(popsim.UnsupportedOperationError, match=message):
        popsim.inferenceModel(Function(function))(torch.randn(2, 3))


def test_each_masked_element_takes_its_own_value_in_order():
    """x[mask] = values with one value per selected element (a multimodal model's image
    features put at its image tokens) runs as eager; another call's mask that selects
    another number of elements is an ExecutionError naming the assignment, never values
    out of place. After other dims (x[:, mask] = values) it is refused with the reason."""
    def assign(x, values):
        y = x.clone()
        y[x > 0] = values
        return y

    model = popsim.inferenceModel(Function(assign))
    x = torch.tensor([[1.0, -1.0, 2.0], [-3.0, 4.0, -5.0]])
    torch.testing.assert_close(model(x, torch.arange(3.0)), assign(x, torch.arange(3.0)))
    with pytest.raises(popsim.ExecutionError,
                       match=r"x\[mask\] = values: the mask selects another number of elements "
                             r"than values has \(3 along its first dim\)"):
        model(x.abs(), torch.arange(3.0))

    def assign_after_a_dim(x):
        y = x.clone()
        y[:, x[0] > 0] = torch.arange(4.0).reshape(2, 2)
        return y

    with pytest.raises(popsim.UnsupportedOperationError,
                       match=r"x\[\.\.\., mask\] = values with values f32\[2,2\] that give "
                             r"each selected element its own value, after other dims"):
        popsim.inferenceModel(Function(assign_after_a_dim))(
            torch.tensor([[1.0, -1.0, 2.0], [3.0, 4.0, 5.0]]))


def test_masked_scatter_checks_that_source_has_enough_elements_at_run_time():
    model = popsim.inferenceModel(Function(lambda x, m, source: x.masked_scatter(m, source)))
    mask = torch.tensor([[True, False, True], [False, False, True]])
    torch.testing.assert_close(model(torch.zeros(2, 3), mask, torch.arange(4.0)),
                               torch.zeros(2, 3).masked_scatter(mask, torch.arange(4.0)))
    with pytest.raises(popsim.ExecutionError,
                       match=r"masked_scatter: the mask has more true elements than source has "
                             r"elements \(4\)"):
        model(torch.zeros(2, 3), torch.ones(2, 3, dtype=torch.bool), torch.arange(4.0))


def test_one_hot_of_a_class_out_of_range_is_an_execution_error():
    model = popsim.inferenceModel(Function(lambda i: F.one_hot(i, 3)))
    torch.testing.assert_close(model(torch.tensor([2, 0])), F.one_hot(torch.tensor([2, 0]), 3))
    with pytest.raises(popsim.ExecutionError, match=r"index 3 \(at position 1 of the index\)"):
        model(torch.tensor([2, 3]))


class ScatterReduce(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.register_buffer("targets", torch.tensor([[0, 0, 1]] * 2))

    def forward(self, x):
        y = torch.zeros(2, 3).scatter(1, self.targets, self.linear(x), reduce="add")
        return popsim.identity_loss(y.sum(), "none")


def test_training_through_scatter_with_reduce_is_refused_as_eager_backward_refuses_it():
    with pytest.raises(popsim.UnsupportedOperationError,
                       match=r"scatter with reduce='add' at .*test_indexing.py:\d+ has no "
                             r"derivative \(PyTorch's backward raises here too\).*scatter_add"):
        popsim.trainingModel(ScatterReduce())(torch.randn(2, 3))


class ScatterProduct(nn.Module):
    """Products of ReLU outputs (some exactly zero: one or several per
    target) scattered into a base that has zeros too."""

    def __init__(self, include_self):
        super().__init__()
        self.include_self = include_self
        self.linear = nn.Linear(4, 6)
        self.register_buffer("targets", torch.tensor([[0, 0, 1, 3, 3, 3]] * 3))

    def forward(self, x, target):
        base = torch.relu(x[:, :4])
        y = base.scatter_reduce(1, self.targets, torch.relu(self.linear(x)), "prod",
                                include_self=self.include_self)
        return y, F.mse_loss(y, target)


@pytest.mark.parametrize("include_self", [True, False])
def test_training_through_scatter_reduce_prod_with_zeros_matches_eager(include_self):
    torch.manual_seed(1)
    batches = [(torch.randn(3, 4), torch.randn(3, 4)) for _ in range(3)]
    assert_sgd_steps_match_eager(lambda: ScatterProduct(include_self), batches)


def test_a_uint8_mask_masks_as_in_eager_pytorch():
    """x[mask] = v with a uint8 mask selects where the mask is nonzero, as eager
    PyTorch reads it (with its deprecation warning), though popsim holds the
    mask as int32; reading x[mask] is refused as a boolean mask is."""
    class Put(torch.nn.Module):
        def forward(self, t, mask, v):
            t = t.clone()
            t[mask] = v
            return t

    class Read(torch.nn.Module):
        def forward(self, t, mask):
            return t[mask]

    t = torch.arange(6.0)
    mask = torch.tensor([1, 0, 1, 0, 0, 1], dtype=torch.uint8)
    v = torch.tensor(-1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        expected = Put()(t, mask, v)
        assert torch.equal(expected, torch.tensor([-1.0, 1.0, -1.0, 3.0, 4.0, -1.0]))
        assert torch.equal(popsim.inferenceModel(Put())(t, mask, v), expected)
        with pytest.raises(popsim.UnsupportedOperationError, match="indexing with a boolean mask"):
            popsim.inferenceModel(Read())(t, mask)


class ConstantMask(torch.nn.Module):
    """x indexed by masks written in forward() (constants of the trace): their
    true elements are known when the model compiles."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, x):
        rows = torch.tensor([True, False, True])
        grid = torch.tensor([[True, False, False, True], [False, False, True, False],
                             [True, True, False, False]])
        if self.kind == "rows":
            return x[rows] * 2
        if self.kind == "whole":
            return x[grid]
        if self.kind == "columns":
            return x[:, torch.tensor([False, True, True, False])]
        if self.kind == "with_an_index":
            return x[rows, torch.tensor([3, 1])]
        if self.kind == "uint8":
            return x[rows.to(torch.uint8)]
        y = x.clone()
        y[grid] = torch.arange(5.0)  # one value per selected element
        return y


@pytest.mark.parametrize("kind", ["rows", "whole", "columns", "with_an_index", "uint8", "put"])
def test_a_constant_boolean_mask_indexes_as_eager(kind):
    """A mask known at compile time selects known elements, read or written,
    forward and backward, as eager PyTorch (x[mask] is x[mask.nonzero()])."""
    x = torch.randn(3, 4)
    module = ConstantMask(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # uint8 masks are deprecated
        expected = module(x)
        actual = popsim.inferenceModel(module)(x)
    torch.testing.assert_close(actual, expected)
    direction = torch.randn(expected.shape)
    leaf = x.clone().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        (module(leaf) * direction).sum().backward()
    grads, _ = gradients(Projected(module, direction), x)
    torch.testing.assert_close(next(iter(grads.values())), leaf.grad)


def test_bincount_checks_its_values_against_minlength_at_run_time():
    """With minlength n popsim counts into n bins: a value outside [0, n) is an
    ExecutionError naming bincount and minlength, never a wrong count."""
    model = popsim.inferenceModel(Function(lambda i: torch.bincount(i, minlength=4)))
    torch.testing.assert_close(model(torch.tensor([3, 1, 1, 0])), torch.tensor([1, 2, 0, 1]))
    with pytest.raises(popsim.ExecutionError, match=r"bincount: every value must be at least 0 "
                                                    r"and below minlength \(4\)"):
        model(torch.tensor([3, 1, 4, 0]))
