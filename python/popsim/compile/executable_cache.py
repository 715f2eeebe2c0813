"""The executable cache (Options.enableExecutableCaching, POPSIM_CACHE_DIR or
POPTORCH_CACHE_DIR): compiled programs kept between processes, keyed by what
they were compiled from (executable_file.ProgramKey).

A cached program is run without being compiled, so whoever can write the
cache chooses what this user's models compute. The cache is therefore this
user's alone: popsim creates its directory with mode 0700 and uses neither a
directory nor an entry that another user owns or that its group or others
can write (with one warning saying why and how to fix it). An entry must be
a regular file (never followed through a symlink), complete (its SHA-256),
for this popsim build, this model and these options (its key), holding the
program its header records (the program's own SHA-256). Anything else is a
miss: the model compiles again and the entry is replaced, with a warning; a
cache never fails a call or changes a result.
"""

import os
import stat
import warnings
from typing import Optional, Set, Tuple

from popsim import _C
from popsim.api.errors import CompilationError, ExecutableFileError
from popsim.api.log import LOGGER
from popsim.api.options import Options
from popsim.compile import executable_file as _file

CACHE_VARIABLES = ("POPSIM_CACHE_DIR", "POPTORCH_CACHE_DIR")

_WARNED_DIRECTORIES: Set[str] = set()


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


def cache_path(directory: str, key: _file.ProgramKey) -> str:
    return os.path.join(directory, f"{key.digest}.popsim")


def usable_directory(directory: str) -> Optional[str]:
    """Creates the cache directory (mode 0700) if it is missing; why it cannot be used, or
    None."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        status = os.stat(directory)
    except OSError as error:
        return f"cannot be created or read ({error})"
    if not stat.S_ISDIR(status.st_mode):
        return "is not a directory"
    return _file.ownership_problem(status, "directory")


def executable_for(graph: _C.Graph, compiled: _C.CompileOptions, options: Options,
                   exported: Optional[Tuple[str, _file.ProgramFile]] = None) -> _C.Executable:
    """The executable of `graph`: `exported`'s program (loadExecutable's (path, file),
    which must be the program `graph` and `compiled` give), else the cached one, else
    compiled (and cached when caching is on)."""
    if exported is not None:
        path, stored = exported
        reason = _file.mismatch(stored.key, _file.program_key(graph, compiled))
        if reason is not None:
            raise ExecutableFileError(
                f"loadExecutable('{path}'): {reason}. Wrap the model (and options) as they "
                "were when compileAndExport wrote the file, or compile and export it again.")
        try:
            return _C.load_program(stored.program, compiled)
        except (ExecutableFileError, CompilationError) as error:  # name the file
            raise type(error)(f"loadExecutable('{path}'): {error}") from error
    directory = cache_directory(options)
    if directory is None:
        return _C.compile(graph, compiled)
    problem = usable_directory(directory)
    if problem is not None:
        if directory not in _WARNED_DIRECTORIES:
            _WARNED_DIRECTORIES.add(directory)
            warnings.warn(
                f"popsim does not use the executable cache directory '{directory}': it {problem}. "
                "Another user could place programs there that your models would run. Models "
                "compile without the cache; point POPSIM_CACHE_DIR (or "
                "enableExecutableCaching) at a directory of your own, mode 0700.")
        return _C.compile(graph, compiled)
    key = _file.program_key(graph, compiled)
    path = cache_path(directory, key)
    if os.path.lexists(path):
        try:
            stored = _file.read(path, private=True)
            reason = _file.mismatch(stored.key, key)
            if reason is not None:
                raise ExecutableFileError(f"'{path}': {reason}.")
            executable = _C.load_program(stored.program, compiled)
            LOGGER.info("Loaded the compiled program from the executable cache: %s", path)
            return executable
        except (ExecutableFileError, CompilationError, OSError) as error:
            where = "" if path in str(error) else f"'{path}': "
            warnings.warn(f"popsim's executable cache does not use a file: {where}{error} "
                          "Compiling the model again and replacing the file.")
    executable = _C.compile(graph, compiled)
    try:
        _file.write(path, key, executable.serialize_program())
    except OSError as error:
        warnings.warn(f"popsim's executable cache cannot write '{path}' ({error}): the model "
                      "runs, but the next process compiles it again.")
    return executable
