"""Python values PyTorch 1.13's tracer cannot take (frontend/traced_python_values.py):
bools given to ops as numbers (`x.masked_fill(mask, True)`, `mask == True`, ...), on
which it fails with an internal assertion, and sizes (0-d tensors while tracing) passed
where an op takes a list of ints (`F.max_pool1d(h, h.size(2))`), which it refuses with
a TypeError. popsim traces such models and computes them as eager does."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

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


SIZES_AS_NUMBERS = {
    "max_pool1d_over_time": lambda h: F.max_pool1d(h, h.size(2)).squeeze(2),
    "avg_pool1d_over_time": lambda h: F.avg_pool1d(h, h.size(-1)),
    "max_pool2d_square": lambda h: F.max_pool2d(h.unsqueeze(1), h.size(2) // 2),
    "roll_by_half": lambda h: h.roll(h.shape[0] // 2, 0),
    "adaptive_avg_pool1d": lambda h: F.adaptive_avg_pool1d(h, h.size(2) // 2),
    "adaptive_max_pool2d": lambda h: F.adaptive_max_pool2d(h, h.shape[-1] // 3),
    "interpolate_by_a_size_ratio": lambda h: F.interpolate(h, scale_factor=h.size(-1) / 4),
    "unfold_kernel_from_size": lambda h: F.unfold(h.unsqueeze(1), kernel_size=h.size(-1) // 2),
}


@pytest.mark.parametrize("name", sorted(SIZES_AS_NUMBERS))
def test_a_size_given_where_an_op_takes_numbers_computes_as_eager(name):
    function = SIZES_AS_NUMBERS[name]
    h = torch.randn(2, 8, 10)
    torch.testing.assert_close(popsim.inferenceModel(Function(function))(h), function(h),
                               rtol=1e-5, atol=1e-6)


class TextCnn(nn.Module):
    """Convolutions over token embeddings, each max-pooled over the whole sequence with
    F.max_pool1d(h, h.size(2)), as Kim's TextCNN is commonly written."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(20, 8)
        self.convolutions = nn.ModuleList([nn.Conv1d(8, 4, width) for width in (2, 3)])
        self.classifier = nn.Linear(8, 3)

    def forward(self, tokens, labels):
        x = self.embedding(tokens).transpose(1, 2)
        pooled = [F.max_pool1d(h, h.size(2)).squeeze(2)
                  for h in (torch.relu(conv(x)) for conv in self.convolutions)]
        logits = self.classifier(torch.cat(pooled, 1))
        return logits, F.cross_entropy(logits, labels)


def test_a_text_cnn_pooling_over_its_sequence_trains_as_eager():
    torch.manual_seed(0)
    batches = [(torch.randint(0, 20, (4, 9)), torch.randint(0, 3, (4,))) for _ in range(3)]
    assert_sgd_steps_match_eager(TextCnn, batches)


def test_a_type_error_of_the_model_itself_is_raised_as_eager_raises_it():
    def wrong(x):
        return x + "a"

    with pytest.raises(TypeError, match="unsupported operand type"):
        popsim.inferenceModel(Function(wrong))(torch.randn(3))
