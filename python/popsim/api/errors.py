"""The exceptions popsim raises.

Every error popsim raises derives from :class:`popsim.Error`. Errors raised in
the C++ core arrive as the same classes, with the same messages.
"""

from typing import Optional


class Error(Exception):
    """Base class of every popsim error.

    An error that happened in one op of a compiled program (a kernel failing
    as it is built or runs) names it in its message and in these attributes;
    they are None otherwise, or where not known:

    - ``node``: the op as the message names it, "gather at model.py:12";
    - ``op``: its kind in popsim's IR, "gather";
    - ``source``: the user's source line it was traced from, "model.py:12";
    - ``block``: its pipeline block;
    - ``task``: the pipeline task it ran in ("F0", "B1", "FB2", "U0");
    - ``ipu``: the simulated IPU;
    - ``micro_batch``: the micro-batch of the call;
    - ``replica``: the replica, in a replicated model.
    """

    node: Optional[str] = None
    op: Optional[str] = None
    source: Optional[str] = None
    block: Optional[str] = None
    task: Optional[str] = None
    ipu: Optional[int] = None
    micro_batch: Optional[int] = None
    replica: Optional[int] = None


class UnsupportedOperationError(Error):
    """The model uses ops popsim cannot run. The message lists each one with
    the source line it comes from."""


class OutOfMemoryError(Error):
    """A simulated IPU's memory is too small for the compiled program. The
    message names the IPU, the bytes needed and available and the largest
    tensors."""


class InputError(Error, ValueError):
    """Model inputs do not match what the model was compiled for, or cannot be
    split into device iterations."""


class OptionError(Error, ValueError):
    """An option has a bad value, or options do not fit together."""


class CompilationError(Error):
    """The model could not be turned into a program for other reasons."""


class ExecutionError(Error):
    """Running the compiled program failed (for example an embedding index out
    of range)."""


class ExecutableFileError(Error):
    """A compiled program file (executable cache, compileAndExport) is
    damaged, was written by another popsim build, or holds the program of
    another model or other options."""


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
