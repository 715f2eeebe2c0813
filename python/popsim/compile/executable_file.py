"""Compiled programs on disk: the files of compileAndExport / loadExecutable /
popsim.load and the executable cache's entries (executable_cache.py).

A file holds one program, keyed by what it was compiled from: a hash of the
imported graph (ops, attributes, constants' bytes, the model's source lines), the
compile options (every field of _C.CompileOptions, including the optimizer
configuration) and the popsim build (version and extension library). Its
layout:

    b"POPSIMEX" | u32 container version | u64 length + JSON header
    | u64 length + program (C++'s serialized graph, itself checksummed)
    | u64 length + pickled model, options and optimizer (export_model=True; else empty)
    | SHA-256 of everything before it

The JSON header says which popsim build wrote the file and holds the graph
hash and the options (so that a mismatch can name the option that differs),
the program's own SHA-256, and for exported files whether the model trains
and the call it compiled for (call_spec.py). Everything loadExecutable and
the cache need is in the header and the program, which popsim parses itself
(the C++ reader validates every index, stage, IPU and shape): reading a file
runs no code from it. Only popsim.load(..., trusted=True) unpickles the
model section. The SHA-256s detect damage, not tampering: whoever can write
a file chooses what it holds, which is why the cache accepts only entries
this user owns (executable_cache.py).
"""

import errno
import functools
import hashlib
import io
import json
import os
import pickle
import stat
import struct
from typing import Any, Dict, Iterator, NamedTuple, Optional, Tuple

import torch

from popsim import _C
from popsim.api.errors import ExecutableFileError
from popsim.api.version import VERSION
from popsim.compile import call_spec as _call_spec

MAGIC = b"POPSIMEX"
# 2: no pickle outside the model section; the program's SHA-256 in the header.
CONTAINER_VERSION = 2
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
    # compileAndExport's facts, None in a cache entry: whether the model trains, and the
    # call it compiled for (data, parsed by popsim: reading them runs no code).
    training: Optional[bool]
    call: Optional[_call_spec.CallSpec]
    # The pickled model, options and optimizer of export_model=True (b"" otherwise):
    # unpickled only by load_model, on the caller's explicit trust.
    model: bytes

    def load_model(self) -> Dict[str, Any]:
        """The model, options and optimizer the file holds. Unpickling runs any code the
        file's author put in it: popsim.load calls it only when trusted=True."""
        return torch.load(io.BytesIO(self.model), weights_only=False)


def write(path: str, key: ProgramKey, program: bytes, *, training: Optional[bool] = None,
          call: Optional[_call_spec.CallSpec] = None,
          model: Optional[Dict[str, Any]] = None) -> None:
    """Writes the file atomically (a reader never sees half of it), readable by its
    owner only."""
    header = json.dumps({"popsim": key.build, "container": CONTAINER_VERSION, "graph": key.graph,
                         "options": key.options,
                         "program_sha256": hashlib.sha256(program).hexdigest(),
                         "training": training,
                         "call": None if call is None else _call_spec.to_json(call)}).encode()
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
    body = b"".join([MAGIC, struct.pack("<I", CONTAINER_VERSION),
                     struct.pack("<Q", len(header)), header,
                     struct.pack("<Q", len(program)), program,
                     struct.pack("<Q", len(pickled)), pickled])
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    # The core's writer (common/safe_files.h): an exclusively created temporary file, never a
    # name planted in a shared directory, renamed over the path.
    _C.write_file_atomically(path, body + hashlib.sha256(body).digest(), 0o600)


def read(path: str, private: bool = False) -> ProgramFile:
    """The file's key, program and facts; ExecutableFileError if it is not a complete popsim
    program file. Nothing in the file is unpickled (see ProgramFile.load_model).

    `private` (a cache entry): the path must be a regular file, not a symlink, owned by
    this user and writable by no one else; checked on the open file itself, so the file
    cannot be swapped between the check and the read."""
    where = f"'{path}'"
    flags = os.O_RDONLY | (os.O_NOFOLLOW if private else 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        if private and error.errno == errno.ELOOP:
            raise ExecutableFileError(f"{where} is a symbolic link.") from error
        raise
    with os.fdopen(descriptor, "rb") as source:
        if private:
            problem = ownership_problem(os.fstat(source.fileno()), "file")
            if problem is not None:
                raise ExecutableFileError(f"{where} {problem}.")
        data = source.read()
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
                                  f"version {CONTAINER_VERSION}. Export the model again.")
    try:
        sections = []
        offset = len(MAGIC) + 4
        for name in ("header", "program", "model"):
            (length,) = struct.unpack_from("<Q", body, offset)
            offset += 8
            if length > len(body) - offset:
                raise ValueError(f"its {name} section claims {length} bytes, "
                                 f"{len(body) - offset} follow")
            sections.append(body[offset:offset + length])
            offset += length
        if offset != len(body):
            raise ValueError(f"{len(body) - offset} bytes follow its last section")
        header = json.loads(sections[0])
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
        key = ProgramKey(str(header["graph"]), header["options"], str(header["popsim"]))
        if header["program_sha256"] != hashlib.sha256(sections[1]).hexdigest():
            raise ValueError("the program's SHA-256 is not the one its header records")
        training = header["training"]
        if training not in (None, True, False):
            raise ValueError(f"'training' is {training!r}")
    except (struct.error, ValueError, KeyError, TypeError) as error:
        raise ExecutableFileError(f"{where} has a malformed header: {error}.") from error
    call = None if header["call"] is None else _call_spec.from_json(header["call"], where)
    return ProgramFile(key, sections[1], training, call, sections[2])


def ownership_problem(status: os.stat_result, what: str) -> Optional[str]:
    """Why a cache directory or entry with this status must not be used (another user's,
    or writable by others, who could then choose the program this user runs), or None."""
    if status.st_uid != os.getuid():
        return f"is owned by user id {status.st_uid}, not by this user ({os.getuid()})"
    if what == "file" and not stat.S_ISREG(status.st_mode):
        return "is not a regular file"
    if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"is writable by its group or by others (mode {stat.S_IMODE(status.st_mode):04o}; "
                f"`chmod go-w` it)")
    return None
