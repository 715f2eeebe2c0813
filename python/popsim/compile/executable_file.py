"""Compiled programs on disk: the executable cache (Options.enableExecutableCaching,
POPSIM_CACHE_DIR) and the files of compileAndExport / loadExecutable / popsim.load.

A file holds one program, keyed by what it was compiled from: a hash of the
imported graph (ops, attributes, constants' bytes, the model's source lines), the
compile options (every field of _C.CompileOptions, including the optimizer
configuration) and the popsim build (version and extension library). Its
layout:

    b"POPSIMEX" | u32 container version | u64 length + JSON header
    | u64 length + program (C++'s serialized graph, itself checksummed)
    | u64 length + metadata (torch.save bytes; empty without them)
    | SHA-256 of everything before it

The JSON header says which popsim build wrote the file and holds the graph
hash and the options, so that a mismatch can name the option that differs.
"""

import functools
import hashlib
import io
import json
import os
import pickle
import struct
import tempfile
import warnings
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple

import torch

from popsim import _C
from popsim.api.errors import ExecutableFileError
from popsim.api.log import LOGGER
from popsim.api.options import Options
from popsim.api.version import VERSION
from popsim.frontend import structure as _structure

MAGIC = b"POPSIMEX"
CONTAINER_VERSION = 1
CACHE_VARIABLES = ("POPSIM_CACHE_DIR", "POPTORCH_CACHE_DIR")
_DIGEST_BYTES = hashlib.sha256().digest_size


@functools.lru_cache(maxsize=None)
def build_id() -> str:
    """popsim's version and a hash of its extension library: a rebuilt popsim
    (whose passes may compile differently) never reads another build's files."""
    digest = hashlib.sha256()
    with open(_C.__file__, "rb") as library:
        for chunk in iter(lambda: library.read(1 << 20), b""):
            digest.update(chunk)
    return f"{VERSION}+{digest.hexdigest()[:16]}"


def options_fingerprint(value: Any) -> Any:
    """A JSON-able description of compile options: every public field of the
    C++ option objects, recursively (new fields are included without listing
    them here)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(type(value), "__members__") and hasattr(value, "name"):  # Python or C++ enum
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, (list, tuple)):
        return [options_fingerprint(item) for item in value]
    if isinstance(value, dict):
        return [[options_fingerprint(k), options_fingerprint(v)]
                for k, v in sorted(value.items(), key=lambda item: repr(item[0]))]
    fields = {}
    for name in dir(value):
        if name.startswith("_"):
            continue
        field = getattr(value, name)
        if not callable(field):
            fields[name] = options_fingerprint(field)
    return fields


class ProgramKey(NamedTuple):
    """What a program was compiled from, and its digest (the cache file's name)."""
    graph: str  # SHA-256 of the imported graph
    options: Any  # options_fingerprint of the compile options
    build: str

    @property
    def digest(self) -> str:
        """The cache file's name. The build is left out, so that a file another
        popsim build wrote is found, reported as stale and replaced."""
        text = json.dumps([self.graph, self.options], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


def program_key(graph: "_C.Graph", options: "_C.CompileOptions") -> ProgramKey:
    fingerprint = options_fingerprint(options)
    # The replicas that take turns on a host thread follow Poplar's engine options, which
    # apply when a program loads (load_program costs its transfers with the options of
    # the day), not to the program.
    fingerprint["system"].pop("replicas_per_host_thread", None)
    return ProgramKey(hashlib.sha256(graph.serialize(stacks=False)).hexdigest(), fingerprint,
                      build_id())


def mismatch(stored: ProgramKey, current: ProgramKey) -> Optional[str]:
    """Why a file's program is not the one `current` asks for, or None."""
    if stored.build != current.build:
        return (f"it was written by popsim {stored.build}; this is popsim {current.build}, "
                "whose compiler may build another program")
    differences = []
    if stored.graph != current.graph:
        differences.append("the traced model (its ops, shapes, constants or source lines)")
    stored_options = dict(_flatten("", stored.options))
    current_options = dict(_flatten("", current.options))
    for name in sorted(set(stored_options) | set(current_options)):
        if stored_options.get(name) != current_options.get(name):
            differences.append(f"option {name}: {stored_options.get(name)!r} in the file, "
                               f"{current_options.get(name)!r} now")
    if not differences:
        return None
    return "it was compiled for another program: " + "; ".join(differences)


def _flatten(prefix: str, value: Any) -> Iterator[Tuple[str, Any]]:
    if isinstance(value, dict):
        for name, item in value.items():
            yield from _flatten(f"{prefix}.{name}" if prefix else name, item)
    else:
        yield prefix, value


class ProgramFile(NamedTuple):
    key: ProgramKey
    program: bytes
    metadata: Optional[Dict[str, Any]]  # compileAndExport's call, options and model


def write(path: str, key: ProgramKey, program: bytes,
          metadata: Optional[Dict[str, Any]] = None) -> None:
    """Writes the file atomically (a reader never sees half of it)."""
    header = json.dumps({"popsim": key.build, "container": CONTAINER_VERSION, "graph": key.graph,
                         "options": key.options}).encode()
    meta = b""
    if metadata is not None:
        buffer = io.BytesIO()
        try:
            torch.save(metadata, buffer)
        except (pickle.PicklingError, TypeError, AttributeError) as error:
            raise ExecutableFileError(
                f"Cannot write '{path}': the model, its options or optimizer, or the call's "
                f"arguments cannot be pickled ({error}). Export a model that cannot be pickled "
                "with export_model=False and load it with loadExecutable.") from error
        meta = buffer.getvalue()
    body = b"".join([MAGIC, struct.pack("<I", CONTAINER_VERSION),
                     struct.pack("<Q", len(header)), header,
                     struct.pack("<Q", len(program)), program,
                     struct.pack("<Q", len(meta)), meta])
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".popsim-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(body)
            out.write(hashlib.sha256(body).digest())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def read(path: str, with_metadata: bool = True) -> ProgramFile:
    """The file's key, program and metadata; ExecutableFileError if it is not
    a complete popsim program file."""
    with open(path, "rb") as source:
        data = source.read()
    where = f"'{path}'"
    if not data.startswith(MAGIC):
        raise ExecutableFileError(f"{where} is not a popsim program file (it does not start "
                                  f"with {MAGIC!r}).")
    body, digest = data[:-_DIGEST_BYTES], data[-_DIGEST_BYTES:]
    if len(data) < len(MAGIC) + 4 + _DIGEST_BYTES or hashlib.sha256(body).digest() != digest:
        raise ExecutableFileError(f"{where} is damaged: its SHA-256 does not match its contents "
                                  "(a partial copy or a changed file).")
    (version,) = struct.unpack_from("<I", body, len(MAGIC))
    if version != CONTAINER_VERSION:
        raise ExecutableFileError(f"{where} has container version {version}; this popsim reads "
                                  f"version {CONTAINER_VERSION}.")
    try:
        sections = []
        offset = len(MAGIC) + 4
        for _ in range(3):
            (length,) = struct.unpack_from("<Q", body, offset)
            offset += 8
            sections.append(body[offset:offset + length])
            offset += length
        header = json.loads(sections[0])
        key = ProgramKey(header["graph"], header["options"], header["popsim"])
    except (struct.error, ValueError, KeyError, TypeError) as error:
        raise ExecutableFileError(f"{where} has a malformed header: {error}.") from error
    metadata = None
    if with_metadata and sections[2]:
        metadata = torch.load(io.BytesIO(sections[2]))
    return ProgramFile(key, sections[1], metadata)


def cache_directory(options: Options) -> Optional[str]:
    """Where this model's programs are cached, or None."""
    configured = options.executable_cache_dir
    if configured is False:
        return None
    if configured:
        return configured
    for variable in CACHE_VARIABLES:
        value = os.environ.get(variable, "").strip()
        if value:
            return value
    return None


def cache_path(directory: str, key: ProgramKey) -> str:
    return os.path.join(directory, f"{key.digest}.popsim")


def executable_for(graph: _C.Graph, compiled: _C.CompileOptions, options: Options,
                   exported: Optional[Tuple[str, ProgramFile]] = None) -> _C.Executable:
    """The executable of `graph`: `exported`'s program (loadExecutable's (path, file),
    which must be the program `graph` and `compiled` give), else the cached one, else
    compiled (and cached when caching is on). A damaged or stale cache file is compiled
    again and replaced, with a warning."""
    if exported is not None:
        path, stored = exported
        reason = mismatch(stored.key, program_key(graph, compiled))
        if reason is not None:
            raise ExecutableFileError(
                f"loadExecutable('{path}'): {reason}. Wrap the model (and options) as they "
                "were when compileAndExport wrote the file, or compile and export it again.")
        return _C.load_program(stored.program, compiled)
    directory = cache_directory(options)
    if directory is None:
        return _C.compile(graph, compiled)
    key = program_key(graph, compiled)
    path = cache_path(directory, key)
    if os.path.exists(path):
        try:
            stored = read(path, with_metadata=False)
            reason = mismatch(stored.key, key)
            if reason is not None:
                raise ExecutableFileError(f"'{path}': {reason}.")
            executable = _C.load_program(stored.program, compiled)
            LOGGER.info("Loaded the compiled program from the executable cache: %s", path)
            return executable
        except (ExecutableFileError, OSError) as error:
            warnings.warn(f"popsim's executable cache does not use a file: {error} "
                          "Compiling the model again and replacing the file.")
    executable = _C.compile(graph, compiled)
    try:
        write(path, key, executable.serialize_program())
    except OSError as error:
        warnings.warn(f"popsim's executable cache cannot write '{path}' ({error}): the model "
                      "runs, but the next process compiles it again.")
    return executable


class TensorSpec(NamedTuple):
    """A call's tensor in an exported file: its shape and dtype."""
    shape: tuple
    dtype: torch.dtype


# The call a model compiled for, as exported files record it: (structure, leaves), each
# tensor leaf a TensorSpec.
CallSpec = Tuple[_structure.Structure, List[Any]]


def call_spec(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> CallSpec:
    """The call as _structure.flatten sees it, with each tensor leaf replaced by its
    TensorSpec."""
    leaves, _, structure = _structure.flatten((args, kwargs), "")
    return structure, [TensorSpec(tuple(leaf.shape), leaf.dtype)
                       if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]


def call_from_spec(spec: CallSpec) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
    """(args, kwargs) of call_spec's call, with zero tensors of the specs."""
    structure, leaves = spec
    return _structure.unflatten([torch.zeros(leaf.shape, dtype=leaf.dtype)
                                 if isinstance(leaf, TensorSpec) else leaf for leaf in leaves],
                                structure)
