"""The exceptions popsim raises.

Every error popsim raises derives from :class:`popsim.Error`. Errors raised in
the C++ core arrive as the same classes, with the same messages.
"""


class Error(Exception):
    """Base class of every popsim error."""


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
