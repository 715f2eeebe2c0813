"""popsim.sizeJob: a job sized without computing it, from one cost-only call of a
model wrapped for the job (the wrapped model is destroyed afterwards). The planner
(planner.py) sizes its candidates the same way."""

import contextlib
from typing import Any, Iterator, Optional

import torch

from popsim import _C
from popsim.api.errors import InputError
from popsim.api.options import Options
from popsim.compile.compilation import stand_in
from popsim.executor import Executor, inferenceModel, trainingModel
from popsim.frontend import structure as _structure
from popsim.reports.sizing import SizingReport


def _call_input(tensor: Any, repeats: int, name: str) -> Any:
    """A call's input standing for `repeats` micro-batches like `tensor`
    (compilation.stand_in: the model traces on `tensor` itself)."""
    if not isinstance(tensor, torch.Tensor):
        return tensor
    if tensor.dim() == 0:
        raise InputError(
            f"sizeJob: input {name} is a scalar; every input of a micro-batch needs its batch "
            "dimension first, as the model's inputs are split along it.")
    return stand_in(tensor, (tensor.shape[0] * repeats,) + tuple(tensor.shape[1:]))


@contextlib.contextmanager
def cost_only_call(model: torch.nn.Module, micro_batch: Any, options: Optional[Options],
                   optimizer: Optional[torch.optim.Optimizer]) -> Iterator[Executor]:
    """The executor of `model` compiled cost-only with `options`, after one
    call standing for a step of the job (see sizeJob); destroyed afterwards."""
    sizing = (options or Options()).clone()
    sizing.Simulator.costOnly().allowOverCapacity()
    training = optimizer is not None
    repeats = _C.micro_batches_of_a_call(sizing._session, training)
    inputs = micro_batch if isinstance(micro_batch, tuple) else (micro_batch,)
    # Every tensor stands for the call's micro-batches, nested ones (in a dict, a list or
    # a tuple) too.
    leaves, names, structure = _structure.flatten(inputs, "input")
    call = _structure.unflatten(
        [_call_input(leaf, repeats, f"{name} ({type(leaf).__name__})")
         for leaf, name in zip(leaves, names)], structure)
    executor = (trainingModel(model, sizing, optimizer) if training
                else inferenceModel(model, sizing))
    try:
        executor(*call)
        yield executor
    finally:
        executor.destroy()


def sizeJob(model: torch.nn.Module, micro_batch: Any, options: Optional[Options] = None,
            optimizer: Optional[torch.optim.Optimizer] = None) -> SizingReport:
    """Sizes a job without computing it, from popsim's simulation of one call.

    Compiles ``model`` with ``options`` cost-only (``Options.Simulator.costOnly()``), makes one
    call and returns its report. The call stands for deviceIterations x replicationFactor (x
    gradientAccumulation for training) micro-batches without allocating them (stride-0 views),
    so a POD's global batch costs nothing on the host; the model traces on ``micro_batch``
    itself, so code reading its inputs' values traces as in the job's call. A job that
    does not fit its IPUs is
    reported (``fits`` False, with what to change) instead of raising
    :class:`popsim.OutOfMemoryError`. The weights must fit the host in float32: the model is an
    ordinary PyTorch module, traced on the host. The executor is destroyed afterwards.

    Example:
        >>> model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
        ...                             torch.nn.Linear(4096, 1024))
        >>> report = popsim.sizeJob(model, torch.zeros(64, 1024), popsim.Options().replicationFactor(16))
        >>> report.fits, report.replicas, report.total_ipus
        (True, 16, 16)
        >>> report.throughput > 0  # items/s over the 16 replicas, simulated
        True

    Args:
        model: The model to size.
        micro_batch: One micro-batch of one replica's inputs: a tensor, or a tuple of the
            model's positional inputs (each a tensor, or tuples, lists and dicts of them),
            every tensor with its batch dimension first (the model traces on it; the call's
            other micro-batches are stride-0 views of zeros).
        options: The job's options (replication, gradient accumulation, device iterations,
            execution strategy, ...); they are copied, not changed. None: default
            :class:`popsim.Options`.
        optimizer: The optimizer of a training job (as for :func:`popsim.trainingModel`);
            None sizes an inference job (:func:`popsim.inferenceModel`).

    Returns:
        The :class:`popsim.SizingReport` of the call, with memory per IPU against capacity,
        the simulated step time and throughput, where each IPU's time goes, and advice.

    Raises:
        InputError: when an input tensor of ``micro_batch`` is a scalar (it has no batch
            dimension).
    """
    with cost_only_call(model, micro_batch, options, optimizer) as executor:
        return executor.sizingReport()
