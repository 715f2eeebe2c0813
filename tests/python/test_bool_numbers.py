"""Python bools given to ops as numbers (frontend/bool_scalars.py): PyTorch 1.13's
tracer fails on `x.masked_fill(mask, True)`, `mask == True` and the like with an
internal assertion; popsim traces such models and computes them as eager does."""

import pytest
import torch
import torch.nn as nn

import popsim
from models import Function, assert_sgd_steps_match_eager

BOOL_NUMBERS = {
    "masked_fill": lambda x: x.masked_fill(x > 0, True),
    "masked_fill_of_bools": lambda x: torch.zeros(x.shape, dtype=torch.bool)
    .masked_fill(x > 0.5, True),
    "masked_fill_in_place": lambda x: (x * 1).masked_fill_(x > 0, False),
    "fill_": lambda x: torch.zeros(3, dtype=torch.bool).fill_(True) & (x[:3] > 0),
    "full": lambda x: torch.full((3,), True) & (x[:3] > 0),
    "full_keywords": lambda x: torch.full(size=(3,), fill_value=False) | (x[:3] > 0),
    "full_float": lambda x: torch.full((3,), True, dtype=torch.float) + x[:3],
    "new_full": lambda x: x.new_full((3,), False) + x[:3],
    "where_of_bools": lambda x: torch.where(x > 0, True, False),
    "where_of_a_tensor_and_a_bool": lambda x: torch.where(x > 0, x, True),
    "eq": lambda x: (x > 0) == True,  # noqa: E712 (the idiom under test)
    "eq_reflected": lambda x: True == (x > 0),  # noqa: E712
    "ne": lambda x: (x > 0) != False,  # noqa: E712
    "and": lambda x: (x > 0) & True,
    "add_to_int": lambda x: torch.add((x > 0).long(), True),
    "add_to_bool": lambda x: (x > 0) + True,
    "mul": lambda x: x * False,
    "index_fill": lambda x: (x > 0).index_fill(0, torch.tensor([0, 2]), True),
    "clamp": lambda x: x.clamp(min=False),
    "fill_diagonal_": lambda x: torch.zeros(3, 3, dtype=torch.bool).fill_diagonal_(True)
    & (x[:9].view(3, 3) > 0),
    "pow": lambda x: x ** True,
    # Flags stay bools beside a bool number.
    "flags_beside": lambda x: x.view(3, 4).masked_fill(x.view(3, 4) > 1, True).sum(1, True),
}


@pytest.mark.parametrize("name", sorted(BOOL_NUMBERS))
def test_a_bool_given_as_a_number_computes_as_eager(name):
    function = BOOL_NUMBERS[name]
    x = torch.randn(12)
    expected = function(x)
    got = popsim.inferenceModel(Function(function))(x)
    assert got.dtype == expected.dtype
    assert torch.equal(got, expected)


class AttentionWithBoolMask(nn.Module):
    """Attention scores masked with a bool made in forward(): keep = ones.masked_fill(...)."""

    def __init__(self):
        super().__init__()
        self.query = nn.Linear(6, 6)
        self.key = nn.Linear(6, 6)

    def forward(self, x, target):
        keep = torch.zeros(x.shape[0], x.shape[1], x.shape[1], dtype=torch.bool)
        keep = keep.masked_fill(torch.ones(x.shape[1], x.shape[1]).tril() > 0, True)
        scores = self.query(x) @ self.key(x).transpose(1, 2)
        probabilities = scores.masked_fill(keep == False, float("-inf")).softmax(-1)  # noqa: E712
        out = probabilities @ x
        return out, nn.functional.mse_loss(out, target)


def test_a_model_with_bool_numbers_trains_as_eager():
    torch.manual_seed(0)
    batches = [(torch.randn(2, 5, 6), torch.randn(2, 5, 6)) for _ in range(3)]
    assert_sgd_steps_match_eager(AttentionWithBoolMask, batches)
