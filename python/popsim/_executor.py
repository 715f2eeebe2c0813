"""The wrapper that runs a PyTorch model on simulated IPUs.

``popsim.inferenceModel(model, options)`` returns an :class:`Executor`. The
first call (or ``compile()``) traces the model on one micro-batch, lowers it
to popsim's IR in C++, plans memory on the simulated IPUs and builds oneDNN
kernels; every call then runs ``deviceIterations`` iterations in C++.
"""

import copy
import itertools
import json
import os
import time

import torch

from popsim import _C, _structure, _tracing, _weights
from popsim.enums import OutputMode
from popsim.errors import InputError, OptionError
from popsim.options import Options

_log_counter = itertools.count()
_SUPPORTED_DTYPES = (torch.float32, torch.int32, torch.int64, torch.bool)


class Executor:
    """A model compiled for simulated IPUs, used like the model itself.

    PopTorch calls this class ``PoplarExecutor``; popsim provides that name too.
    """

    def __init__(self, model, options=None, training=False):
        if isinstance(model, Executor):
            model = model.model
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"popsim wraps torch.nn.Module instances, got {type(model).__name__}.")
        if options is None:
            options = Options()
        if not isinstance(options, Options):
            raise OptionError(f"options must be a popsim.Options, got {type(options).__name__}.")
        options._freeze()
        self._options = options.clone()
        self._options._freeze()
        self._user_model = model
        # A shallow copy, as PopTorch makes: parameters and submodules are shared
        # with the user's model, the top-level attributes are not.
        self._model = copy.copy(model)
        self._training = training
        self._check_options()
        self._reset()

    def _reset(self):
        self._graph = None
        self._executable = None
        self._signature = None
        self._output_structure = None
        self._compilation_seconds = None

    def _check_options(self):
        opts = self._options
        if not self._training and opts.Training.gradient_accumulation != 1:
            raise OptionError(
                "Inference models do not accumulate gradients: set "
                f"opts.Training.gradientAccumulation(1) (it is "
                f"{opts.Training.gradient_accumulation}). To run several micro-batches per "
                "call, use opts.deviceIterations(n)."
            )
        if (opts.output_mode == OutputMode.EveryN
                and opts.device_iterations % opts.output_return_period != 0):
            raise OptionError(
                f"OutputMode.EveryN with output_return_period {opts.output_return_period} needs "
                f"deviceIterations to be a multiple of it, got {opts.device_iterations}."
            )

    @property
    def model(self):
        """The user's model (its parameters are the ones popsim uses)."""
        return self._user_model

    @property
    def options(self):
        """The (frozen) options this model runs with."""
        return self._options

    def _output_mode(self):
        mode = self._options.output_mode
        if mode == OutputMode.Default:
            mode = OutputMode.Final if self._training else OutputMode.All
        return mode

    def __call__(self, *args, **kwargs):
        if self._executable is None:
            self._compile(args, kwargs)
        tensors = self._signature.tensors(args, kwargs)
        outputs = self._executable.run(tensors)
        return _structure.unflatten(outputs, self._output_structure)

    def compile(self, *args, **kwargs):
        """Compiles for these inputs without running the model."""
        if self._executable is None:
            self._compile(args, kwargs)

    def isCompiled(self):
        return self._executable is not None

    def destroy(self):
        """Frees the compiled program; the next call compiles again."""
        self._reset()

    def copyWeightsToDevice(self):
        """Copies the host model's current parameters and buffers to the device.

        Edits to the host model after compilation are not seen by the device
        until this is called.
        """
        self._require_compiled("copyWeightsToDevice")
        self._upload_weights()

    def memoryReport(self):
        """Memory of each simulated IPU, by category, from the compiled plan."""
        self._require_compiled("memoryReport")
        return self._executable.memory_report()

    def cycleCount(self):
        """Simulated IPU cycles of the last call (compute and host transfers)."""
        self._require_compiled("cycleCount")
        return self._executable.last_run_cycles

    def simulatedTime(self):
        """Simulated seconds of the last call on the IPUs (cycles at the chip's clock)."""
        self._require_compiled("simulatedTime")
        return self._executable.last_run_cycles / self._executable.clock_hz

    def compilationTime(self):
        """Seconds the last compilation took (tracing included)."""
        self._require_compiled("compilationTime")
        return self._compilation_seconds

    def _debug_ir(self, optimized=False, locations=True):
        """The popsim IR of the model as text: as imported from the trace, or
        after popsim's optimisations (the program that runs)."""
        self._require_compiled("_debug_ir")
        if optimized:
            return self._executable.graph_text(locations)
        return self._graph.to_text(locations)

    def _require_compiled(self, what):
        if self._executable is None:
            raise InputError(f"{what}() needs a compiled model: call the model or compile() first.")

    def _upload_weights(self):
        names = self._executable.weight_names()
        self._executable.write_weights(_weights.host_weights(self._model, names))

    def _micro_batches(self, signature, tensors):
        iterations = self._options.device_iterations
        micro = []
        for name, tensor in zip(signature.tensor_names, tensors):
            if tensor.dtype not in _SUPPORTED_DTYPES:
                raise InputError(
                    f"Input '{name}' has dtype {tensor.dtype}; popsim computes with float32, "
                    "int32, int64 and bool tensors (convert it, e.g. with .float())."
                )
            if tensor.dim() == 0:
                raise InputError(
                    f"Input '{name}' is a scalar. popsim splits each input along dimension 0 "
                    f"into {iterations} device iteration(s), so inputs need a batch dimension."
                )
            if tensor.shape[0] % iterations != 0:
                raise InputError(
                    f"Invalid batch dimension: input '{name}' has {tensor.shape[0]} samples in "
                    f"dimension 0, which must be a multiple of deviceIterations "
                    f"({iterations}): each call runs {iterations} device iteration(s) on "
                    f"micro-batches of equal size."
                )
            micro.append(tensor[: tensor.shape[0] // iterations])
        return micro

    def _compile_options(self):
        opts = self._options
        return {
            "num_ipus": opts.Simulator.num_ipus or 1,
            "chip": opts.Simulator.ipu_version,
            "memory_per_ipu": opts.Simulator.memory_per_ipu or 0,
            "device_iterations": opts.device_iterations,
            "output_mode": self._output_mode().name,
            "output_return_period": opts.output_return_period,
        }

    def _compile(self, args, kwargs):
        start = time.perf_counter()
        signature = _tracing.Signature(args, kwargs, self._model.forward)
        if not signature.tensor_positions:
            raise InputError("The model was called without tensor inputs; popsim models take at "
                             "least one tensor with a batch dimension.")
        micro = self._micro_batches(signature, signature.tensors(args, kwargs))
        traced, flat = _tracing.trace(self._model, signature, micro, self._training)
        graph = _C.import_module(traced, micro, _tracing.LIBRARY_PATHS,
                                 _tracing.MODEL_ATTRIBUTE, signature.tensor_names)
        executable = _C.compile(graph, self._compile_options())
        self._graph = graph
        self._executable = executable
        self._signature = signature
        self._output_structure = flat.output_structure
        self._upload_weights()
        self._compilation_seconds = time.perf_counter() - start
        if self._options.log_dir:
            self._write_log()

    def _write_log(self):
        """Writes the IR and memory report of this compilation into logDir."""
        os.makedirs(self._options.log_dir, exist_ok=True)
        stem = os.path.join(self._options.log_dir,
                            f"{type(self._user_model).__name__}_{next(_log_counter)}")
        with open(stem + ".ir.txt", "w", encoding="utf-8") as out:
            out.write("# Imported from the trace\n")
            out.write(self._graph.to_text(True))
            out.write("\n# Optimised program\n")
            out.write(self._executable.graph_text(True))
        with open(stem + ".memory.json", "w", encoding="utf-8") as out:
            json.dump({"memory": self._executable.memory_report(),
                       "program": self._executable.program()}, out, indent=2)

    def __repr__(self):
        state = "compiled" if self.isCompiled() else "not compiled"
        kind = "training" if self._training else "inference"
        return f"popsim {kind} model ({state}) of {type(self._user_model).__name__}"


def inferenceModel(model, options=None):
    """Wraps `model` to run inference on simulated IPUs.

    Like PopTorch, popsim makes a shallow copy: parameters are shared with
    `model`. Inference models are compiled in eval mode (dropout is the
    identity, batch norm uses its running statistics) whatever `model.training`
    is; the model's own flag is left unchanged.
    """
    return Executor(model, options, training=False)
