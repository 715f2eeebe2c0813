"""popsim.Options' setters of how a call runs: its micro-batches, replicas and
outputs, the strategy and memory proportions it compiles with, its random
seed, anchors and synthetic data, and when it attaches."""

import re
import warnings
from typing import TYPE_CHECKING, Any, Dict, List, Literal, Optional, Self, Tuple, Union

import torch

from popsim.api.enums import CommGroupType, ConnectionType, OutputMode, SyncPattern
from popsim.api.errors import OptionError
from popsim.api.log import LOGGER
from popsim.api.option_fields import _OptionGroup, _bool, _prefetch_depth, positive_int
from popsim.api.popart_options import PREFETCH_DEPTH_OPTION
from popsim.api.strategies import _ExecutionStrategy
from popsim.api.values import is_integer, is_real, is_string_list


class _CallSetters(_OptionGroup):
    """popsim.Options' setters of how a call runs (documented there)."""

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

    def deviceIterations(self, device_iterations: int) -> Self:
        """Sets how many iterations of the model run per call.

        Each call takes ``device_iterations`` micro-batches stacked along dimension 0 and runs
        them on the device without returning to Python.

        Args:
            device_iterations: Iterations per call (default 1).

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``device_iterations`` is not a positive integer, or the options are
                frozen.
        """
        with self._setting():
            self.device_iterations = positive_int("deviceIterations", device_iterations)
        return self

    def replicationFactor(self, replication_factor: int) -> Self:
        """Sets how many copies of the model run in data parallel.

        Each replica runs on IPUs of its own and takes a share of every call's batch; in
        training the replicas combine their gradients before each optimizer step (the mean or
        the sum, as ``Training.accumulationAndReplicationReductionType`` says). A call's combined
        batch holds micro-batch x ``deviceIterations`` x ``gradientAccumulation`` x replicas
        samples; ``Simulator.numIpus`` counts the IPUs of all replicas.

        Args:
            replication_factor: The number of replicas (default 1).

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``replication_factor`` is not a positive integer, or the options are
                frozen.
        """
        with self._setting():
            self.replication_factor = positive_int("replicationFactor", replication_factor)
        return self

    def inputReplicaGrouping(self, input_group_size: int,
                             input_group_type: CommGroupType) -> Self:
        """Sets which replicas take the same input data.

        Each group of replicas receives one micro-batch per step, so a call's combined batch
        holds ``replicationFactor / input_group_size`` micro-batches per step.

        Args:
            input_group_size: Replicas per group. It must divide ``replicationFactor`` when the
                model compiles.
            input_group_type: How replicas form the groups: ``CommGroupType.Consecutive``
                (neighbours) or ``Orthogonal`` (strided); ``All`` is one group of every replica,
                and ``Ungrouped`` (the default) gives each replica its own data.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``input_group_size`` is not a positive integer, ``input_group_type``
                is not a :class:`popsim.CommGroupType`, or the options are frozen.
        """
        size = positive_int("inputReplicaGrouping(input_group_size)", input_group_size)
        if not isinstance(input_group_type, CommGroupType):
            raise OptionError(f"inputReplicaGrouping expects a popsim.CommGroupType, got "
                              f"{input_group_type!r}.", option="inputReplicaGrouping")
        with self._setting():
            self.input_replica_grouping = (size, input_group_type)
        return self

    def prefetchDepth(self, depth: int) -> Self:
        """Sets the input streams' buffering depth, PopART's ``defaultPrefetchBufferingDepth``.

        The depth is the number of slots of the circular buffer each input streams through;
        one holds the transfer in flight, so the host's part of the transfers (their fixed
        latency) is prepared ``depth - 1`` micro-batches ahead of the tasks that read them. At
        the default depth 1 each task waits for its inputs' host part when it starts, as
        PopTorch's I/O guide shows (the StreamCopyBegin and End phases); a depth of 2 or
        more (multibuffering) prepares them while the IPUs work. The bytes still cross on
        the compute tiles when the task starts, unless they go through IO tiles
        (``TensorLocations.numIOTiles``). Each slot costs a buffer of the inputs in the IPU's
        memory ("prefetch buffers" in ``memoryReport()``). Results are the same for any
        depth; only the simulated time and memory change. ``opts._Popart.set`` sets it too;
        the ``prefetch_depth`` property reads it.

        Args:
            depth: The buffering depth (default 1). 0 is depth 1 without its buffer.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``depth`` is not a non-negative integer, or the options are frozen.
        """
        self._Popart.set(PREFETCH_DEPTH_OPTION, _prefetch_depth("prefetchDepth", depth))
        return self

    def setAvailableMemoryProportion(self, available_memory_proportion: Dict[str, float]) -> Self:
        """Sets the share of each IPU's memory a matmul or convolution may use for temporaries.

        An op that needs more runs in serial passes: less memory ("temporaries" in
        ``memoryReport()``), more cycles. Each call replaces the proportions of the previous one;
        IPUs it does not name keep the default, 0.6.

        Args:
            available_memory_proportion: Each IPU's proportion, in (0, 1], keyed by IPU as
                ``"IPU<n>"``: ``{"IPU0": 0.6, "IPU1": 0.3}``.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``available_memory_proportion`` is not a dict, a key does not name an
                IPU as ``"IPU<n>"``, a proportion is not a number in (0, 1], or the options are
                frozen.
        """
        if not isinstance(available_memory_proportion, dict):
            raise OptionError("setAvailableMemoryProportion expects a dict such as "
                              f"{{'IPU0': 0.6}}, got {available_memory_proportion!r}.",
                              option="setAvailableMemoryProportion")
        parsed: Dict[int, float] = {}
        for key, proportion in available_memory_proportion.items():
            match = re.fullmatch(r"IPU(\d+)", key) if isinstance(key, str) else None
            if match is None:
                raise OptionError(
                    f"setAvailableMemoryProportion: key {key!r} should name an IPU as 'IPU<n>', "
                    "such as 'IPU0'.", option="setAvailableMemoryProportion")
            if not is_real(proportion) or not 0.0 < proportion <= 1.0:
                raise OptionError(
                    f"setAvailableMemoryProportion: the proportion for {key} must be a number "
                    f"in (0, 1], got {proportion!r}.", option="setAvailableMemoryProportion")
            parsed[int(match.group(1))] = float(proportion)
        with self._setting():
            self.available_memory_proportion = parsed
        return self

    def outputMode(self, output_mode: OutputMode,
                   output_return_period: Optional[int] = None) -> Self:
        """Sets which iterations' outputs a call returns (see :class:`popsim.OutputMode`).

        Args:
            output_mode: A :class:`popsim.OutputMode`; ``OutputMode.Default`` (the default)
                returns every iteration's outputs for inference models and the last one's for
                training models.
            output_return_period: With ``OutputMode.EveryN``, N: every N-th device
                iteration's outputs are returned (in training, each with all of its
                ``gradientAccumulation`` micro-batches, as PopART returns every N-th global
                batch). Other modes ignore it, as in PopTorch (an INFO log message says so).

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``output_mode`` is not a :class:`popsim.OutputMode`, the period of
                ``OutputMode.EveryN`` is not a positive integer, or the options are frozen.
        """
        if not isinstance(output_mode, OutputMode):
            raise OptionError(f"outputMode expects a popsim.OutputMode, got {output_mode!r}.",
                              option="outputMode")
        period = 1
        if output_mode == OutputMode.EveryN:
            period = positive_int("outputMode(OutputMode.EveryN, output_return_period)",
                                   output_return_period)
        elif output_return_period is not None:  # as PopTorch: only EveryN has a period
            LOGGER.info("outputMode(%s, %r): output_return_period is ignored; only "
                         "OutputMode.EveryN uses it.", output_mode, output_return_period)
        with self._setting():
            self.output_mode = output_mode
        with self._setting():
            self.output_return_period = period
        return self

    def anchorMode(self, anchor_mode: OutputMode,
                   anchor_return_period: Optional[int] = None) -> Self:
        """PopTorch 2's name of :meth:`outputMode` (``popsim.AnchorMode`` is
        ``popsim.OutputMode``), kept so that code written for it runs; deprecated, as in
        PopTorch.

        Args:
            anchor_mode: A :class:`popsim.OutputMode`.
            anchor_return_period: With ``OutputMode.EveryN``, N.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: as :meth:`outputMode` raises it.
        """
        warnings.warn("Options.anchorMode is deprecated (as in PopTorch): use "
                      "Options.outputMode(mode, output_return_period).", DeprecationWarning,
                      stacklevel=2)
        return self.outputMode(anchor_mode, anchor_return_period)

    def defaultAnchorMode(self) -> bool:
        """PopTorch 2's name of :meth:`defaultOutputMode`; deprecated, as in PopTorch.

        Returns:
            What :meth:`defaultOutputMode` returns.
        """
        warnings.warn("Options.defaultAnchorMode is deprecated (as in PopTorch): use "
                      "Options.defaultOutputMode().", DeprecationWarning, stacklevel=2)
        return self.defaultOutputMode()

    def defaultOutputMode(self) -> bool:
        """Whether the output mode is still ``OutputMode.Default`` (as PopTorch's).

        Returns:
            True when :meth:`popsim.Options.outputMode` has not chosen another mode, so that
            inference models return every iteration's outputs and training models the last
            one's.
        """
        return self.output_mode == OutputMode.Default

    def randomSeed(self, random_seed: int) -> Self:
        """Seeds popsim's random numbers, and PyTorch's.

        The seed drives the model's random ops, stochastic rounding, synthetic data and the
        shuffling of :class:`popsim.DataLoader`; the call also runs ``torch.manual_seed``. Unset,
        a model's seed comes from torch's initial seed. A DataLoader that shuffles with
        ``auto_distributed_partitioning`` in a multi-process job needs it set, the same in every
        process.

        Args:
            random_seed: The seed.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``random_seed`` is not an integer in [0, 2**64) (an unsigned 64-bit
                seed, as ``torch.initial_seed()`` gives), or the options are frozen.
        """
        if not is_integer(random_seed) or not 0 <= random_seed < 2**64:
            raise OptionError(f"randomSeed expects an integer in [0, 2**64) (an unsigned 64-bit "
                              f"seed), got {random_seed!r}.", option="randomSeed")
        with self._setting():
            self.random_seed = int(random_seed)
        torch.manual_seed(int(random_seed))
        return self

    def setExecutionStrategy(self, strategy: _ExecutionStrategy) -> Self:
        """Sets how the model's blocks become pipeline stages on IPUs.

        A model with blocks and no strategy runs
        ``PipelinedExecution(AutoStage.SameAsIpu)``.

        Args:
            strategy: A :class:`popsim.PipelinedExecution`, :class:`popsim.ShardedExecution`,
                :class:`popsim.SerialPhasedExecution` or :class:`popsim.ParallelPhasedExecution`.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``strategy`` is not one of these execution strategies, or the options
                are frozen.
        """
        if not isinstance(strategy, _ExecutionStrategy):
            raise OptionError(
                "setExecutionStrategy expects popsim.PipelinedExecution(...), "
                "popsim.ShardedExecution(...) or a phased execution, got "
                f"{strategy!r}.", option="setExecutionStrategy")
        with self._setting():
            self.execution_strategy = strategy
        self._core.execution_strategy = strategy._spec()
        return self

    def autoRoundNumIPUs(self, auto_round_num_ipus: bool = True) -> Self:
        """Rounds the simulated system's IPU count up to a power of two.

        This is how IPUs are allocated on real hardware; the extra IPUs stay idle
        (``memoryReport()`` lists them). ``Simulator.numIpus``, when set, wins. Without it popsim
        simulates exactly the IPUs the model uses, as PopTorch's IPU Model does (on hardware
        PopTorch refuses a count that is not a power of two).

        Args:
            auto_round_num_ipus: True (the default of this call) to round up; False (the
                options' default) to use the model's count.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``auto_round_num_ipus`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.auto_round_num_ipus = _bool("autoRoundNumIPUs", auto_round_num_ipus)
        return self

    def anchorTensor(self, short_name: str, long_name: str,
                     output_mode: Optional[OutputMode] = None,
                     output_return_period: Optional[int] = 1) -> Self:
        """Anchors a tensor the model does not output, so that each call returns it too.

        This works as PopTorch's anchors: after each call, ``getAnchoredTensor(short_name)``
        gives the tensor. ``getTensorNames()`` lists the long names a compiled model can anchor:

        - ``"Gradient___<parameter>"`` (training models): a trained parameter's gradient of each
          micro-batch, returned as the model's outputs are (the last micro-batch's, or with
          ``OutputMode.All`` every micro-batch's, stacked along a new dimension 0);
        - ``"UpdatedVar___<name>"`` or ``"<name>"``: the value of a parameter or buffer after the
          call;
        - ``"finalLossScale"`` (training models): the loss scaling factor after the call.

        The names are checked when the model compiles, which raises :class:`popsim.OptionError`
        for a name the model does not have.

        Args:
            short_name: The name to read the tensor by, with ``getAnchoredTensor``.
            long_name: Which tensor, by one of the names above.
            output_mode: None (the default) for the model's output mode. popsim returns anchors
                in that mode only: a different mode (or period) is an error when the model
                compiles.
            output_return_period: With ``OutputMode.EveryN``, N; ignored otherwise.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``short_name`` or ``long_name`` is not a non-empty string,
                ``output_mode`` is neither None nor a :class:`popsim.OutputMode`, the period of
                ``OutputMode.EveryN`` is not a positive integer, or the options are frozen.
        """
        for name, value in (("short_name", short_name), ("long_name", long_name)):
            if not isinstance(value, str) or not value:
                raise OptionError(f"anchorTensor expects a non-empty string as {name}, got "
                                  f"{value!r}.", option="anchorTensor")
        if output_mode is not None and not isinstance(output_mode, OutputMode):
            raise OptionError(f"anchorTensor expects a popsim.OutputMode or None as output_mode, "
                              f"got {output_mode!r}.", option="anchorTensor")
        period = 1
        if output_mode == OutputMode.EveryN:
            period = positive_int("anchorTensor(..., OutputMode.EveryN, output_return_period)",
                                  output_return_period)
        anchors = dict(self.anchored_tensors)
        anchors[short_name] = (long_name, output_mode, period)
        with self._setting():
            self.anchored_tensors = anchors
        return self

    def enableSyntheticData(self, enabled: bool) -> Self:
        """Benchmarks without host I/O, as PopTorch's option of the same name.

        Each call's inputs are replaced on the device by data drawn there (random normal floats,
        zero integers and booleans; the same every call, from :meth:`popsim.Options.randomSeed`),
        nothing is copied back (the outputs return as zeros), and the simulated clock charges no
        host transfers. The call's inputs still give the shapes and dtypes. PopART's
        ``syntheticDataMode`` in ``opts._Popart`` records the setting too.

        Args:
            enabled: True to use synthetic data; False (the default) to transfer the inputs.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        enabled = _bool("enableSyntheticData", enabled)
        self._Popart.set("syntheticDataMode", 2 if enabled else 0)  # PopART's RandomNormal
        with self._setting():
            self.synthetic_data = enabled
        return self

    def connectionType(self, connection_type: ConnectionType) -> Self:
        """Sets when the model attaches to its IPUs.

        Args:
            connection_type: ``ConnectionType.Always`` (the default: when it compiles),
                ``OnDemand`` (when it first runs) or ``Never`` (it only compiles: running or
                attaching it raises :class:`popsim.OptionError`).

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``connection_type`` is not a :class:`popsim.ConnectionType`,
                or the options are frozen.
        """
        if not isinstance(connection_type, ConnectionType):
            raise OptionError(f"connectionType expects a popsim.ConnectionType, got "
                              f"{connection_type!r}.", option="connectionType")
        with self._setting():
            self.connection_type = connection_type
        return self

    def syncPattern(self, sync_pattern: SyncPattern) -> Self:
        """Sets how the IPUs synchronise with the host, which the simulated clock follows.

        With ``SyncPattern.Full`` (the default) every host exchange synchronises all the IPUs:
        while one IPU receives inputs or returns outputs through its compute tiles, the others
        wait, so a pipeline cycle lasts its longest host exchange plus the most any IPU does
        besides. With ``SinglePipeline`` each IPU syncs with the host on its own and the others
        go on computing. ``ReplicaAndLadder`` is simulated as ``Full`` (popsim simulates one
        replica's IPUs). Transfers through IO tiles overlap the compute under every pattern.

        Args:
            sync_pattern: A :class:`popsim.SyncPattern` (default ``SyncPattern.Full``).

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``sync_pattern`` is not a :class:`popsim.SyncPattern`, or the options
                are frozen.
        """
        if not isinstance(sync_pattern, SyncPattern):
            raise OptionError(f"syncPattern expects a popsim.SyncPattern, got {sync_pattern!r}.",
                              option="syncPattern")
        with self._setting():
            self.sync_pattern = sync_pattern
        return self

    def broadcastBuffers(self, broadcast_buffers: bool = True) -> Self:
        """Sets whether a replicated training model keeps its buffers the same on every replica.

        Buffers are such as batch norm's running statistics.

        Args:
            broadcast_buffers: True (the default): after each call, replica 0's buffers are
                copied to the others. False: each replica keeps its own, updated from its own
                data, and the host model gets replica 0's.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``broadcast_buffers`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.broadcast_buffers = _bool("broadcastBuffers", broadcast_buffers)
        return self

    def updatableNamedBuffers(self, buffers: List[str]) -> Self:
        """Names the buffers ``copyNamedBuffersToDevice()`` copies from the host to the device.

        That copy leaves out the weights ``copyWeightsToDevice()`` would copy too.

        Args:
            buffers: Buffer names, as in ``model.named_buffers()``.

        Returns:
            These options (``self``), so calls chain.

        Raises:
            OptionError: if ``buffers`` is not a list of strings, or the options are frozen.
        """
        if not is_string_list(buffers):
            raise OptionError(f"updatableNamedBuffers expects a list of buffer names, got "
                              f"{buffers!r}.", option="updatableNamedBuffers")
        with self._setting():
            self.updatable_named_buffers = list(buffers)
        return self
