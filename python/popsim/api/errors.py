"""The exceptions popsim raises.

Every error popsim raises derives from :class:`popsim.Error`. Errors raised in
the C++ core arrive as the same classes, with the same messages.
"""

from typing import Any, Dict, List, Optional, Tuple


class Error(Exception):
    """Base class of every popsim error.

    Besides its message, an error says where it happened and what it is about
    in these attributes, None where they do not apply or are not known. An
    error in one op of a compiled program (a kernel failing as it is built or
    runs) names it:

    - ``node``: the op as the message names it, "gather at model.py:12";
    - ``op``: its kind in popsim's IR, "gather";
    - ``source``: the user's source line it was traced from, "model.py:12";
    - ``block``: its pipeline block;
    - ``task``: the pipeline task it ran in ("F0", "B1", "FB2", "U0");
    - ``ipu``: the simulated IPU (also the IPU an :class:`OutOfMemoryError` is about);
    - ``micro_batch``: the micro-batch of the call;
    - ``replica``: the replica, in a replicated model.

    An :class:`OptionError` names the option at fault in ``option``; an
    :class:`OutOfMemoryError` has its IPU's figures. C++ errors
    (``popsim::ErrorSite``) hold the same fields.
    """

    node: Optional[str] = None
    op: Optional[str] = None
    source: Optional[str] = None
    block: Optional[str] = None
    task: Optional[str] = None
    ipu: Optional[int] = None
    micro_batch: Optional[int] = None
    replica: Optional[int] = None
    option: Optional[str] = None


class UnsupportedOperationError(Error):
    """The model uses ops popsim cannot run. The message lists each one with
    the source line it comes from."""


class OutOfMemoryError(Error):
    """A simulated IPU's memory is too small for the compiled program. The
    message names the IPU, the bytes needed and available, each category and
    the largest tensors, which these attributes hold too:

    - ``ipu``: the IPU;
    - ``category``: the memory category that needs the most of it
      ("activations", "weights", ...; "IO tiles" when the IO tiles overflow);
    - ``required_bytes`` and ``capacity_bytes``: what the program needs and
      what the IPU (or its IO tiles) has;
    - ``largest_tensors``: its largest tensors, largest first, as
      :meth:`memoryReport` lists them (dicts with ``"description"``,
      ``"type"``, ``"category"`` and ``"bytes"``).

    Example:
        >>> opts = popsim.Options()
        >>> opts.Simulator.memoryPerIpu("256KiB")  # doctest: +ELLIPSIS
        Options.Simulator(...memory_per_ipu=262144...)
        >>> executor = popsim.inferenceModel(torch.nn.Linear(1024, 1024), opts)
        >>> try:
        ...     executor(torch.randn(2, 1024))
        ... except popsim.OutOfMemoryError as error:
        ...     print(error.ipu, error.category, error.required_bytes > error.capacity_bytes)
        0 weights True
    """

    category: Optional[str] = None
    required_bytes: Optional[int] = None
    capacity_bytes: Optional[int] = None
    largest_tensors: List[Dict[str, Any]] = []


class InputError(Error, ValueError):
    """Model inputs do not match what the model was compiled for, or cannot be
    split into device iterations."""


class NotCompiledError(InputError, AssertionError):
    """A method that needs the compiled program (``getTensorNames``, ``copyWeightsToHost``,
    the reports, ``save``, ...) was called before the model compiled or after ``destroy()``.
    An ``AssertionError`` too, as PopTorch asserts there."""


class ArgumentError(Error, TypeError, ValueError):
    """A popsim function got an argument of the wrong type or value: a helper used inside
    ``forward()`` (``dynamic_slice``, ``for_loop``, ...), a model that is not a
    ``torch.nn.Module``, a custom argument parser. A ``TypeError`` and a ``ValueError`` too,
    as Python's own functions raise one or the other for such arguments and PopTorch raises
    ``ValueError`` for some of them (``for_loop``'s inputs)."""


class NotCallableError(ArgumentError, RuntimeError):
    """A hook given to ``registerPreCompileHook`` or ``registerPostCompileHook`` is not
    callable. A ``RuntimeError`` too, as PopTorch documents for those functions."""


class OptionError(Error, ValueError):
    """An option has a bad value, or options do not fit together. ``option``
    names it as the options spell it ("Training.gradientAccumulation",
    "Simulator.memoryPerIpu", an optimizer's "SGD.lr")."""

    def __init__(self, message: str = "", option: Optional[str] = None) -> None:
        """Makes the error.

        Args:
            message: what is wrong and what to do.
            option: the option at fault, as the options spell it.
        """
        super().__init__(message)
        self.option = option

    def __reduce__(self) -> Tuple[Any, ...]:
        # Pickled (across processes) with the option, not only the message.
        return (type(self), (str(self), self.option))


class OfflineTargetError(OptionError, AssertionError):
    """A model compiled for an offline target (``connectionType(ConnectionType.Never)``, which
    :meth:`popsim.Options.useOfflineIpuTarget` sets) was called. An ``AssertionError`` too,
    as PopTorch raises one there."""


class PlanTypeError(OptionError, AssertionError):
    """:meth:`popsim.MultiConv.planType` got something other than a
    :class:`popsim.MultiConvPlanType` or None. An ``AssertionError`` too, as PopTorch asserts
    the plan type's class."""


class CompilationError(Error):
    """The model could not be turned into a program for other reasons."""


class ExecutionError(Error):
    """Running the compiled program failed (for example an embedding index out
    of range)."""


class ExecutableFileError(Error):
    """A compiled program file (executable cache, compileAndExport) is
    damaged, was written by another popsim build, or holds the program of
    another model or other options."""


class RecoverableError(Error):
    """PopTorch's error for a device failure a program may recover from, ``recovery_action``
    saying how ("IPU_RESET", "PARTITION_RESET", "FULL_RESET"). The simulated IPUs do not fail
    as hardware can, so popsim never raises it; code that catches it runs unchanged."""

    recovery_action: str = ""


class UnrecoverableError(Error):
    """PopTorch's error for a device failure nothing recovers from. popsim never raises it
    (the simulated IPUs do not fail); code that catches it runs unchanged."""


class InternalError(Error):
    """A bug in popsim. Please report it with the message."""


__all__ = [
    "Error",
    "UnsupportedOperationError",
    "OutOfMemoryError",
    "InputError",
    "OptionError",
    "CompilationError",
    "ExecutionError",
    "ExecutableFileError",
    "InternalError",
]
