"""opts._Popart: PopART's session options, recorded by name; the ones popsim
acts on are parsed into the core's typed fields when set."""

import re
from typing import Any, Callable, Dict

from popsim import _C
from popsim.api import engine_options as _engine_options
from popsim.api.errors import OptionError
from popsim.api.option_fields import _OptionGroup, _prefetch_depth
from popsim.api.values import is_real


PREFETCH_DEPTH_OPTION = "defaultPrefetchBufferingDepth"


# PopART's automatic loss scaling settings, by the core's fields, with their ranges.
# PopART's option names: identifiers, fields of a structured option after a dot. Names of
# Python internals ("__init__", "_session") are no option and never reach the group.
_OPTION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*")
_LOSS_SCALING_SETTINGS = "automaticLossScalingSettings."


_LOSS_SCALING_FIELDS = {"binEdgeLocation": "loss_scaling_bin_edge",
                        "thresholdUpperCountProportion": "loss_scaling_threshold"}


_LOSS_SCALING_RANGES: Dict[str, Callable[[float], bool]] = {
    "binEdgeLocation": lambda value: 0 <= value <= 1,
    "thresholdUpperCountProportion": lambda value: 0 <= value < 1}


class _PopartOptions(_OptionGroup):
    """PopART's session options (``opts._Popart``), for advanced PopTorch users.

    ``set(name, value)`` records any of them, and ``toDict()`` shows them. popsim acts on the
    ones it has a meaning for, which PopTorch's own setters write here:
    ``instrumentWithHardwareCycleCounter`` (``Options.logCycleCount``),
    ``defaultPrefetchBufferingDepth`` (``Options.prefetchDepth``) and the
    ``automaticLossScalingSettings`` fields ``binEdgeLocation`` and
    ``thresholdUpperCountProportion`` (``Training.setAutomaticLossScaling``; its
    ``updatePeriod`` must stay 1), and of ``engineOptions`` (``setEngineOptions``) the stream
    callbacks' threads. ``enableStableNorm`` changes nothing, since popsim's norms
    always compute their statistics in the stable two-pass way. The others configure
    PopART's and Poplar's compilers, which popsim does not have.
    """

    _group_name = "Options._Popart"

    def __init__(self, core: _C.SessionOptions) -> None:
        """Creates the group with no PopART option recorded; ``popsim.Options`` creates it.

        Args:
            core: The session's options in the core, where the options popsim acts on are
                written.
        """
        super().__init__(core)
        # PopART's options are named by strings, any of them: a dict of them.
        object.__setattr__(self, "_session", {})
        # The ones popsim acts on are parsed into the core's typed fields when
        # set. PopART records any value and refuses a bad one when a session
        # is made: such a value's error, by option, and whether only training
        # models refuse it (the model raises it when it compiles).
        object.__setattr__(self, "_invalid", {})

    def set(self, name: str, value: Any) -> "_PopartOptions":
        """Records a PopART session option.

        popsim acts on ``instrumentWithHardwareCycleCounter``, ``defaultPrefetchBufferingDepth``,
        ``automaticLossScalingSettings.*`` and ``engineOptions``' stream-callback threads (see
        the group's summary) and records the others.
        ``get``, ``toDict()`` and the attribute ``opts._Popart.<name>`` read them back.

        Args:
            name: The PopART option's name, such as ``"defaultPrefetchBufferingDepth"``; a field of
                a structured option is named with a dot
                (``"automaticLossScalingSettings.binEdgeLocation"``).
            value: Its value. ``defaultPrefetchBufferingDepth`` takes a non-negative integer, as
                :meth:`popsim.Options.prefetchDepth` does; the others are checked, if at all, when
                a model compiles with them.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``name`` is not a non-empty string, the prefetch depth is not a
                non-negative integer, or the options are frozen.
        """
        if not isinstance(name, str) or not _OPTION_NAME.fullmatch(name):
            raise OptionError(f"Options._Popart.set expects a PopART option name (letters, digits "
                              f"and underscores, starting with a letter; fields after a dot), "
                              f"got {name!r}.", option="_Popart.set")
        if name == PREFETCH_DEPTH_OPTION:  # Options.prefetchDepth's value
            value = _prefetch_depth(f"_Popart.set('{name}', ...)", value)
        with self._setting():
            self._session[name] = value
            self._invalid.pop(name, None)
            try:
                self._parse(name, value)
            except OptionError as error:
                self._invalid[name] = (error, name.startswith(_LOSS_SCALING_SETTINGS))
        return self

    def _parse(self, name: str, value: Any) -> None:
        """Writes what a PopART option popsim acts on means into the core's typed fields;
        an OptionError for a value the model would refuse."""
        core = self._core
        if name == PREFETCH_DEPTH_OPTION:
            core.prefetch_depth = value
        elif name == "instrumentWithHardwareCycleCounter":
            core.log_cycle_count = bool(value)
        elif name == "engineOptions":
            core.stream_callbacks = _engine_options.session_threads(value)
        elif name.startswith(_LOSS_SCALING_SETTINGS):
            setting = name[len(_LOSS_SCALING_SETTINGS):]
            if setting == "updatePeriod":
                if not is_real(value) or value != int(value):
                    raise OptionError(
                        f"_Popart {name}={value!r}: popsim updates the automatic loss scaling "
                        "after every optimizer step (period 1) only.", option=f"_Popart.{name}")
                core.training.loss_scaling_update_period = int(value)
            elif setting in _LOSS_SCALING_RANGES:
                valid = _LOSS_SCALING_RANGES[setting]
                if not is_real(value) or not valid(value):
                    raise OptionError(
                        f"_Popart {name}={value!r} is out of range (binEdgeLocation in [0, 1], "
                        "thresholdUpperCountProportion in [0, 1)).", option=f"_Popart.{name}")
                setattr(core.training, _LOSS_SCALING_FIELDS[setting], float(value))

    def _raise_invalid(self, training: bool) -> None:
        """Raises the error of the first recorded value a model compiling now refuses."""
        for error, training_only in self._invalid.values():
            if training or not training_only:
                raise error

    def get(self, name: str, default: Any = None) -> Any:
        """Reads a recorded PopART option.

        Args:
            name: The option's name, as given to ``set``.
            default: What to return when the option was never set.

        Returns:
            The value ``name`` was set to, or ``default``.
        """
        return self._session.get(name, default)

    def __getattr__(self, name: str) -> Any:
        # opts._Popart.<name> reads a recorded option, as on PopTorch's options.
        session = self.__dict__.get("_session", {})
        if name in session:
            return session[name]
        return super().__getattr__(name)

    def toDict(self) -> Dict[str, Any]:
        """The recorded PopART options.

        Returns:
            A new dict from each option's name to its value, in the order they were first set.
        """
        return dict(self._session)

    def setEngineOptions(self, options: Dict[str, Any]) -> "_PopartOptions":
        """Records Poplar engine options, under ``"engineOptions"``.

        popsim acts on the stream callbacks' threads, ``streamCallbacks.multiThreadMode`` and
        ``streamCallbacks.numWorkerThreads``: they set how many of a process's replicas take
        turns on each host thread for their transfers, which the simulated clock costs (one
        thread for all of them by default, as in Poplar). The others tune Poplar, which popsim
        does not run, and change nothing. POPLAR_ENGINE_OPTIONS overrides these options, as it
        does in Poplar, and asks for profiles.

        Args:
            options: The engine options, by name. The group keeps a copy of the dict.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``options`` is not a dict, or the options are frozen.
        """
        if not isinstance(options, dict):
            raise OptionError(f"setEngineOptions expects a dict, got {options!r}.",
                              option="_Popart.setEngineOptions")
        return self.set("engineOptions", dict(options))

    def setPatterns(self, patterns: Dict[str, bool], level: int = 2) -> "_PopartOptions":
        """Records PopART graph patterns, under ``"patterns"`` and ``"patternsLevel"``.

        popsim has no PopART graph passes, so they change nothing.

        Args:
            patterns: Each pattern's name and whether it is on. The group keeps a copy of the
                dict.
            level: PopART's pattern level (recorded as given).

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``patterns`` is not a dict, or the options are frozen.
        """
        if not isinstance(patterns, dict):
            raise OptionError(f"setPatterns expects a dict of pattern names, got {patterns!r}.",
                              option="_Popart.setPatterns")
        self.set("patterns", dict(patterns))
        return self.set("patternsLevel", level)
