"""PopTorch's ctc_beam_search_decoder: the most likely label sequences of a
CTC model's output, by prefix beam search.

It runs on the host, as a CPU op of the model (popsim.CPU): popsim has no
device kernel for it, so the simulated clock counts it as the host round
trip a CPU op costs, not as IPU compute.
"""

import math
from typing import Dict, List, Tuple

import torch

from popsim.frontend.cpu_ops import CPU
from popsim.api.errors import InputError

_NEG_INF = -math.inf


def _log_add(a: float, b: float) -> float:
    if a == _NEG_INF:
        return b
    if b == _NEG_INF:
        return a
    high, low = (a, b) if a > b else (b, a)
    return high + math.log1p(math.exp(low - high))


def _search(log_probs: List[List[float]], blank: int, beam_width: int
            ) -> List[Tuple[Tuple[int, ...], float]]:
    """Prefix beam search over one sequence's frames: every prefix keeps the
    log-probabilities of its alignments ending in a blank and in its last
    label; each frame extends the beam_width most likely prefixes by every
    class, a repeated label joining its prefix unless a blank came between.
    Returns the final beam, most likely first."""
    beams: Dict[Tuple[int, ...], Tuple[float, float]] = {(): (0.0, _NEG_INF)}
    for frame in log_probs:
        grown: Dict[Tuple[int, ...], Tuple[float, float]] = {}

        def add(prefix: Tuple[int, ...], blank_part: float, label_part: float) -> None:
            old_blank, old_label = grown.get(prefix, (_NEG_INF, _NEG_INF))
            grown[prefix] = (_log_add(old_blank, blank_part), _log_add(old_label, label_part))

        for prefix, (ends_blank, ends_label) in beams.items():
            total = _log_add(ends_blank, ends_label)
            for label, p in enumerate(frame):
                if label == blank:
                    add(prefix, total + p, _NEG_INF)
                elif prefix and prefix[-1] == label:
                    add(prefix, _NEG_INF, ends_label + p)  # the same label, held
                    add(prefix + (label,), _NEG_INF, ends_blank + p)  # after a blank: again
                else:
                    add(prefix + (label,), _NEG_INF, total + p)
        ranked = sorted(grown.items(), key=lambda item: -_log_add(*item[1]))
        beams = dict(ranked[:beam_width])
    return [(prefix, _log_add(*parts))
            for prefix, parts in sorted(beams.items(), key=lambda item: -_log_add(*item[1]))]


def _decode(probs: torch.Tensor, lengths: torch.Tensor, blank: int, beam_width: int,
            top_paths: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    frames, batch, _ = probs.shape
    path_probs = torch.full((batch, top_paths), _NEG_INF, dtype=torch.float32)
    path_lengths = torch.zeros(batch, top_paths, dtype=torch.int32)
    paths = torch.zeros(batch, top_paths, frames, dtype=torch.int32)
    values = probs.detach().double()
    for n in range(batch):
        length = int(lengths[n])
        if not 0 <= length <= frames:
            raise InputError(f"ctc_beam_search_decoder: length {length} of sequence {n} is not "
                             f"in [0, {frames}] (the frames of probs).")
        found = _search(values[:length, n].tolist(), blank, beam_width)
        for k, (prefix, log_p) in enumerate(found[:top_paths]):
            path_probs[n, k] = log_p
            path_lengths[n, k] = len(prefix)
            paths[n, k, :len(prefix)] = torch.tensor(prefix, dtype=torch.int32)
    return path_probs, path_lengths, paths


def ctc_beam_search_decoder(probs: torch.Tensor, lengths: torch.Tensor, blank: int = 0,
                            beam_width: int = 100, top_paths: int = 1
                            ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Decodes the most likely label sequences of a CTC model's output, as PopTorch's function.

    A prefix beam search over each sequence of the batch keeps the ``beam_width`` most likely
    prefixes per frame. In a model it runs on the host as a CPU op (:class:`popsim.CPU`,
    inference only): the simulated clock counts the host round trip, not IPU compute.

    Args:
        probs: Log-probabilities, a float tensor of shape
            ``[input_length, batch_size, num_classes]``.
        lengths: An integer tensor of shape ``[batch_size]``: how many frames of each
            sequence to read, each in ``[0, input_length]``.
        blank: The class of the blank label, in ``[0, num_classes - 1]``.
        beam_width: How many prefixes the search keeps per frame, at least 1.
        top_paths: How many of the most likely sequences to return per batch item, in
            ``[1, beam_width]``.

    Returns:
        A tuple of three tensors: the paths' log-probabilities, float32 of shape
        ``[batch_size, top_paths]``; their lengths, int32 of shape
        ``[batch_size, top_paths]``; and the paths, int32 of shape
        ``[batch_size, top_paths, input_length]``, zero after each path's length. Paths the
        search did not find have log-probability ``-inf`` and length 0.

    Raises:
        InputError: when ``probs`` or ``lengths`` has the wrong type or shape, when
            ``blank``, ``beam_width`` or ``top_paths`` is not an ``int`` in its range, or
            (when the decoder runs) when a length is not in ``[0, input_length]``.
    """
    if not isinstance(probs, torch.Tensor) or probs.dim() != 3 or not probs.is_floating_point():
        raise InputError("ctc_beam_search_decoder expects probs to be a float tensor of shape "
                         "[input_length, batch_size, num_classes], got "
                         f"{getattr(probs, 'shape', type(probs).__name__)}.")
    if (not isinstance(lengths, torch.Tensor) or lengths.dim() != 1 or lengths.is_floating_point()
            or lengths.shape[0] != probs.shape[1]):
        raise InputError("ctc_beam_search_decoder expects lengths to be an integer tensor of "
                         f"shape [batch_size] = [{probs.shape[1]}], got "
                         f"{getattr(lengths, 'shape', type(lengths).__name__)}.")
    classes = probs.shape[2]
    for name, value, low, high in (("blank", blank, 0, classes - 1),
                                   ("beam_width", beam_width, 1, None),
                                   ("top_paths", top_paths, 1, beam_width)):
        if (isinstance(value, bool) or not isinstance(value, int) or value < low
                or (high is not None and value > high)):
            limit = f"[{low}, {high}]" if high is not None else f">= {low}"
            raise InputError(f"ctc_beam_search_decoder expects {name} in {limit}, got {value!r}.")
    decoder = CPU(lambda p, n: _decode(p, n, blank, beam_width, top_paths),
                  f"ctc_beam_search_decoder(blank={blank}, beam_width={beam_width}, "
                  f"top_paths={top_paths})")
    return decoder(probs.float(), lengths)
