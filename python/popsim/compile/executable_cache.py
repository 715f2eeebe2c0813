"""Where a model's executable comes from: compiled, the executable cache
(Options.enableExecutableCaching, POPSIM_CACHE_DIR or POPTORCH_CACHE_DIR) or
loadExecutable's file. The policy is the host layer's
(csrc/host/executable_cache.h, shared with the C++ API): the cache is this
user's alone (a directory or entry another user owns or others can write is
not used), and anything it cannot use is a miss that recompiles, with a
warning; a cache never fails a call or changes a result.
"""

import warnings
from typing import Optional, Tuple

from popsim import _C
from popsim.api.options import Options
from popsim.compile import executable_file as _file


def executable_for(graph: _C.Graph, compiled: _C.CompileOptions, options: Options,
                   exported: Optional[Tuple[str, _file.ProgramFile]] = None) -> _C.Executable:
    """The executable of `graph`: `exported`'s program (loadExecutable's (path, file),
    which must be the program `graph` and `compiled` give), else the cached one, else
    compiled (and cached when caching is on)."""
    if exported is not None:
        path, stored = exported
        return _C.exported_executable(path, stored.native, graph, compiled)
    executable, _, problems = _C.executable_for(graph, compiled,
                                                options._session.executable_cache)
    for problem in problems:
        warnings.warn(problem, stacklevel=2)
    return executable
