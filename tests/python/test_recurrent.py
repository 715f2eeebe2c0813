"""Recurrent layers beyond the case table (recurrent_cases.py): a sequence
classifier with a two-layer bidirectional LSTM and a GRU trains as eager
PyTorch does, and packed sequences are refused with the reason."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import popsim
from models import assert_sgd_steps_match_eager
from test_half_precision_ops import assert_half_close, eager_half, pytorch_casting


class SequenceClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 5, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(10, 3)
        self.head = nn.Linear(3, 2)

    def forward(self, x, target):
        h, _ = self.lstm(x)                      # [N, T, 10]
        _, last = self.gru(h.transpose(0, 1))    # [1, N, 3]
        out = self.head(last[0])
        return out, F.cross_entropy(out, target)


def test_a_lstm_and_gru_classifier_trains_as_eager():
    torch.manual_seed(0)
    batches = [(torch.randn(3, 6, 4), torch.randint(0, 2, (3,))) for _ in range(3)]
    assert_sgd_steps_match_eager(SequenceClassifier, batches)


class BatchFirstStack(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3, 4, num_layers=2, batch_first=True)
        self.lstm = nn.LSTM(4, 2, batch_first=True, bidirectional=True)

    def forward(self, x):
        hidden, _ = self.gru(x)
        return self.lstm(hidden)[0]


def test_float16_batch_first_gru_and_lstm_compute_as_eager():
    """In float16 the layers' kernels transpose their batch-first input in place
    (transpose_), which the trace must apply as the view it is."""
    torch.manual_seed(0)
    module, x = BatchFirstStack().half().eval(), torch.randn(2, 5, 3).half()
    with torch.no_grad():
        expected = eager_half(lambda: module(x))
    assert_half_close(popsim.inferenceModel(module, pytorch_casting())(x), expected)


@pytest.mark.parametrize("layer", [nn.LSTM, nn.GRU, nn.RNN])
def test_recurrent_layers_with_mixed_float_operands_compute_as_other_layers_do(layer):
    """Their weights come as a list, which the casts of mixed float16/float32 operands
    did not reach: the layer's own lowering failed ("linear: input 1 (weight) must be
    f32"). A float32 input runs float16 weights in float32 (PyTorch's promotion), or in
    float16 under FloatDowncastToHalf; a float16 input runs float32 weights in float16,
    as PopTorch does."""
    torch.manual_seed(0)
    module, x = layer(6, 5, batch_first=True).half().eval(), torch.randn(2, 7, 6)
    widened = layer(6, 5, batch_first=True).eval()
    widened.load_state_dict({k: v.float() for k, v in module.state_dict().items()})
    with torch.no_grad():
        torch.testing.assert_close(popsim.inferenceModel(module, pytorch_casting())(x)[0],
                                   widened(x)[0], rtol=1e-5, atol=1e-6)
        downcast = popsim.Options()
        downcast.Precision.halfFloatCasting(popsim.HalfFloatCastingBehavior.FloatDowncastToHalf)
        assert_half_close(popsim.inferenceModel(module, downcast)(x)[0],
                          eager_half(lambda: module(x.half())[0]))
        assert_half_close(popsim.inferenceModel(widened)(x.half())[0],
                          eager_half(lambda: module(x.half())[0]))


class Packed(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(2, 3)

    def forward(self, x):
        packed = nn.utils.rnn.pack_padded_sequence(x, [3, 2])
        out, _ = self.lstm(packed)
        return nn.utils.rnn.pad_packed_sequence(out)[0]


def test_packed_sequences_are_refused_with_the_reason():
    with pytest.raises(popsim.UnsupportedOperationError, match=r"a packed sequence"):
        popsim.inferenceModel(Packed())(torch.randn(3, 2, 2))
