"""popsim.Options' setters of the session around the calls: logs, profiles,
the executable cache, source locations and name scopes, the model's name,
and what PopTorch code sets that popsim records."""

import os
from typing import TYPE_CHECKING, Any, Dict, List, Literal, Optional, Self, Tuple, Union

from popsim.api.enums import CommGroupType, ConnectionType, OutputMode, SyncPattern
from popsim.api.errors import OptionError
from popsim.api.option_fields import (_OptionGroup, _bool, profile_directory,
                                      source_location_excludes)
from popsim.api.strategies import _ExecutionStrategy
from popsim.api.values import is_integer, is_string_list


class _RunSetters(_OptionGroup):
    """popsim.Options' setters of the session around the calls (documented there)."""

    if TYPE_CHECKING:  # what the setters write, declared on popsim.Options
        device_iterations: int
        replication_factor: int
        input_replica_grouping: Tuple[int, CommGroupType]
        output_mode: OutputMode
        output_return_period: int
        random_seed: Optional[int]
        log_dir: Optional[str]
        profile_dir: Optional[str]
        use_ipu_model: bool
        execution_strategy: Optional[_ExecutionStrategy]
        available_memory_proportion: Dict[int, float]
        auto_round_num_ipus: bool
        show_compilation_progress_bar: bool
        connection_type: ConnectionType
        sync_pattern: SyncPattern
        broadcast_buffers: bool
        updatable_named_buffers: List[str]
        synthetic_data: bool
        module_namescope: bool
        source_location_excludes: Optional[List[str]]
        executable_cache_dir: Union[None, Literal[False], str]
        ipu_id: Optional[int]
        anchored_tensors: Dict[str, Tuple[str, Optional[OutputMode], int]]
        model_name: Optional[str]
        relax_optimizer_attributes_checks: bool
        Simulator: Any
        _Popart: Any

    def logDir(self, log_dir: Union[str, os.PathLike]) -> Self:
        """Sets a directory where each compilation writes its IR and memory report.

        After each compilation popsim writes, in that directory (created when needed),
        ``<model class>_<n>.ir.txt`` (the traced graph and the optimised program) and
        ``<model class>_<n>.memory.json`` (the memory report and the program's steps).

        Args:
            log_dir: The directory's path (a non-empty string or ``os.PathLike``).

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``log_dir`` is not a non-empty path, or the options are frozen.
        """
        if not isinstance(log_dir, (str, os.PathLike)) or not os.fspath(log_dir):
            raise OptionError(f"logDir expects a directory's path (a non-empty str or "
                              f"os.PathLike), got {log_dir!r}.", option="logDir")
        with self._setting():
            self.log_dir = str(os.fspath(log_dir))
        return self

    def enableProfiling(self, profile_dir: Optional[Union[str, os.PathLike]] = None) -> Self:
        """Sets the directory where each model writes its profile.

        A profile is the execution trace of the model's last call (Chrome Trace Event JSON),
        its memory report and ``report.html``, in a subdirectory per model (``training``,
        ``inference``, ``training_1``, ...; see :meth:`popsim.Options.modelName`). See
        :mod:`popsim.profiling`. The environment variable POPSIM_PROFILE_DIR does the same for
        models whose options leave this unset. The directory is created when a model compiles.

        Args:
            profile_dir: The directory, new or existing, as a non-empty ``str`` or
                ``os.PathLike``; None (the default, as in PopTorch): the current directory.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``profile_dir`` is not a non-empty path, names an existing file,
                or the options are frozen.
        """
        with self._setting():
            self.profile_dir = profile_directory(
                "enableProfiling", os.getcwd() if profile_dir is None else profile_dir)
        return self

    def useIpuModel(self, use_model: bool) -> Self:
        """Accepted for PopTorch compatibility: popsim always runs on simulated IPUs.

        The value is recorded (``use_ipu_model``) and changes nothing.

        Args:
            use_model: Whether PopTorch would run on its IPU Model rather than hardware.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``use_model`` is not a bool, or the options are frozen.
        """
        if not isinstance(use_model, bool):
            raise OptionError(f"useIpuModel expects a bool, got {use_model!r}.",
                              option="useIpuModel")
        with self._setting():
            self.use_ipu_model = use_model
        return self

    def logCycleCount(self, log_cycle_count: bool) -> Self:
        """Sets whether each call logs its simulated cycle count.

        The log line is "Total number of IPU cycles: N", on the logger "popsim" at level INFO
        (``POPSIM_LOG_LEVEL=info`` shows it on stderr). ``cycleCount()`` returns the count with
        or without this option. As in PopTorch, the value is PopART's
        ``instrumentWithHardwareCycleCounter``, in ``opts._Popart``.

        Args:
            log_cycle_count: True to log the count; False (the default) not to.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``log_cycle_count`` is not a bool, or the options are frozen.
        """
        self._Popart.set("instrumentWithHardwareCycleCounter", _bool("logCycleCount", log_cycle_count))
        return self

    def showCompilationProgressBar(self, show: bool = True) -> Self:
        """Shows or hides the "Graph compilation" progress bar for this model.

        The bar appears for compilations longer than a second; the environment variable
        ``POPSIM_PROGRESS=0`` hides it everywhere.

        Args:
            show: True (the default) to show it; False to hide it.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``show`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.show_compilation_progress_bar = _bool("showCompilationProgressBar", show)
        return self

    def sourceLocationExcludes(self, excludes: List[str]) -> Self:
        """Sets which stack frames are skipped when finding an op's source line.

        An op's source line (in error messages, the profile and the IR dumps) is the first
        frame of its stack whose file path contains none of ``excludes``. Add to the list with
        :meth:`popsim.Options.appendToLocationExcludes`.

        Args:
            excludes: Substrings of file paths. They replace the default, torch's and popsim's
                directories.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``excludes`` is not a list of strings, or the options are frozen.
        """
        if not is_string_list(excludes):
            raise OptionError(f"sourceLocationExcludes expects a list of str, got {excludes!r}.",
                              option="sourceLocationExcludes")
        with self._setting():
            self.source_location_excludes = list(excludes)
        return self

    def appendToLocationExcludes(self, *excludes: str) -> Self:
        """Also skips the stack frames whose file path contains one of ``excludes``.

        This applies when finding an op's source line (see
        :meth:`popsim.Options.sourceLocationExcludes`), for example to skip a layer library's
        directory. The strings are added to the current list (the default: torch's and popsim's
        directories).

        Args:
            *excludes: Substrings of file paths.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if an argument is not a string, or the options are frozen.
        """
        if not all(isinstance(e, str) for e in excludes):
            raise OptionError(
                f"appendToLocationExcludes expects str arguments, got {excludes!r}.",
                option="appendToLocationExcludes")
        with self._setting():
            self.source_location_excludes = source_location_excludes(self.source_location_excludes) + list(excludes)
        return self

    def disableModuleNamescope(self) -> Self:
        """Stops naming ops after the modules that run them.

        By default, as in PopTorch, an op run inside submodule ``encoder.layers.0`` of the model
        is named ``encoder/layers/0/<op>`` (with :class:`popsim.NameScope`'s names joined in), in
        the program, the execution trace and error messages.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if the options are frozen (they were passed to a model).
        """
        with self._setting():
            self.module_namescope = False
        return self

    def enableExecutableCaching(self, path: Optional[Union[str, os.PathLike]]) -> Self:
        """Keeps compiled programs in a directory, as PopTorch keeps its executables.

        A model compiled again with the same traced program, options and popsim build, in this
        process or another, loads its program from there instead of running the compiler
        passes. Files are versioned and checksummed; a damaged or stale one is compiled again,
        with a warning, and replaced. popsim never deletes cache files. Without this option, the
        environment variable POPSIM_CACHE_DIR (or POPTORCH_CACHE_DIR) names the directory.

        Args:
            path: The cache directory (created when needed), or None to turn caching off,
                ignoring those environment variables too.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``path`` is neither None nor a non-empty ``str`` or ``os.PathLike``,
                or the options are frozen.
        """
        if path is not None and (not isinstance(path, (str, os.PathLike)) or not os.fspath(path)):
            raise OptionError(f"enableExecutableCaching expects a directory path or None, got "
                              f"{path!r}.", option="enableExecutableCaching")
        with self._setting():
            self.executable_cache_dir = False if path is None else os.fspath(path)
        return self

    def useOfflineIpuTarget(self, ipu_version: int = 2) -> Self:
        """Compiles for an IPU generation without running.

        This sets ``connectionType(ConnectionType.Never)`` and ``Simulator.ipuVersion``. The
        compiled model's ``memoryReport()`` is available; calling the model raises an error.

        Args:
            ipu_version: 1 (Mk1), 2 (Mk2, the default) or 21 (Bow).

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``ipu_version`` is not 1, 2 or 21, or the options are frozen.
        """
        versions = {1: "Mk1", 2: "Mk2", 21: "Bow"}
        if ipu_version not in versions:
            raise OptionError(f"useOfflineIpuTarget expects IPU version 1 (Mk1), 2 (Mk2) or "
                              f"21 (Bow), got {ipu_version!r}.", option="useOfflineIpuTarget")
        self.Simulator.ipuVersion(versions[ipu_version])
        return self.connectionType(ConnectionType.Never)

    def modelName(self, name: str) -> Self:
        """Sets the model's name in its profile.

        The name is the subdirectory of the profile directory the model writes into (see
        :meth:`popsim.Options.enableProfiling`); a second model of the same name gets
        ``<name>_1``, and so on.

        Args:
            name: A non-empty name without a path separator. Unset, ``"training"`` or
                ``"inference"``, after the model's kind.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``name`` is not a non-empty string, contains a path separator or is
                ``"."`` or ``".."``, or the options are frozen.
        """
        if not isinstance(name, str) or not name or os.sep in name or name in (".", ".."):
            raise OptionError(f"modelName expects a non-empty name without '{os.sep}' (it "
                              f"names a directory), got {name!r}.", option="modelName")
        with self._setting():
            self.model_name = name
        return self

    def relaxOptimizerAttributesChecks(self, relax: bool = True) -> Self:
        """Sets how popsim reports optimizer attributes it does not use.

        The check covers parameter-group attributes beyond torch's own for the optimizer and
        the LR schedulers' ``"initial_lr"``, when the model compiles and in ``setOptimizer``.

        Args:
            relax: True (the default of this call): log them at DEBUG level. False (the
                options' default): warn once per attribute.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``relax`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.relax_optimizer_attributes_checks = _bool("relaxOptimizerAttributesChecks", relax)
        return self

    def useIpuId(self, ipu_id: int) -> Self:
        """Records the ID of the IPU device to attach to, for PopTorch code.

        The ID (as gc-info lists devices) is exported with the model. Each popsim model
        simulates a system of its own, so there is no device to pick: the ID changes nothing and
        needs no recompilation.

        Args:
            ipu_id: The device ID.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``ipu_id`` is not a non-negative integer, or the options are frozen.
        """
        if not is_integer(ipu_id) or ipu_id < 0:
            raise OptionError(f"useIpuId expects a non-negative device ID, got {ipu_id!r}.",
                              option="useIpuId")
        with self._setting():
            self.ipu_id = int(ipu_id)
        return self

    def enableStableNorm(self, enabled: bool) -> Self:
        """Records PopART's ``enableStableNorm`` in ``opts._Popart``, as PopTorch does.

        It changes nothing: popsim's norms always compute their statistics in the stable
        two-pass way.

        Args:
            enabled: The value to record.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        self._Popart.set("enableStableNorm", _bool("enableStableNorm", enabled))
        return self
