"""Compiled programs on disk, as Python's API meets them: the files of
compileAndExport / loadExecutable / popsim.load and the executable cache's
entries.

The container is the host layer's (csrc/host/program_file.h: one reader and
writer for Python and C++): a JSON header (the popsim build, the graph's hash,
the compile options, the program's SHA-256, whether the model trains and the
call it compiled for), the program, and an optional model section, all under a
SHA-256. Reading a file runs no code from it: the call is data (call_spec.py)
and the program popsim's own validated format. What is Python's alone lives
here: the call's description, and the pickled model, options and optimizer of
export_model=True, which only popsim.load(..., trusted=True) unpickles.
"""

import io
import os
import pickle
from typing import Any, Dict, NamedTuple, Optional

import torch

from popsim import _C
from popsim.api.errors import ExecutableFileError
from popsim.compile import call_spec as _call_spec

MAGIC = b"POPSIMEX"
CONTAINER_VERSION = 2  # host/program_file.h's kProgramFileVersion

ProgramKey = _C.ProgramKey


def program_key(graph: "_C.Graph", options: "_C.CompileOptions") -> "_C.ProgramKey":
    """What a program was compiled from: the graph, the options and the popsim build."""
    return _C.program_key(graph, options)


class ProgramFile(NamedTuple):
    native: "_C.ProgramFile"  # the host layer's reading, which loadExecutable passes back
    # compileAndExport's facts, None in a cache entry: whether the model trains, and the
    # call it compiled for (data, parsed by popsim: reading them runs no code).
    training: Optional[bool]
    call: Optional[_call_spec.CallSpec]

    @property
    def key(self) -> "_C.ProgramKey":
        return self.native.key

    @property
    def model(self) -> bytes:
        """The pickled model, options and optimizer of export_model=True (b"" otherwise):
        unpickled only by load_model, on the caller's explicit trust."""
        return self.native.model_section

    def load_model(self) -> Dict[str, Any]:
        """The model, options and optimizer the file holds. Unpickling runs any code the
        file's author put in it: popsim.load calls it only when trusted=True."""
        return torch.load(io.BytesIO(self.model), weights_only=False)


def write(path: str, key: "_C.ProgramKey", program: bytes, *, training: Optional[bool] = None,
          call: Optional[_call_spec.CallSpec] = None,
          model: Optional[Dict[str, Any]] = None) -> str:
    """Writes the file atomically (a reader never sees half of it), readable by its
    owner only; an existing directory gets one file, ``<key digest>.popsim``, in it.
    Returns the path written."""
    call_json = None if call is None else _call_spec.to_json(call)  # refuses what JSON cannot hold
    pickled = b""
    if model is not None:
        buffer = io.BytesIO()
        try:
            torch.save(model, buffer)
        except (pickle.PicklingError, TypeError, AttributeError) as error:
            raise ExecutableFileError(
                f"Cannot write '{path}': the model, its options or optimizer cannot be pickled "
                f"({error}). Export a model that cannot be pickled with export_model=False and "
                "load it with loadExecutable.") from error
        pickled = buffer.getvalue()
    return _C.write_program_file(os.fspath(path), key, program, training, call_json, pickled)


def read(path: str) -> ProgramFile:
    """The file's key, program and facts; ExecutableFileError if it is not a complete popsim
    program file. Nothing in the file is unpickled (see ProgramFile.load_model)."""
    native = _C.read_program_file(os.fspath(path))
    call = native.call
    return ProgramFile(native, native.training,
                       None if call is None else _call_spec.from_json(call, f"'{path}'"))
