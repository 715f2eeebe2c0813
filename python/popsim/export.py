"""popsim.load: a model, its options and its compiled program, restored from
the file compileAndExport (or save) wrote with export_model=True."""

import os
from typing import Callable, Optional

from popsim.compile import executable_file as _executable_file
from popsim.executor import Executor, inferenceModel, trainingModel
from popsim.api.errors import ExecutableFileError
from popsim.api.options import Options


def load(filename: str, edit_opts_fn: Optional[Callable[[Options], None]] = None) -> Executor:
    """Restores a wrapped model that :meth:`popsim.Executor.compileAndExport` exported.

    The model, its options (and a training model's optimizer) come from the file, which
    :meth:`popsim.Executor.compileAndExport` or :meth:`popsim.Executor.save` wrote with
    ``export_model=True``; the model is wrapped again and loads the program, ready to run
    without compiling. The file unpickles the model, so load only files you trust, as with
    ``torch.load``.

    Args:
        filename: The path of the exported file.
        edit_opts_fn: None, or a function called with a copy of the stored options, which it
            may change first (for example ``useIpuId`` or the profile directory). Changing an
            option the program was compiled with is an error.

    Returns:
        The wrapped model (an inference or training model, as exported), with its program
        loaded.

    Raises:
        ExecutableFileError: when the file was exported with ``export_model=False`` (it holds
            no model), is not a complete popsim program file, or when the (edited) options
            do not give the program it holds (the message names the difference).
    """
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
