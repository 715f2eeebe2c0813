"""The test table of the losses computed element by element
(frontend/lowerings/elementwise_losses.cpp and losses.cpp): each case is a
loss module whose targets are buffers (PyTorch has no gradient for some of
them), with every reduction, on random shapes. test_ops.py runs each case
forward, test_gradients.py backward and test_nonfinite.py with NaN/Inf,
against eager PyTorch."""

import torch
import torch.nn as nn
import torch.nn.functional as F

REDUCTIONS = ("none", "mean", "sum")


class Loss(nn.Module):
    """fn(*inputs, *targets, reduction=...) with the targets as buffers."""

    def __init__(self, fn, targets, **kwargs):
        super().__init__()
        self.fn = fn
        self.kwargs = kwargs
        for i, target in enumerate(targets):
            self.register_buffer(f"target{i}", target)
        self.count = len(targets)

    def forward(self, *inputs):
        targets = [getattr(self, f"target{i}") for i in range(self.count)]
        return self.fn(*inputs, *targets, **self.kwargs)


def _shape(rng):
    return [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]


def _signs(shape):
    return torch.where(torch.rand(*shape) < 0.5, -1.0, 1.0)


def _case(make):
    """make(rng, shape, reduction) -> (module, inputs)."""
    def case(rng):
        return make(rng, _shape(rng), rng.choice(REDUCTIONS))
    return case


# Cases whose eager backward PyTorch 1.13 refuses ("Found dtype Long but expected Float" for
# an integer target); test_gradients.py checks them against the float target's gradient.
NOT_DIFFERENTIABLE = {"l1_int_target", "mse_int_target", "smooth_l1_int_target",
                      "huber_int_target"}

LOSSES = {
    "smooth_l1": _case(lambda rng, s, r: (Loss(F.smooth_l1_loss, [torch.randn(*s)], beta=0.5,
                                               reduction=r), [torch.randn(*s)])),
    "smooth_l1_beta0": _case(lambda rng, s, r: (Loss(F.smooth_l1_loss, [torch.randn(*s)],
                                                     beta=0.0, reduction=r), [torch.randn(*s)])),
    "huber": _case(lambda rng, s, r: (Loss(F.huber_loss, [torch.randn(*s)], delta=1.5,
                                           reduction=r), [torch.randn(*s) * 2])),
    # Integer regression targets, which PyTorch's arithmetic promotes to the input's dtype.
    "l1_int_target": _case(lambda rng, s, r: (
        Loss(F.l1_loss, [torch.randint(-3, 4, s)], reduction=r), [torch.randn(*s) * 2])),
    "mse_int_target": _case(lambda rng, s, r: (
        Loss(F.mse_loss, [torch.randint(-3, 4, s)], reduction=r), [torch.randn(*s) * 2])),
    "smooth_l1_int_target": _case(lambda rng, s, r: (
        Loss(F.smooth_l1_loss, [torch.randint(-3, 4, s)], beta=0.5, reduction=r),
        [torch.randn(*s) * 2])),
    "huber_int_target": _case(lambda rng, s, r: (
        Loss(F.huber_loss, [torch.randint(-3, 4, s)], delta=1.5, reduction=r),
        [torch.randn(*s) * 2])),
    "soft_margin": _case(lambda rng, s, r: (Loss(F.soft_margin_loss, [_signs(s)], reduction=r),
                                            [torch.randn(*s) * 2])),
    # Labels as an integer tensor, which PyTorch's arithmetic promotes.
    "soft_margin_int_labels": _case(lambda rng, s, r: (
        Loss(F.soft_margin_loss, [_signs(s).long()], reduction=r), [torch.randn(*s) * 2])),
    "bce": _case(lambda rng, s, r: (Loss(F.binary_cross_entropy, [torch.rand(*s)], reduction=r),
                                    [0.05 + 0.9 * torch.rand(*s)])),
    # (F.binary_cross_entropy broadcasts its weight with sizes torch.jit.trace
    # cannot take: popsim's trace broadcasts it itself, python_losses.py.)
    "bce_weight": _case(lambda rng, s, r: (
        Loss(lambda x, t, w, reduction: F.binary_cross_entropy(x, t, w, reduction=reduction),
             [torch.rand(*s), torch.rand(*s) + 0.5], reduction=r),
        [0.05 + 0.9 * torch.rand(*s)])),
    "bce_broadcast_weight": _case(lambda rng, s, r: (
        Loss(lambda x, t, w, reduction: F.binary_cross_entropy(x, t, w, reduction=reduction),
             [torch.rand(*s), torch.rand(s[-1]) + 0.5], reduction=r),
        [0.05 + 0.9 * torch.rand(*s)])),
    "bce_logits_pos_weight": _case(lambda rng, s, r: (
        Loss(lambda x, t, w, p, **k: F.binary_cross_entropy_with_logits(x, t, w, pos_weight=p,
                                                                        **k),
             [torch.rand(*s), torch.rand(*s) + 0.5, torch.rand(s[-1]) * 3], reduction=r),
        [torch.randn(*s) * 3])),
    "kl_div": _case(lambda rng, s, r: (
        Loss(F.kl_div, [torch.softmax(torch.randn(*s), -1)],
             reduction=r if r != "none" else "batchmean"),
        [torch.log_softmax(torch.randn(*s), -1)])),
    "kl_div_log_target": _case(lambda rng, s, r: (
        Loss(F.kl_div, [torch.log_softmax(torch.randn(*s), -1)], reduction=r, log_target=True),
        [torch.log_softmax(torch.randn(*s), -1)])),
    "poisson_nll_log_input": _case(lambda rng, s, r: (
        Loss(F.poisson_nll_loss, [torch.randint(0, 5, s).float()], reduction=r),
        [torch.randn(*s)])),
    "poisson_nll_full": _case(lambda rng, s, r: (
        Loss(F.poisson_nll_loss, [torch.randint(0, 5, s).float()], log_input=False, full=True,
             reduction=r),
        [torch.rand(*s) * 3 + 0.1])),
    "margin_ranking": _case(lambda rng, s, r: (
        Loss(F.margin_ranking_loss, [_signs(s)], margin=0.3, reduction=r),
        [torch.randn(*s), torch.randn(*s)])),
    "hinge_embedding": _case(lambda rng, s, r: (
        Loss(F.hinge_embedding_loss, [_signs(s)], margin=1.5, reduction=r),
        [torch.randn(*s) * 2])),
    "hinge_embedding_int_labels": _case(lambda rng, s, r: (
        Loss(F.hinge_embedding_loss, [_signs(s).long()], margin=1.5, reduction=r),
        [torch.randn(*s) * 2])),
    "triplet_margin": _case(lambda rng, s, r: (
        Loss(F.triplet_margin_loss, [], margin=0.5, reduction=r),
        [torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4)])),
    "triplet_margin_swap_p1": _case(lambda rng, s, r: (
        Loss(F.triplet_margin_loss, [], p=1.0, swap=True, reduction=r),
        [torch.randn(2, 5), torch.randn(2, 5), torch.randn(2, 5)])),
    "pairwise_distance": _case(lambda rng, s, r: (
        Loss(F.pairwise_distance, [], keepdim=rng.random() < 0.5), [torch.randn(3, 4),
                                                                    torch.randn(3, 4)])),
    "gaussian_nll": _case(lambda rng, s, r: (
        Loss(lambda x, var, t, **k: F.gaussian_nll_loss(x, t, var, **k), [torch.randn(*s)],
             reduction=r),
        [torch.randn(*s), torch.rand(*s) + 0.2])),
    "multilabel_soft_margin": _case(lambda rng, s, r: (
        Loss(F.multilabel_soft_margin_loss, [(torch.rand(3, 4) < 0.5).float()], reduction=r),
        [torch.randn(3, 4)])),
}


def _classification(make):
    """make(rng, scores shape [N, C] or [N, C, d], C, reduction) -> (module, inputs):
    scores for C classes, with a spatial dimension half of the time."""
    def case(rng):
        classes = rng.randint(2, 5)
        shape = [rng.randint(1, 4), classes] + ([rng.randint(1, 3)] if rng.random() < 0.5 else [])
        return make(rng, shape, classes, rng.choice(REDUCTIONS))
    return case


def _class_indices(shape, classes, ignored=-100):
    """Class indices for scores of `shape`, about a fifth of them `ignored` (not
    the first: with every target ignored, a mean is NaN)."""
    target_shape = [shape[0]] + shape[2:]
    target = torch.randint(0, classes, target_shape)
    target = torch.where(torch.rand(target_shape) < 0.2, ignored, target)
    target.view(-1)[0] = classes - 1 if ignored == 0 else 0
    return target


def _weights(classes):
    return torch.rand(classes) + 0.25


# Cross entropy and nll with class weights, ignored targets, label smoothing
# and class probabilities as targets.
LOSSES.update({
    "cross_entropy_weight": _classification(lambda rng, s, c, r: (
        Loss(lambda x, t, w, **k: F.cross_entropy(x, t, w, **k),
             [_class_indices(s, c), _weights(c)], reduction=r), [torch.randn(*s) * 2])),
    "cross_entropy_label_smoothing": _classification(lambda rng, s, c, r: (
        Loss(F.cross_entropy, [_class_indices(s, c, ignored=1)], ignore_index=1,
             label_smoothing=0.15, reduction=r), [torch.randn(*s) * 2])),
    "cross_entropy_weight_label_smoothing": _classification(lambda rng, s, c, r: (
        Loss(lambda x, t, w, **k: F.cross_entropy(x, t, w, **k),
             [_class_indices(s, c), _weights(c)], label_smoothing=0.3, reduction=r),
        [torch.randn(*s) * 2])),
    "cross_entropy_probabilities": _classification(lambda rng, s, c, r: (
        Loss(F.cross_entropy, [torch.softmax(torch.randn(*s), 1)], reduction=r),
        [torch.randn(*s) * 2])),
    "cross_entropy_probabilities_weight_smoothing": _classification(lambda rng, s, c, r: (
        Loss(lambda x, t, w, **k: F.cross_entropy(x, t, w, **k),
             [torch.softmax(torch.randn(*s), 1), _weights(c)], label_smoothing=0.2, reduction=r),
        [torch.randn(*s) * 2])),
    "nll_weight": _classification(lambda rng, s, c, r: (
        Loss(lambda x, t, w, **k: F.nll_loss(F.log_softmax(x, 1), t, w, **k),
             [_class_indices(s, c, ignored=0), _weights(c)], ignore_index=0, reduction=r),
        [torch.randn(*s)])),
})


def _tiny_rows(x):
    """x with its first row zero and its second tiny (norms below eps)."""
    x = x.clone()
    x[0] = 0.0
    if x.shape[0] > 1:
        x[1] *= 1e-9
    return x


def _label_rows(rng, samples, classes):
    """multilabel_margin_loss targets: per sample some classes (repeats allowed),
    then -1 and arbitrary entries the -1 hides."""
    target = torch.randint(-1, classes, (samples, classes))
    for row in target:
        row[rng.randint(0, classes - 1)] = -1
    return target


# Similarities, distances and margin losses over classes.
LOSSES.update({
    "cosine_similarity": _case(lambda rng, s, r: (
        Loss(F.cosine_similarity, [], dim=1), [_tiny_rows(torch.randn(4, 6)),
                                                _tiny_rows(torch.randn(4, 6)).flip(0)])),
    "cosine_similarity_broadcast_dim0": _case(lambda rng, s, r: (
        Loss(F.cosine_similarity, [], dim=0, eps=1e-3), [torch.randn(1, 5), torch.randn(3, 5)])),
    "cosine_embedding": _case(lambda rng, s, r: (
        Loss(F.cosine_embedding_loss, [_signs([4]).long()], margin=0.2, reduction=r),
        [torch.randn(4, 5), torch.randn(4, 5)])),
    "cosine_embedding_one_pair": _case(lambda rng, s, r: (
        Loss(F.cosine_embedding_loss, [torch.tensor(-1)], margin=-0.5, reduction=r),
        [torch.randn(5), torch.randn(5)])),
    "cdist": _case(lambda rng, s, r: (
        Loss(torch.cdist, [], p=rng.choice([0.0, 1.0, 2.0, 3.0])),
        [torch.randn(2, 3, 4), torch.randn(2, 5, 4)])),
    "pdist": _case(lambda rng, s, r: (
        Loss(torch.pdist, [], p=rng.choice([0.0, 1.0, 2.0, 3.0])),
        [torch.randn(rng.randint(2, 5), 3)])),
    "pdist_equal_rows": _case(lambda rng, s, r: (
        Loss(torch.pdist, []), [torch.randn(1, 3).expand(3, 3).contiguous()])),
    "cdist_through_matmul": _case(lambda rng, s, r: (
        Loss(torch.cdist, []), [torch.randn(27, 3), torch.randn(4, 3)])),
    "multi_margin": _case(lambda rng, s, r: (
        Loss(F.multi_margin_loss, [torch.randint(0, 5, (4,))], reduction=r),
        [torch.randn(4, 5)])),
    "multi_margin_p2_weight": _case(lambda rng, s, r: (
        Loss(lambda x, t, w, **k: F.multi_margin_loss(x, t, weight=w, **k),
             [torch.randint(0, 4, (3,)), torch.rand(4) + 0.5], p=2, margin=0.7, reduction=r),
        [torch.randn(3, 4)])),
    "multi_margin_one_sample": _case(lambda rng, s, r: (
        Loss(F.multi_margin_loss, [torch.tensor(2)], reduction=r), [torch.randn(4)])),
    "multilabel_margin": _case(lambda rng, s, r: (
        Loss(F.multilabel_margin_loss, [_label_rows(rng, 3, 5)], reduction=r),
        [torch.randn(3, 5)])),
})


def _ctc(rng, concatenated=False, impossible=False, blanks=False):
    """log_probs [T, N, C] (log_softmax of scores), targets padded [N, S] or
    concatenated, lengths as tensors or (concatenated) lists; with
    `impossible`, one target needs more frames than its input has; with
    `blanks`, labels may be the blank (0), which eager computes too."""
    frames, samples, classes = rng.randint(6, 8), rng.randint(1, 3), rng.randint(3, 5)
    target_lengths = [rng.randint(0 if s else 1, 3) for s in range(samples)]
    input_lengths = [rng.randint(max(1, 2 * t), frames) for t in target_lengths]
    if impossible:
        target_lengths[0], input_lengths[0] = 3, 2
    labels = [torch.randint(0 if blanks else 1, classes, (length,)) for length in target_lengths]
    if concatenated:
        targets = torch.cat(labels)
    else:
        targets = torch.zeros(samples, 3, dtype=torch.long)
        for row, label in zip(targets, labels):
            row[:len(label)] = label
    return frames, samples, classes, targets, input_lengths, target_lengths


def _ctc_case(concatenated=False, impossible=False, blanks=False):
    def case(rng):
        frames, samples, classes, targets, il, tl = _ctc(rng, concatenated, impossible, blanks)
        reduction = rng.choice(REDUCTIONS)
        kwargs = {"reduction": reduction, "zero_infinity": impossible}
        scores = [torch.randn(frames, samples, classes) * 2]
        if concatenated:  # lengths as lists
            module = Loss(lambda x, t, **k: F.ctc_loss(x.log_softmax(2), t, il, tl, **k),
                          [targets], **kwargs)
        else:
            module = Loss(lambda x, t, i, n, **k: F.ctc_loss(x.log_softmax(2), t, i, n, **k),
                          [targets, torch.tensor(il), torch.tensor(tl)], **kwargs)
        return module, scores
    return case


def _ctc_unbatched(rng):
    frames, classes = rng.randint(4, 7), 4
    target = torch.randint(1, classes, (2,))
    return (Loss(lambda x, t, **k: F.ctc_loss(x.log_softmax(1), t, [frames], [2], blank=0, **k),
                 [target], reduction=rng.choice(REDUCTIONS)),
            [torch.randn(frames, classes)])


LOSSES.update({
    "ctc": _ctc_case(),
    "ctc_concatenated_targets": _ctc_case(concatenated=True),
    "ctc_zero_infinity": _ctc_case(impossible=True),
    "ctc_blank_in_targets": _ctc_case(blanks=True),
    "ctc_unbatched": _ctc_unbatched,
})
