"""opts.Simulator: the simulated machine's settings, popsim's own (PopTorch has no such group)."""

from typing import Optional, Union

from popsim import _C
from popsim.api.errors import OptionError
from popsim.api.option_fields import _CoreField, _OptionGroup, _bool, _parse_memory, positive_int


class _SimulatorOptions(_OptionGroup):
    """The simulated machine (``opts.Simulator``): popsim's own settings."""

    num_ipus: Optional[int]
    ipu_version: str
    memory_per_ipu: Optional[int]
    threads_per_ipu: Optional[int]
    cost_only: bool
    allow_over_capacity: bool
    _group_name = "Options.Simulator"
    _core_fields = {
        "num_ipus": _CoreField("simulator.num_ipus"),
        "ipu_version": _CoreField("simulator.chip", lambda name: getattr(_C.ChipVersion, name),
                                  lambda chip: chip.name),
        "memory_per_ipu": _CoreField("simulator.memory_per_ipu"),
        "threads_per_ipu": _CoreField("simulator.threads_per_ipu"),
        "cost_only": _CoreField("simulator.cost_only"),
        "allow_over_capacity": _CoreField("simulator.allow_over_capacity"),
    }

    def numIpus(self, count: int) -> "_SimulatorOptions":
        """Sets how many IPUs the simulated system has.

        Unset, the system has as many IPUs as the model uses (see also
        :meth:`popsim.Options.autoRoundNumIPUs`). With replication the count covers the IPUs of
        all replicas.

        Args:
            count: The number of simulated IPUs.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``count`` is not a positive integer, or the options are frozen.
        """
        with self._setting():
            self.num_ipus = positive_int("Simulator.numIpus", count)
        return self

    def ipuVersion(self, version: str) -> "_SimulatorOptions":
        """Sets the IPU generation to simulate.

        Args:
            version: ``"Mk1"`` (also ``"GC2"``), ``"Mk2"`` (also ``"GC200"``, the default) or
                ``"Bow"``, in any letter case.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``version`` names none of these generations, or the options are frozen.
        """
        name = _C.parse_chip_version(version) if isinstance(version, str) else None
        if name is None:
            raise OptionError(
                f"Simulator.ipuVersion expects 'Mk1', 'Mk2' or 'Bow', got {version!r}.",
                option="Simulator.ipuVersion")
        with self._setting():
            self.ipu_version = name
        return self

    def memoryPerIpu(self, size: Union[int, str]) -> "_SimulatorOptions":
        """Sets the memory of each simulated IPU.

        Unset, each IPU has its chip's SRAM. Lower it to size a model for part of an IPU:
        compiling a model that needs more raises :class:`popsim.OutOfMemoryError` (unless
        ``allowOverCapacity`` is on).

        Args:
            size: Bytes, as a positive int, or a string such as ``"64MiB"``, ``"512 KB"`` or
                ``"1.5GiB"`` (units B, KB/MB/GB in powers of 1000, KiB/MiB/GiB in powers of 1024,
                in any letter case).

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``size`` is not a positive size in one of these forms, or the options
                are frozen.
        """
        with self._setting():
            self.memory_per_ipu = _parse_memory(size)
        return self

    def threadsPerIpu(self, threads: int) -> "_SimulatorOptions":
        """Sets how many host threads each simulated IPU computes with.

        Each IPU runs on its own host thread, so pipelined stages overlap. Results are identical
        for any value with one IPU, and across strategies for the same value (oneDNN splits some
        reductions by thread).

        Args:
            threads: Threads per IPU. Unset: for one IPU, PyTorch's thread count; for several, an
                equal share of the host's threads, at least one.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``threads`` is not a positive integer, or the options are frozen.
        """
        with self._setting():
            self.threads_per_ipu = positive_int("Simulator.threadsPerIpu", threads)
        return self

    def costOnly(self, enabled: bool = True) -> "_SimulatorOptions":
        """Sizes the job without computing it.

        Compiling, the memory plan, the simulated clock, ``memoryReport()``,
        ``executionTrace()``, ``sizingReport()`` and profiles are those of a run that computes,
        but no kernel runs and the device holds no values, so a call takes milliseconds whatever
        the job.

        A call returns tensors of the right shapes and dtypes on torch's meta device: they hold
        no values, and reading one (``.item()``, printing its values, copying it to the CPU)
        raises. The model's weights stay as they are on the host, inputs the model writes in
        place are left alone, and reading device state (anchored tensors, optimizer state) gives
        meta tensors too.

        Args:
            enabled: True (the default of this call) to size only; False to compute, as without
                this option.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.cost_only = _bool("Simulator.costOnly", enabled)
        return self

    def allowOverCapacity(self, enabled: bool = True) -> "_SimulatorOptions":
        """Lets a cost-only program that does not fit its IPUs' memory compile anyway.

        With ``costOnly``, such a program compiles instead of raising
        :class:`popsim.OutOfMemoryError`, so ``memoryReport()`` and ``sizingReport()`` can say
        by how much it is over and what to change (:func:`popsim.sizeJob` sets it). It applies to
        cost-only runs only: a run that computes must fit.

        Args:
            enabled: True (the default of this call) to allow it; False to raise as usual.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.allow_over_capacity = _bool("Simulator.allowOverCapacity", enabled)
        return self
