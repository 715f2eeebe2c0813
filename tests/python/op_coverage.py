"""docs/ops.md, generated from the tests: every aten op popsim lowers, with
whether the op case tables run it forward and backward against eager PyTorch
(test_ops.py, test_gradients.py, test_nonfinite.py) and the dtypes of its
tensor inputs there. Each case of test_ops.CASES is traced (draws 0 and 1)
and the aten ops of its graph are collected.

    .venv/bin/python tests/python/op_coverage.py   # rewrites docs/ops.md

test_op_coverage.py fails when docs/ops.md is not what this writes.
"""

import collections
import os
import random
import sys
import warnings

import torch

from popsim.frontend.python_losses import traceable_python_losses

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "..", "docs", "ops.md")
DRAWS = 2

# Ops refused with the reason, listed apart: these lowered ones refuse every use (their
# outputs' sizes depend on the data, or they are random on the host); the ops popsim
# recognises only to refuse (popsim._C.refused_ops(): complex numbers, matrix
# decompositions) join them in table().
REFUSED = {"aten::masked_select", "aten::unique", "aten::_unique", "aten::_unique2",
           "aten::unique_dim", "aten::unique_consecutive", "aten::nonzero", "aten::argwhere",
           "aten::fractional_max_pool2d", "aten::fractional_max_pool3d",
           "aten::_pack_padded_sequence"}


def _aten_ops(module, inputs):
    """{aten op: set of its tensor inputs' dtypes} of the traced module."""
    # (traced as popsim traces PyTorch's losses written in Python, python_losses.py)
    with warnings.catch_warnings(), traceable_python_losses(training=False):
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(module, tuple(inputs), check_trace=False)
    found = collections.defaultdict(set)
    for node in traced.inlined_graph.nodes():
        kind = node.kind()
        if not kind.startswith("aten::"):
            continue
        for value in node.inputs():
            if value.node().kind() == "prim::Constant":
                continue  # numbers and constant tensors of the model, not its data
            tensor_type = value.type()
            if isinstance(tensor_type, torch._C.TensorType) and tensor_type.dtype() is not None:
                found[kind].add(str(tensor_type.dtype()).replace("torch.", ""))
        found.setdefault(kind, set())
    return found


def coverage():
    """{aten op: (forward cases, backward cases, dtypes)} over the case tables."""
    sys.path.insert(0, HERE)
    from test_gradients import NOT_DIFFERENTIABLE
    from test_ops import CASES

    forward = collections.defaultdict(set)
    backward = collections.defaultdict(set)
    dtypes = collections.defaultdict(set)
    for name in sorted(CASES):
        for draw in range(DRAWS):
            rng = random.Random(f"{name}-{draw}")
            torch.manual_seed(rng.randint(0, 2**31))
            module, inputs = CASES[name](rng)
            module.eval()
            for op, seen in _aten_ops(module, inputs).items():
                forward[op].add(name)
                if name not in NOT_DIFFERENTIABLE:
                    backward[op].add(name)
                dtypes[op] |= seen
    return forward, backward, dtypes


def table():
    """The text of docs/ops.md (the last section of docs/guide/ops.md, which includes it)."""
    import popsim

    forward, backward, dtypes = coverage()
    lowered = popsim._C.lowered_ops()
    lines = [
        "## Every op and its test cases",
        "",
        "Generated from the tests by `tests/python/op_coverage.py` (and checked by",
        "`tests/python/test_op_coverage.py`): every aten op popsim lowers (with its",
        "in-place form `op_` where it has one), and how many cases of the op case",
        "tables of `tests/python` run it: forward in `test_ops.py` and with NaN and",
        "infinities in `test_nonfinite.py`, backward in `test_gradients.py`, all",
        "against eager PyTorch on random shapes; and the dtypes of its tensor inputs",
        "there. `-`: no case of the tables runs it (whole models, training parity",
        "and error tests may).",
        "",
        "| op | forward cases | backward cases | input dtypes in the cases |",
        "|---|---|---|---|",
    ]
    refused = REFUSED | {op for op in popsim._C.refused_ops() if op.startswith("aten::")}
    names = [op for op in lowered if op.startswith("aten::") and op not in refused]
    rows = collections.OrderedDict()
    for op in names:
        base = op[:-1] if op.endswith("_") and not op.endswith("__") and op[:-1] in names else op
        rows.setdefault(base, []).append(op)
    for base, forms in rows.items():
        label = ", ".join(f"`{form}`" for form in forms)
        cases = set().union(*(forward.get(form, set()) for form in forms))
        differentiable = set().union(*(backward.get(form, set()) for form in forms))
        kinds = sorted(set().union(*(dtypes.get(form, set()) for form in forms)))
        lines.append(f"| {label} | {len(cases) or '-'} | {len(differentiable) or '-'} | "
                     f"{', '.join(kinds) or '-'} |")
    tested = sum(1 for forms in rows.values() if any(form in forward for form in forms))
    lines += ["", f"{len(rows)} aten ops lowered (in-place forms counted with their op), "
              f"{tested} of them in the case tables.", "",
              "Refused with the reason (a compiled program cannot compute them): " +
              ", ".join(f"`{op}`" for op in sorted(refused)) + ".", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(HERE, "..", "..", "tutorials"))
    text = table()
    os.makedirs(os.path.dirname(DOC), exist_ok=True)
    with open(DOC, "w") as out:
        out.write(text)
    print(f"wrote {os.path.normpath(DOC)}")
