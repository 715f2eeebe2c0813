"""The extremum-based reductions and variances in models: a classifier whose
loss is written with logsumexp, whose features are normalised by their std
and pooled by max along a dimension and amax, trains as in eager PyTorch,
and returns argmax predictions and all/any flags as eager does; a text
tower pooled at its largest token id (CLIP) trains as in eager. (Each op's
forward, backward and NaN/Inf cases are in reduction_cases.py.)"""

import pytest
import torch

import popsim
from models import Function, assert_sgd_steps_match_eager


class Pooled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(4, 8)
        self.classify = torch.nn.Linear(8, 5)

    def forward(self, x, labels):
        h = self.embed(x)  # [batch, positions, 8]
        h = (h - h.mean(-1, keepdim=True)) / (h.std(-1, keepdim=True) + 1e-3)
        pooled = h.max(dim=1).values + 0.5 * h.amax(dim=(1, 2), keepdim=True).squeeze(1)
        logits = self.classify(pooled)
        chosen = (logits * (labels.unsqueeze(1) == torch.arange(5)).float()).sum(1)
        loss = (torch.logsumexp(logits, dim=1) - chosen).mean()
        return logits, popsim.identity_loss(loss + 0.01 * h.var(), "none")


def test_training_through_reductions_matches_eager():
    torch.manual_seed(7)
    batches = [(torch.randn(6, 3, 4), torch.randint(0, 5, (6,))) for _ in range(4)]
    assert_sgd_steps_match_eager(Pooled, batches)


def test_predictions_and_flags_match_eager():
    class Metrics(torch.nn.Module):
        def forward(self, logits, labels):
            predictions = logits.argmax(dim=1)
            correct = predictions == labels
            return predictions, correct.all(), correct.any(), logits.max(dim=1).indices

    torch.manual_seed(1)
    logits, labels = torch.randn(16, 10), torch.randint(0, 10, (16,))
    expected = Metrics()(logits, labels)
    actual = popsim.inferenceModel(Metrics())(logits, labels)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and torch.equal(a, e)


class PooledAtLastToken(torch.nn.Module):
    """CLIP's text tower: each sequence's features are read at its end-of-text
    token, the largest token id (an argmax of int64 ids), and the batch's
    image-text similarities train against torch.arange labels."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(20, 8)
        self.mix = torch.nn.Linear(8, 8)
        self.images = torch.nn.Linear(6, 8)

    def forward(self, tokens, images):
        h = torch.tanh(self.mix(self.embed(tokens)))
        text = h[torch.arange(h.shape[0]), tokens.argmax(dim=-1)]
        logits = self.images(images) @ text.t()
        labels = torch.arange(logits.shape[0])
        loss = (torch.nn.functional.cross_entropy(logits, labels)
                + torch.nn.functional.cross_entropy(logits.t(), labels)) / 2
        return logits, loss


def test_pooling_at_the_largest_token_id_trains_as_in_eager():
    torch.manual_seed(3)
    batches = [(torch.randint(0, 20, (4, 5)), torch.randn(4, 6)) for _ in range(3)]
    assert_sgd_steps_match_eager(PooledAtLastToken, batches)


def test_spectral_and_nuclear_norms_are_refused_with_the_reason():
    cases = [
        (lambda x: torch.linalg.norm(x, ord=2), r"aten::linalg_norm at .*: the matrix norm of "
                                                 r"order 2 \(spectral and nuclear norms need "
                                                 r"singular values\)"),
        (lambda x: torch.linalg.matrix_norm(x, "nuc"), r"the matrix norm of order nuc"),
    ]
    for function, message in cases:
        with pytest.raises(popsim.UnsupportedOperationError, match=message):
            popsim.inferenceModel(Function(function))(torch.rand(3, 4))


@pytest.mark.parametrize("bins", [15, 31, 100])
def test_histc_counts_as_documented(bins):
    """Every element between min and max once, min and max themselves too, NaN and
    infinities nowhere. Where PyTorch 1.13 differs (it counts NaN in the first bin, and
    when bins + 1 is a multiple of the CPU's vector width its last edge is
    min + bins * step, so an element equal to max can go uncounted), popsim follows the
    definition; elsewhere it is eager's, element by element (reduction_cases.py)."""
    edges = torch.tensor([-3.0, 3.0, -1.5, 2.5])
    x = torch.cat([torch.randn(200).clamp(-3.0, 3.0), edges,
                   torch.tensor([float("nan"), float("inf")])])
    for low, high in [(0.0, 0.0), (-1.5, 2.5)]:
        data = x[x.isfinite()] if low == high else x  # min == max needs finite data
        counted = data if low == high else x[(x >= low) & (x <= high)]
        lowest, highest = (data.min(), data.max()) if low == high else (
            torch.tensor(low), torch.tensor(high))
        position = ((counted - lowest) / (highest - lowest) * bins).long().clamp(max=bins - 1)
        expected = torch.bincount(position, minlength=bins).float()
        actual = popsim.inferenceModel(Function(lambda t: torch.histc(t, bins, low, high)))(data)
        assert torch.equal(actual, expected), (low, high)


class Histogrammed(torch.nn.Module):
    """Features weighted by the share of features in each bin of their histogram."""
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Linear(4, 8)

    def forward(self, x):
        h = self.features(x)
        counts = torch.histc(h, 8, -2.0, 2.0)
        return h, popsim.identity_loss((h.mean(0) * counts / h.numel()).sum(), "none")


def test_histc_counts_are_constants_to_training():
    """histc's result is not differentiable in PyTorch: training through it treats the
    counts as constants, as eager does."""
    torch.manual_seed(0)
    assert_sgd_steps_match_eager(Histogrammed, [(torch.randn(6, 4),) for _ in range(3)])

