"""Reading a profile directory back: popsim.profiling.load(DIR)."""

import json
import os
from typing import Any, Dict, List, Optional, Union

from popsim import _C
from popsim.reports.trace import ExecutionTrace
from popsim.profiling import _layout

NO_PROFILE_HINT = ("Enable profiling with opts.enableProfiling(DIR) or the environment variable "
                   "POPSIM_PROFILE_DIR=DIR, then compile and run a model.")


class ProfileNotFoundError(FileNotFoundError):
    """A directory that holds no popsim profile."""


class Profile:
    """One model's profile: its last call's execution trace and its memory report.

    :func:`popsim.profiling.load` and :func:`popsim.profiling.load_all` read them from a
    profile directory; the constructor takes the content of the directory's files.

    Args:
        directory: The model's profile directory, which the files were read from.
        chrome_trace: The content of ``trace.json``; None before the first call.
        memory: The content of ``memory.json``; None without it.

    Attributes:
        directory: The model's profile directory.
        model: The model's class name ("?" if neither file says).
        kind: "training" or "inference" ("?" if neither file says).
        trace: The last call's execution trace, rebuilt from ``trace.json``; None before the
            first call.
        memory: The content of ``memory.json`` (memory per IPU by category); None without it.
        stages: The pipeline stages, as dicts of ``stage``, ``ipu`` and ``blocks``.
        host: The number of calls made (``calls``) and the last call's measured wall-clock
            seconds (``wall_seconds``); None before the first call.
        replication: The job's replica count and, per IPU, the cycles a call spends in
            collectives across replicas; None without a trace.
        sizing: The call's :meth:`popsim.SizingReport.to_dict`; None without one.
        chrome_trace: The content of ``trace.json``, Chrome Trace Event JSON; None before the
            first call.
    """

    def __init__(self, directory: str, chrome_trace: Optional[Dict[str, Any]],
                 memory: Optional[Dict[str, Any]]) -> None:
        self.directory = directory
        self.chrome_trace = chrome_trace
        self.memory = memory
        meta = chrome_trace["popsim"] if chrome_trace is not None else {}
        self.model: str = meta.get("model") or (memory or {}).get("model", "?")
        self.kind: str = meta.get("kind") or (memory or {}).get("kind", "?")
        self.stages: List[Dict[str, Any]] = meta.get("stages", [])
        self.host: Optional[Dict[str, Any]] = meta.get("host")
        self.replication: Optional[Dict[str, Any]] = meta.get("replication")
        self.sizing: Optional[Dict[str, Any]] = meta.get("sizing")
        self.trace: Optional[ExecutionTrace] = None
        if chrome_trace is not None:
            # The core reads the call back from trace.json, as it wrote it.
            self.trace = ExecutionTrace._wrap(
                _C.execution_trace_from_document(json.dumps(chrome_trace)))

    @property
    def num_ipus(self) -> int:
        """The number of IPUs the model ran on.

        Its trace's, else its memory report's; 0 without either.
        """
        if self.trace is not None:
            return self.trace.num_ipus
        return len(self.memory["ipus"]) if self.memory is not None else 0

    def summary(self) -> str:
        """Summarises the profile as text, as ``python -m popsim.profiling`` prints it.

        Returns:
            The summary, in lines that give the model, its chip and IPUs, the replicas, each
            IPU's busy, compute and idle shares and memory against its limit, then, where the
            profile has them, the stages' balance, the sizing (step time, throughput, where
            the time goes) and advice.

        Raises:
            ValueError: when the files are JSON but not a popsim profile's (an entry is
                missing or of another type).
        """
        # The core summarises (csrc/profile/profile_summary.h), as it does for report.html.
        return _C.profile_summary(
            self.directory,
            json.dumps(self.chrome_trace) if self.chrome_trace is not None else None,
            json.dumps(self.memory) if self.memory is not None else None)

    def __repr__(self) -> str:
        return f"Profile({self.model} ({self.kind}) in {self.directory!r})"


def _read_json(path: str) -> Optional[Dict[str, Any]]:
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as source:
        try:
            return json.load(source)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not valid JSON ({error}); was it written by a "
                             "process that was killed mid-write?") from error


def load_model_directory(directory: str) -> Profile:
    return Profile(directory, _read_json(os.path.join(directory, _layout.TRACE_FILE)),
                   _read_json(os.path.join(directory, _layout.MEMORY_FILE)))


def load_all(directory: Union[str, "os.PathLike[str]"]) -> List[Profile]:
    """Reads every model profile in a directory.

    Args:
        directory: A model's profile directory (``DIR/training``), or the directory given to
            ``Options.enableProfiling``, whose subdirectories ``training``, ``inference``,
            ``training_1``, ... (or the names ``Options.modelName`` gave) hold the profiles.

    Returns:
        The profiles, one per model directory (``directory`` itself if it is one, else its
        subdirectories in order, ``training`` before ``training_1`` before ``training_10``).

    Raises:
        ProfileNotFoundError: when ``directory`` does not exist or holds no profile.
        ValueError: when a profile file is not valid JSON (for instance, half written).
    """
    directory = os.fspath(directory)
    found = _layout.model_directories(directory)
    if not found:
        what = "does not exist" if not os.path.exists(directory) else "holds no popsim profile"
        raise ProfileNotFoundError(
            f"'{directory}' {what}: expected {_layout.TRACE_FILE} or {_layout.MEMORY_FILE} in it "
            f"or in a subdirectory (training, inference, training_1, ..., or a modelName) "
            f"{NO_PROFILE_HINT}")
    return [load_model_directory(path) for path in found]


def load(directory: Union[str, "os.PathLike[str]"]) -> Profile:
    """Reads the profile of one model.

    Example:
        >>> import tempfile
        >>> directory = tempfile.mkdtemp()
        >>> opts = popsim.Options().enableProfiling(directory)
        >>> executor = popsim.inferenceModel(torch.nn.Linear(4, 2), opts)
        >>> _ = executor(torch.randn(2, 4))
        >>> profile = popsim.profiling.load(directory)
        >>> type(profile).__name__
        'Profile'

    Args:
        directory: A model's profile directory (``DIR/training``), or the directory given to
            ``Options.enableProfiling`` if it holds one model's profile.

    Returns:
        The model's profile.

    Raises:
        ValueError: when ``directory`` holds the profiles of several models (use
            :func:`popsim.profiling.load_all` or name one model's directory), or when a
            profile file is not valid JSON.
        ProfileNotFoundError: when ``directory`` does not exist or holds no profile.
    """
    profiles = load_all(directory)
    if len(profiles) > 1:
        names = ", ".join(os.path.basename(p.directory) for p in profiles)
        raise ValueError(
            f"'{directory}' holds the profiles of {len(profiles)} models ({names}): pass one "
            f"model's directory, e.g. load('{os.path.join(directory, os.path.basename(profiles[0].directory))}'), "
            "or use load_all().")
    return profiles[0]
