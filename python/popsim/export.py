"""popsim.load: a model, its options and its compiled program, restored from
the file compileAndExport (or save) wrote with export_model=True."""

import os
from typing import Callable, Optional

import torch

from popsim.api.enums import ConnectionType
from popsim.compile import executable_file as _executable_file
from popsim.executor import Executor, inferenceModel, trainingModel
from popsim.api.errors import ExecutableFileError
from popsim.api.options import Options


def load(filename: str, edit_opts_fn: Optional[Callable[[Options], None]] = None, *,
         trusted: bool = False) -> Executor:
    """Restores a wrapped model that :meth:`popsim.Executor.compileAndExport` exported.

    The model, its options (and a training model's optimizer) come from the file, which
    :meth:`popsim.Executor.compileAndExport` or :meth:`popsim.Executor.save` wrote with
    ``export_model=True``; the model is wrapped again and loads the program, ready to run
    without compiling. A program compiled for an offline target
    (:meth:`popsim.Options.useOfflineIpuTarget`) is loaded to run: its options connect
    (``ConnectionType.Always``) unless ``edit_opts_fn`` sets otherwise.

    The model is stored pickled, and unpickling runs whatever code the file's author put in
    it, as ``torch.load`` does without ``weights_only``. So popsim unpickles only when told the
    file is trusted: pass ``trusted=True`` for files you (or someone you trust) wrote. For a
    file from elsewhere, build and wrap the model yourself and call
    :meth:`popsim.Executor.loadExecutable`, which runs no code from the file. (PopTorch's
    ``load`` unpickles without asking; this is the one difference.)

    Args:
        filename: The path of the exported file.
        edit_opts_fn: None, or a function called with a copy of the stored options, which it
            may change first (for example ``useIpuId`` or the profile directory). Changing an
            option the program was compiled with is an error.
        trusted: Whether the file comes from someone you trust to run code on your machine.

    Returns:
        The wrapped model (an inference or training model, as exported), with its program
        loaded.

    Raises:
        ExecutableFileError: when ``trusted`` is not True, when the file was exported with
            ``export_model=False`` (it holds no model), is not a complete popsim program
            file, when its model section does not unpickle to a model and options, or when
            the (edited) options do not give the program it holds (the message names the
            difference).
    """
    path = os.fspath(filename)
    stored = _executable_file.read(path)
    if not stored.model:
        raise ExecutableFileError(
            f"'{path}' was exported with export_model=False, so it holds no model: wrap the "
            "model with popsim.inferenceModel or popsim.trainingModel and call "
            f"loadExecutable('{path}') on it.")
    if trusted is not True:
        raise ExecutableFileError(
            f"popsim.load('{path}') would unpickle the model the file holds, which runs any "
            "code the file's author put in it. Pass trusted=True if you or someone you trust "
            "wrote the file; otherwise wrap the model yourself and call "
            f"loadExecutable('{path}') on it, which runs no code from the file.")
    try:
        stored_model = stored.load_model()
    except Exception as error:  # noqa: BLE001 - whatever the pickle raises
        raise ExecutableFileError(f"'{path}': its model section does not unpickle ({error}).") \
            from error
    if (not isinstance(stored_model, dict)
            or not isinstance(stored_model.get("model"), torch.nn.Module)
            or not isinstance(stored_model.get("options"), Options)):
        raise ExecutableFileError(f"'{path}': its model section holds "
                                  f"{type(stored_model).__name__}, not the model and options "
                                  "compileAndExport stores.")
    options = stored_model["options"].clone()
    if options.connection_type == ConnectionType.Never:
        # Compiled for an offline target (useOfflineIpuTarget) to be loaded where it runs,
        # as PopTorch's precompilation has it; edit_opts_fn may say otherwise.
        options.connectionType(ConnectionType.Always)
    if edit_opts_fn is not None:
        edit_opts_fn(options)
    if stored.training:
        executor = trainingModel(stored_model["model"], options, stored_model["optimizer"])
    else:
        executor = inferenceModel(stored_model["model"], options)
    executor.loadExecutable(path)
    return executor
