"""A wrapped model's profile (Options.enableProfiling, POPSIM_PROFILE_DIR, or
POPLAR_ENGINE_OPTIONS' autoReport directory, as PopTorch tutorials ask for
reports) and its logDir files: the core's ProfileWriter writes memory.json
when the model compiles, trace.json and report.html after each call; logDir
gets each compilation's IR and memory report."""

import contextlib
import itertools
import json
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple

from popsim import _C
from popsim.api import engine_options as _engine_options
from popsim.api.errors import OptionError
from popsim.api.option_fields import profile_directory
from popsim.api.options import Options

PROFILE_DIR_VARIABLE = "POPSIM_PROFILE_DIR"
_log_counter = itertools.count()
_not_profiling = {"depth": 0}


@contextlib.contextmanager
def not_profiling() -> Iterator[None]:
    """Models compiled inside write no profile and no logDir files: the planners
    compile a model many times cost-only, and a directory per candidate is not
    what profiling options, POPSIM_PROFILE_DIR or logDir ask for."""
    _not_profiling["depth"] += 1
    try:
        yield
    finally:
        _not_profiling["depth"] -= 1


def profiling_allowed() -> bool:
    """False inside not_profiling()."""
    return _not_profiling["depth"] == 0


class ProfileRecorder:
    """One wrapped model's profile writer, kept across recompilations (the same
    directory)."""

    def __init__(self, options: Options, training: bool) -> None:
        self._options = options
        self._kind = "training" if training else "inference"
        self._writer: Optional[_C.ProfileWriter] = None

    @property
    def directory(self) -> Optional[str]:
        """Where the model writes its profile; None when it does not, or before it
        compiles."""
        return self._writer.directory if self._writer is not None else None

    def root(self) -> Optional[str]:
        """enableProfiling's directory, else POPSIM_PROFILE_DIR's, else
        POPLAR_ENGINE_OPTIONS' autoReport directory, else None. Checked before compiling,
        so that a bad one fails first. None inside not_profiling()."""
        if not profiling_allowed():
            return None
        if self._options.profile_dir is not None:
            return self._options.profile_dir
        value = os.environ.get(PROFILE_DIR_VARIABLE, "")
        if value.strip():
            return profile_directory(PROFILE_DIR_VARIABLE, value)
        engine = _engine_options.profile_directory()
        return profile_directory(_engine_options.VARIABLE, engine) if engine else None

    def compiled(self, root: Optional[str], program: _C.DeviceProgram, model: str,
                 stages: List[Tuple[str, int, int]], seconds: float, replicas: int) -> None:
        """Writes the memory profile of a compilation, whose blocks run as `stages`,
        into `root` (None: no profiling) and prepares the per-call trace."""
        if root is None:
            self._writer = None
            return
        if self._writer is None or self._writer.root != root:
            try:
                self._writer = _C.ProfileWriter(root, self._kind, self._options.model_name)
            except OSError as error:
                source = ("enableProfiling" if self._options.profile_dir is not None
                          else PROFILE_DIR_VARIABLE)
                raise OptionError(f"{source}: cannot create the profile directory under "
                                  f"'{root}': {error}.", option=source) from error
            if self._options._plan_section is not None:  # the options of a job plan
                self._writer.set_plan_section(self._options._plan_section)
        self._writer.after_compile(program.first, model, stages, seconds, replicas)

    def called(self, program: _C.DeviceProgram, seconds: float, job: Dict[str, Any]) -> None:
        """A call that took `seconds` on the host: trace.json and report.html."""
        if self._writer is not None:
            self._writer.after_call(program.first, seconds, job)


def write_log(log_dir: str, model: str, graph: _C.Graph, program: _C.DeviceProgram) -> None:
    """Writes a compilation's IR (imported and optimised) and memory report into
    logDir."""
    os.makedirs(log_dir, exist_ok=True)
    problem = _C.shared_directory_problem(log_dir)
    if problem is not None:
        raise OptionError(f"logDir: popsim does not write into '{log_dir}', which {problem}. "
                          "Point logDir at a directory of your own.", option="logDir")
    stem = os.path.join(log_dir, f"{model}_{next(_log_counter)}")
    ir_text = "".join(["# Imported from the trace\n", graph.to_text(True),
                       "\n# Program (optimised)\n", program.first.graph_text(True)])
    memory = json.dumps({"memory": program.first.memory_report().to_dict(),
                         "program": [step.to_dict() for step in program.first.program()]},
                        indent=2)
    # Names are predictable: written so that a name planted in the directory is never followed.
    _C.write_file_atomically(stem + ".ir.txt", ir_text.encode("utf-8"))
    _C.write_file_atomically(stem + ".memory.json", memory.encode("utf-8"))
