"""PopTorch's extension points for arguments and compilation:
ICustomArgParser with registerCustomArgParser (a type of the user's own as a
model argument and output), registerPreCompileHook / registerPostCompileHook,
and dict arguments whose keys come in another order than at compilation."""

import dataclasses

import pytest
import torch
import torch.nn as nn

import popsim


@dataclasses.dataclass
class Batch:
    features: torch.Tensor
    mask: torch.Tensor
    scale: float  # not a tensor: compiled in as a constant, as PopTorch does


class BatchParser(popsim.ICustomArgParser):
    def yieldTensors(self, struct):
        yield struct.features
        yield struct.mask

    def reconstruct(self, original_structure, tensor_iterator):
        return Batch(next(tensor_iterator), next(tensor_iterator), original_structure.scale)


popsim.registerCustomArgParser(Batch, BatchParser())


class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, batch):
        out = self.linear(batch.features) * batch.mask * batch.scale
        return Batch(out, batch.mask, batch.scale)


def test_a_custom_argument_type_passes_through_its_parser():
    host = Masked()
    model = popsim.inferenceModel(host)
    for _ in range(2):
        batch = Batch(torch.randn(4, 3), (torch.rand(4, 1) > 0.5).float(), 2.0)
        out = model(batch)
        assert isinstance(out, Batch)
        with torch.no_grad():
            expected = host(batch)
        torch.testing.assert_close(out.features, expected.features)
        torch.testing.assert_close(out.mask, batch.mask)


def test_a_custom_argument_with_other_shapes_names_its_tensor():
    model = popsim.inferenceModel(Masked())
    model(Batch(torch.randn(4, 3), torch.ones(4, 1), 1.0))
    with pytest.raises(popsim.InputError, match=r"Input 'batch.tensors\[1\]' has shape \[4, 3\] "
                                                r"but the model was compiled for \[4, 1\]"):
        model(Batch(torch.randn(4, 3), torch.ones(4, 3), 1.0))


def test_register_custom_arg_parser_checks_its_arguments():
    with pytest.raises(TypeError, match="expects a type first"):
        popsim.registerCustomArgParser(Batch(None, None, 1.0), BatchParser())
    with pytest.raises(TypeError, match="expects an ICustomArgParser instance for Batch"):
        popsim.registerCustomArgParser(Batch, BatchParser)


def test_compile_hooks_run_around_each_compilation_until_removed():
    calls = []
    pre = popsim.registerPreCompileHook(lambda: calls.append("pre"))
    post = popsim.registerPostCompileHook(lambda: calls.append("post"))
    try:
        model = popsim.inferenceModel(nn.Linear(2, 2))
        model(torch.randn(1, 2))
        model(torch.randn(1, 2))  # no new compilation
        assert calls == ["pre", "post"]
    finally:
        pre.remove()
        post.remove()
    popsim.inferenceModel(nn.Linear(2, 2))(torch.randn(1, 2))
    assert calls == ["pre", "post"]
    with pytest.raises(TypeError, match="Post-compile hook must be callable"):
        popsim.registerPostCompileHook("not a function")
    # PopTorch documents a RuntimeError for it.
    with pytest.raises(RuntimeError, match="Pre-compile hook must be callable, got 2"):
        popsim.registerPreCompileHook(2)
    with pytest.raises(popsim.NotCallableError):
        popsim.registerPostCompileHook(False)


class Summed(nn.Module):
    def forward(self, inputs):
        return inputs["a"] * 2 + inputs["b"]["c"] - inputs["b"]["d"]


def test_dict_arguments_may_list_their_keys_in_another_order():
    model = popsim.inferenceModel(Summed())
    a, c, d = torch.randn(3), torch.randn(3), torch.randn(3)
    first = model({"a": a, "b": {"c": c, "d": d}})
    torch.testing.assert_close(model({"b": {"d": d, "c": c}, "a": a}), first)
    with pytest.raises(popsim.InputError, match="structured as"):
        model({"a": a, "b": {"c": c, "e": d}})
