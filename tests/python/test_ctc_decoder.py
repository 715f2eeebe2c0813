"""popsim.ctc_beam_search_decoder (PopTorch's), against an exhaustive
reference: every alignment of a short sequence enumerated, collapsed (repeats
merged, blanks dropped) and summed per label sequence."""

import itertools
import math

import pytest
import torch

import popsim
from models import Function


def exhaustive(log_probs, blank):
    """{label sequence: log-probability} over every alignment of [T, C] log_probs."""
    frames, classes = log_probs.shape
    totals = {}
    for alignment in itertools.product(range(classes), repeat=frames):
        collapsed = tuple(c for i, c in enumerate(alignment)
                          if c != blank and (i == 0 or alignment[i - 1] != c))
        score = sum(float(log_probs[t, c]) for t, c in enumerate(alignment))
        totals[collapsed] = (score if collapsed not in totals
                             else max(totals[collapsed], score)
                             + math.log1p(math.exp(-abs(totals[collapsed] - score))))
    return sorted(totals.items(), key=lambda item: -item[1])


@pytest.mark.parametrize("blank", [0, 2])
@pytest.mark.parametrize("in_model", [False, True])
def test_the_top_paths_are_the_most_likely_label_sequences(blank, in_model):
    torch.manual_seed(blank)
    probs = torch.randn(5, 2, 3).log_softmax(2)
    lengths = torch.tensor([5, 3])
    decode = (lambda p, n: popsim.ctc_beam_search_decoder(p, n, blank=blank, beam_width=50,
                                                          top_paths=3))
    if in_model:
        path_probs, path_lengths, paths = popsim.inferenceModel(Function(decode))(probs, lengths)
    else:
        path_probs, path_lengths, paths = decode(probs, lengths)
    assert paths.shape == (2, 3, 5) and path_lengths.dtype == paths.dtype == torch.int32
    for n in range(2):
        expected = exhaustive(probs[:lengths[n], n], blank)[:3]
        for k, (labels, log_p) in enumerate(expected):
            assert path_lengths[n, k] == len(labels)
            assert tuple(paths[n, k, :len(labels)].tolist()) == labels
            assert path_probs[n, k].item() == pytest.approx(log_p, abs=1e-5)
            assert paths[n, k, len(labels):].eq(0).all()


def test_a_narrow_beam_keeps_the_best_prefixes_only():
    """beam_width 1 follows the single most likely prefix each frame."""
    probs = torch.tensor([[[-0.1, -3.0, -3.0]], [[-3.0, -0.2, -2.0]], [[-3.0, -0.1, -3.0]]])
    path_probs, path_lengths, paths = popsim.ctc_beam_search_decoder(
        probs, torch.tensor([3]), beam_width=1)
    assert path_lengths.tolist() == [[1]] and paths[0, 0, 0].item() == 1


@pytest.mark.parametrize("arguments,message", [
    ({"probs": torch.zeros(3, 2)}, r"probs to be a float tensor of shape \[input_length, "
                                   r"batch_size, num_classes\]"),
    ({"lengths": torch.tensor([1.0, 2.0])}, r"lengths to be an integer tensor of shape "
                                            r"\[batch_size\] = \[2\]"),
    ({"blank": 3}, r"blank in \[0, 2\], got 3"),
    ({"beam_width": 0}, r"beam_width in >= 1, got 0"),
    ({"top_paths": 5, "beam_width": 4}, r"top_paths in \[1, 4\], got 5"),
])
def test_arguments_are_checked(arguments, message):
    call = {"probs": torch.zeros(4, 2, 3), "lengths": torch.tensor([4, 2]), **arguments}
    with pytest.raises(popsim.InputError, match=message):
        popsim.ctc_beam_search_decoder(**call)
