"""popsim.load: a model, its options and its compiled program, restored from
the file compileAndExport (or save) wrote with export_model=True."""

import os
from typing import Callable, Optional

from popsim import _executable_file
from popsim._executor import Executor, inferenceModel, trainingModel
from popsim.errors import ExecutableFileError
from popsim.options import Options


def load(filename: str, edit_opts_fn: Optional[Callable[[Options], None]] = None) -> Executor:
    """The wrapped model compileAndExport(filename, ...) exported, ready to
    run without compiling. `edit_opts_fn(options)` may change the options
    first (for example useIpuId or the profile directory); changing one the
    program was compiled with is an ExecutableFileError naming it. The file
    unpickles the model, so load only files you trust, as with torch.load."""
    path = os.fspath(filename)
    stored = _executable_file.read(path)
    metadata = stored.metadata or {}
    if metadata.get("model") is None:
        raise ExecutableFileError(
            f"'{path}' was exported with export_model=False, so it holds no model: wrap the "
            "model with popsim.inferenceModel or popsim.trainingModel and call "
            f"loadExecutable('{path}') on it.")
    options = metadata["options"].clone()
    if edit_opts_fn is not None:
        edit_opts_fn(options)
    if metadata["training"]:
        executor = trainingModel(metadata["model"], options, metadata["optimizer"])
    else:
        executor = inferenceModel(metadata["model"], options)
    executor.loadExecutable(path)
    return executor
