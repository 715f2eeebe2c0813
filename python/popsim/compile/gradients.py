"""The gradients popsim computes, for testing and debugging.

gradients(model, *inputs) compiles the model's loss (found as in a training
model) into a program whose outputs are the loss's gradients with respect to
the float inputs and the trainable parameters, runs it once, and returns them.
This is popsim's autodiff and backward kernels with nothing else around
them: what the tests compare with torch.autograd.
"""

from typing import Any, Dict, Optional, Tuple

import torch

from popsim import _C
from popsim.compile import compilation as _compilation
from popsim.frontend import tracing as _tracing
from popsim.frontend import weights as _weights
from popsim.api.errors import InputError
from popsim.api.option_fields import DEFAULT_SOURCE_LOCATION_EXCLUDES
from popsim.api.options import Options


def gradients(model: torch.nn.Module, *args: Any, training: bool = False,
              options: Optional[Options] = None, **kwargs: Any
              ) -> Tuple[Dict[str, torch.Tensor], Dict[str, torch.Tensor]]:
    """Returns ({input name: gradient}, {parameter name: gradient}).

    The model is traced in eval mode by default (dropout off, batch norm with
    its running statistics); training=True traces it in training mode (batch
    statistics). Float inputs and trainable parameters that the loss does not
    depend on get zeros. `options` (a popsim.Options) may set how float16 and
    float32 operands mix (Precision.halfFloatCasting).
    """
    downcast = _compilation.downcasts_mixed_floats(options if options is not None else Options())
    signature = _tracing.Signature(args, kwargs, model.forward)
    tensors = signature.tensors(args, kwargs)
    if not tensors:
        raise InputError("gradients() needs tensor inputs.")
    for name, tensor in zip(signature.tensor_names, tensors):
        if tensor.dim() == 0:
            raise InputError(f"Input '{name}' is a scalar; gradients() needs inputs with a "
                             "batch dimension.")
    with _tracing.module_mode(model, training):
        # On copies: tracing runs the model, which may write its inputs in place.
        traced, _ = _tracing.trace(model, signature, [t.clone() for t in tensors],
                                   training=True, downcast_mixed_floats=downcast)
    tensors = _tracing.widened(tensors)
    graph = _C.import_module(traced, tensors, list(DEFAULT_SOURCE_LOCATION_EXCLUDES),
                             _tracing.MODEL_ATTRIBUTE, signature.tensor_names, training=True,
                             downcast_mixed_floats=downcast)
    compile_options = _C.CompileOptions()
    compile_options.compiler.program = _C.ProgramKind.Gradients
    executable = _C.compile(graph, compile_options)
    names = executable.weight_names()
    executable.write_variables(_weights.host_weights(model, names))
    outputs = executable.run(tensors)
    float_inputs = [name for name, tensor in zip(signature.tensor_names, tensors)
                    if tensor.is_floating_point()]
    trainable = [weight["name"] for weight in graph.weights() if weight["trainable"]]
    input_grads = dict(zip(float_inputs, outputs[: len(float_inputs)]))
    weight_grads = dict(zip(trainable, outputs[len(float_inputs):]))
    return input_grads, weight_grads
