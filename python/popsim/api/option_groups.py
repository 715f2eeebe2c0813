"""The groups of popsim.Options (opts.Training, opts.Precision, opts.Jit,
opts.TensorLocations, opts.Distributed; opts.Simulator is in simulator_options.py),
each over its part of the session's options in the core."""

import copy
import os
from typing import Dict

import torch

from popsim import _C
from popsim.api.enums import HalfFloatCastingBehavior, MeanReductionStrategy, ReductionType
from popsim.api.errors import OptionError
from popsim.api.log import LOGGER
from popsim.api.option_fields import (_CoreField, _LOCATION_CODEC, _OptionGroup, _bool,
                                      _enum_codec, positive_int)
from popsim.api.tensor_locations import TensorLocationSettings
from popsim.api.values import is_integer


class _TrainingOptions(_OptionGroup):
    """Options of training models (``opts.Training``)."""

    gradient_accumulation: int
    accumulation_and_replication_reduction_type: ReductionType
    mean_reduction_strategy: MeanReductionStrategy
    recomputation_enabled: bool
    automatic_loss_scaling: bool
    convolution_dithering: bool = False
    _group_name = "Options.Training"
    _core_fields = {
        "gradient_accumulation": _CoreField("training.gradient_accumulation"),
        "accumulation_and_replication_reduction_type": _CoreField(
            "training.reduction", *_enum_codec(ReductionType, _C.ReductionType)),
        "mean_reduction_strategy": _CoreField(
            "training.mean_strategy",
            *_enum_codec(MeanReductionStrategy, _C.MeanReductionStrategy)),
        "recomputation_enabled": _CoreField("training.recomputation"),
        "automatic_loss_scaling": _CoreField("training.automatic_loss_scaling"),
    }

    def gradientAccumulation(self, gradient_accumulation: int) -> "_TrainingOptions":
        """Sets how many micro-batches' gradients are accumulated before each weight update.

        Args:
            gradient_accumulation: The number of micro-batches per optimizer step (default 1:
                an update after every micro-batch).

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``gradient_accumulation`` is not a positive integer, or the options are
                frozen.
        """
        with self._setting():
            self.gradient_accumulation = positive_int("Training.gradientAccumulation", gradient_accumulation)
        return self

    def accumulationAndReplicationReductionType(self, reduction_type: ReductionType
                                                ) -> "_TrainingOptions":
        """Sets whether a step uses the mean or the sum of its micro-batches' gradients.

        The same reduction combines the gradients of the replicas
        (:meth:`popsim.Options.replicationFactor`).

        Args:
            reduction_type: ``ReductionType.Mean`` (the default) or ``ReductionType.Sum``.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``reduction_type`` is neither ``ReductionType.Mean`` nor
                ``ReductionType.Sum`` (``NoReduction`` is refused), or the options are frozen.
        """
        if reduction_type not in (ReductionType.Mean, ReductionType.Sum):
            raise OptionError(
                "Training.accumulationAndReplicationReductionType expects "
                f"popsim.ReductionType.Mean or popsim.ReductionType.Sum, got {reduction_type!r}.",
                option="Training.accumulationAndReplicationReductionType")
        with self._setting():
            self.accumulation_and_replication_reduction_type = reduction_type
        return self

    def setMeanAccumulationAndReplicationReductionStrategy(
            self, mean_reduction_strategy: MeanReductionStrategy) -> "_TrainingOptions":
        """Sets when a mean reduction divides the gradients.

        With the ``Mean`` reduction type, the accumulators hold either the running mean of a
        step's gradients (``MeanReductionStrategy.Running``) or their sum, divided when the step
        reads it (``MeanReductionStrategy.Post``, the default, as PopTorch's for float32
        accumulators). ``PostAndLoss`` is deprecated, as in PopTorch: it logs a warning and
        computes what ``Post`` computes, the same up to rounding.

        Args:
            mean_reduction_strategy: A :class:`popsim.MeanReductionStrategy`.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``mean_reduction_strategy`` is not a
                :class:`popsim.MeanReductionStrategy`, or the options are frozen.
        """
        if not isinstance(mean_reduction_strategy, MeanReductionStrategy):
            raise OptionError(
                "Training.setMeanAccumulationAndReplicationReductionStrategy expects a "
                f"popsim.MeanReductionStrategy (Running, Post), got {mean_reduction_strategy!r}.",
                option="Training.setMeanAccumulationAndReplicationReductionStrategy")
        if mean_reduction_strategy == MeanReductionStrategy.PostAndLoss:
            LOGGER.warning("MeanReductionStrategy.PostAndLoss is deprecated (as in PopTorch); "
                           "popsim computes what Post computes, the same up to rounding.")
        with self._setting():
            self.mean_reduction_strategy = mean_reduction_strategy
        return self

    def recomputation(self, enabled: bool) -> "_TrainingOptions":
        """Turns recomputation of forward activations in pipelined training on or off.

        With recomputation, each stage's backward pass recomputes the forward activations it
        needs from the stage's inputs, so only the inputs are stashed between a micro-batch's
        forward and backward passes: less memory (the stash shrinks to the stage inputs), more
        compute (each stage's forward ops run twice), identical results. Values marked with
        :func:`popsim.recomputationCheckpoint` are kept rather than recomputed, and a stage whose
        forward and backward passes are one task (the last stage, or a model on one IPU)
        recomputes between its checkpoints if it has any.

        Args:
            enabled: True to recompute; False (the default) to stash every activation the
                backward pass needs.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        if not isinstance(enabled, bool):
            raise OptionError(f"Training.recomputation expects a bool, got {enabled!r}.",
                              option="Training.recomputation")
        with self._setting():
            self.recomputation_enabled = enabled
        return self

    def setAutomaticLossScaling(self, enabled: bool) -> "_TrainingOptions":
        """Turns automatic loss scaling on or off, as PopART does it.

        The optimizer's ``loss_scaling`` is where the factor starts. After every optimizer step,
        if more than a proportion of the step's float16 gradients (default 1e-7) lies above a bin
        edge (default 1/8 of float16's largest value, 8188), the factor halves; otherwise it
        doubles (never above 2^15 for a float16 loss). The gradients are divided by the factor in
        float32 before the update. The factor is device state, so the ``loss_scaling`` attribute
        on the host does not change (anchor ``"finalLossScale"`` to read it, see
        :meth:`popsim.Options.anchorTensor`).
        ``_Popart.set("automaticLossScalingSettings.binEdgeLocation", x)`` and
        ``("...thresholdUpperCountProportion", p)`` change the edge and the proportion. The model
        needs float16 gradients to count.

        Args:
            enabled: True to scale automatically; False (the default) to keep the optimizer's
                factor.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.automatic_loss_scaling = _bool("Training.setAutomaticLossScaling", enabled)
        return self

    def setConvolutionDithering(self, enabled: bool) -> "_TrainingOptions":
        """Records whether every convolution is dithered, as PopTorch's option of this name
        sets it (:meth:`popsim.MultiConv.enableConvDithering` sets it per convolution).

        On an IPU, dithering starts the tile layouts of differently shaped convolutions on
        different tiles, so that their memory spreads more evenly over the tiles. Values do
        not change, and popsim's memory plan counts each IPU's total, not the balance of its
        tiles, so the simulated figures do not change either.

        Args:
            enabled: True to dither every convolution; False (the default) not to.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.convolution_dithering = _bool("Training.setConvolutionDithering", enabled)
        return self


class _PrecisionOptions(_OptionGroup):
    """Numerical precision (``opts.Precision``). float16 values are stored as
    float16 and every float16 op's result is rounded to float16, as on an IPU;
    these options decide how float16 and float32 operands mix, how results
    round, and whether overflow is an error."""

    partials_type: torch.dtype
    running_statistics_always_float: bool
    half_float_casting: HalfFloatCastingBehavior
    floating_point_exceptions: bool
    stochastic_rounding: bool
    _group_name = "Options.Precision"
    _core_fields = {
        "partials_type": _CoreField("precision.half_partials",
                                    lambda dtype: dtype == torch.float16,
                                    lambda half: torch.float16 if half else torch.float32),
        "running_statistics_always_float": _CoreField(
            "precision.running_statistics_always_float"),
        "half_float_casting": _CoreField(
            "precision.half_float_casting",
            *_enum_codec(HalfFloatCastingBehavior, _C.HalfFloatCasting)),
        "floating_point_exceptions": _CoreField("precision.floating_point_exceptions"),
        "stochastic_rounding": _CoreField("precision.stochastic_rounding"),
    }

    def setPartialsType(self, dtype: torch.dtype) -> "_PrecisionOptions":
        """Sets the type float16 matmuls and convolutions sum their products in.

        This applies to the forward and backward passes. ``torch.float`` (the default) sums in
        float32 and rounds the result once. ``torch.half`` sums in float16 partials, as an IPU
        does, which halves the partials in their temporary memory: each run of 16 consecutive
        products (in the reduction's order; a convolution's window includes the padding) is
        summed, rounded to float16 and added to a float16 total, rounded again; a bias is added
        after. These ops then run popsim's own vectorised loops, slower than oneDNN's. float32
        ops always accumulate in float32.

        Args:
            dtype: ``torch.float`` (``torch.float32``) or ``torch.half`` (``torch.float16``).

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``dtype`` is neither ``torch.float`` nor ``torch.half``, or the options
                are frozen.
        """
        if dtype not in (torch.float32, torch.float16):
            raise OptionError(f"Precision.setPartialsType expects torch.float or torch.half, "
                              f"got {dtype!r}.", option="Precision.setPartialsType")
        with self._setting():
            self.partials_type = dtype
        return self

    def runningStatisticsAlwaysFloat(self, value: bool) -> "_PrecisionOptions":
        """Sets whether float16 batch norms keep their running statistics in float32.

        Args:
            value: True (the default): the running mean and variance of float16 batch norms are
                held and updated in float32 on the device, as PopTorch keeps them (the host's
                buffers keep their dtype). False: in the layer's dtype.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``value`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.running_statistics_always_float = _bool("Precision.runningStatisticsAlwaysFloat", value)
        return self

    def halfFloatCasting(self, half_float_casting: HalfFloatCastingBehavior) -> "_PrecisionOptions":
        """Sets how an op mixing float16 and float32 operands computes.

        ``HalfUpcastToFloat`` follows PyTorch's promotion: a float32 operand with dimensions makes
        the op compute in float32, matrix products and convolutions included (where eager
        PyTorch refuses mixed operands), so a float16 model needs float16 inputs to compute in
        float16. ``FloatDowncastToHalf`` casts the float32 operands to float16, so a float16
        model takes float32 inputs. ``Default`` (the default) is ``HalfUpcastToFloat``, as
        PopTorch 3's default (dispatcher) frontend, or ``FloatDowncastToHalf`` after
        ``Jit.traceModel(True)``, as PopTorch's legacy tracing frontend. In-place ops keep their
        target's dtype either way.

        Args:
            half_float_casting: A :class:`popsim.HalfFloatCastingBehavior`.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``half_float_casting`` is not a
                :class:`popsim.HalfFloatCastingBehavior`, or the options are frozen.
        """
        if not isinstance(half_float_casting, HalfFloatCastingBehavior):
            raise OptionError(f"Precision.halfFloatCasting expects a "
                              f"popsim.HalfFloatCastingBehavior, got {half_float_casting!r}.",
                              option="Precision.halfFloatCasting")
        with self._setting():
            self.half_float_casting = half_float_casting
        return self

    def enableFloatingPointExceptions(self, enabled: bool) -> "_PrecisionOptions":
        """Sets whether overflow and invalid operations stop the run, as an IPU traps them.

        When on, an op whose result overflows to an infinity (or divides by zero) from finite
        operands, or computes NaN from operands without NaN (inf - inf, 0 x inf, the root of a
        negative number), stops the run with a :class:`popsim.ExecutionError` naming the op and
        its source line.

        Args:
            enabled: True to trap; False (the default) to let infinities and NaN propagate, as
                in PyTorch.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.floating_point_exceptions = _bool("Precision.enableFloatingPointExceptions", enabled)
        return self

    def enableStochasticRounding(self, enabled: bool) -> "_PrecisionOptions":
        """Sets whether float16 results round stochastically.

        When on, float16 results (of every op, and of weight updates) round to one of the two
        nearest float16 values at random, the farther one with the probability of its nearness,
        so that rounding is unbiased on average. The random numbers come from the model's seed
        (:meth:`popsim.Options.randomSeed`), so a run is reproducible. float32 results always
        round to nearest.

        Args:
            enabled: True to round stochastically; False (the default) to round to nearest,
                ties to even.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``enabled`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.stochastic_rounding = _bool("Precision.enableStochasticRounding", enabled)
        return self


class _JitOptions(_OptionGroup):
    """PopTorch's JIT options (``opts.Jit``)."""

    trace_model: bool
    _group_name = "Options.Jit"
    _core_fields = {"trace_model": _CoreField("trace_model")}

    def traceModel(self, trace_model: bool) -> "_JitOptions":
        """Sets which of PopTorch's frontends a model is compiled as.

        popsim builds its graph the same way under both; the one difference it models is
        ``Precision.halfFloatCasting``'s ``Default``, under which ops mixing float16 and float32
        operands compute in float16 with the tracing frontend.

        Args:
            trace_model: False (the default, as in PopTorch 3): the dispatcher frontend. True:
                the legacy tracing frontend, deprecated since PopTorch 3.0.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``trace_model`` is not a bool, or the options are frozen.
        """
        with self._setting():
            self.trace_model = _bool("Jit.traceModel", trace_model)
        return self


class _TensorLocationOptions(_OptionGroup):
    """Where kinds of tensors live (``opts.TensorLocations``), each set with a
    popsim.TensorLocationSettings. Off chip (``useOnChipStorage(False)``), tensors
    live in Streaming Memory: each op streams in the off-chip tensors it reads just
    before it runs and streams out those it writes just after. Results are the same;
    memoryReport() moves the tensors off chip (what an op holds on chip while it works
    counts as "streamed in") and the simulated clock charges the transfers
    ("streaming" events)."""

    optimizer_location: TensorLocationSettings
    weight_location: TensorLocationSettings
    accumulator_location: TensorLocationSettings
    activation_location: TensorLocationSettings
    num_io_tiles: int
    _group_name = "Options.TensorLocations"
    _core_fields = {
        "optimizer_location": _CoreField("tensor_locations.optimizer", *_LOCATION_CODEC),
        "weight_location": _CoreField("tensor_locations.weights", *_LOCATION_CODEC),
        "accumulator_location": _CoreField("tensor_locations.accumulators", *_LOCATION_CODEC),
        "activation_location": _CoreField("tensor_locations.activations", *_LOCATION_CODEC),
        "num_io_tiles": _CoreField("tensor_locations.num_io_tiles"),
    }

    @property
    def location_weight(self) -> Dict[str, int]:
        """Where weights live, as PopTorch's dictionary (see
        :meth:`popsim.TensorLocationSettings.toDict`); a new copy on every read."""
        return self.weight_location.toDict()

    @property
    def location_optimizer(self) -> Dict[str, int]:
        """Where the optimizer state lives, as PopTorch's dictionary (a new copy)."""
        return self.optimizer_location.toDict()

    @property
    def location_accumulator(self) -> Dict[str, int]:
        """Where gradient accumulators live, as PopTorch's dictionary (a new copy)."""
        return self.accumulator_location.toDict()

    @property
    def location_activation(self) -> Dict[str, int]:
        """Where stashed activations live, as PopTorch's dictionary (a new copy)."""
        return self.activation_location.toDict()

    def numIOTiles(self, num_tiles: int) -> "_TensorLocationOptions":
        """Sets aside tiles of every IPU for host I/O.

        Inputs and outputs marked with :func:`popsim.set_overlap_for_input` /
        :func:`popsim.set_overlap_for_output` stream through these IO tiles beside the compute,
        which runs on the remaining tiles (fewer tiles: more cycles per op, less memory). Their
        buffers must fit in the IO tiles' memory ("IO tiles" in ``memoryReport()``). Off-chip
        tensors whose :class:`popsim.TensorLocationSettings` use IO tiles need them too.
        Unset, no tiles are set aside.

        Args:
            num_tiles: The IO tiles per IPU: an even number from 32 to 192.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``num_tiles`` is not an even integer from 32 to 192, or the options are
                frozen.
        """
        if not is_integer(num_tiles) or not 32 <= num_tiles <= 192 or num_tiles % 2 != 0:
            raise OptionError(f"numIOTiles must be an even number between 32 and 192. "
                              f"TensorLocations.numIOTiles got {num_tiles!r}.",
                              option="TensorLocations.numIOTiles")
        with self._setting():
            self.num_io_tiles = num_tiles
        return self

    def setOptimizerLocation(self, location: TensorLocationSettings
                             ) -> "_TensorLocationOptions":
        """Sets where the optimizer state lives.

        Off chip, each op of the weight update streams its parameter's state in and back out.
        With replicated tensor sharding (and replicas), each replica stores a shard of the state.

        Args:
            location: Where these tensors live. The group keeps a copy, so later changes to
                ``location`` do not apply.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``location`` is not a :class:`popsim.TensorLocationSettings`, or the
                options are frozen.
        """
        with self._setting():
            self.optimizer_location = self._checked("setOptimizerLocation", location)
        return self

    def setWeightLocation(self, location: TensorLocationSettings
                          ) -> "_TensorLocationOptions":
        """Sets where weights and buffers live.

        Off chip, every op that uses them streams them in, and the weight update's ops stream
        them back out. With replicated tensor sharding (and replicas), each replica stores
        1/replicas of every weight of at least ``minElementsForReplicatedTensorSharding``
        elements (in training, of every trained weight, with its optimizer state); each task
        that reads such a weight first gathers it from every replica's shard (a
        "replica_all_gather" in the trace), and the update runs on the shard.

        Args:
            location: Where these tensors live. The group keeps a copy, so later changes to
                ``location`` do not apply.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``location`` is not a :class:`popsim.TensorLocationSettings`, or the
                options are frozen.
        """
        with self._setting():
            self.weight_location = self._checked("setWeightLocation", location)
        return self

    def setAccumulatorLocation(self, location: TensorLocationSettings
                               ) -> "_TensorLocationOptions":
        """Sets where gradient accumulators live (training with ``gradientAccumulation`` > 1).

        Off chip, each micro-batch's accumulation streams them in and out to add its gradients,
        and the update reads and clears them. popsim does not shard accumulators: compiling with
        ``useReplicatedTensorSharding(True)`` here raises :class:`popsim.OptionError`.

        Args:
            location: Where these tensors live. The group keeps a copy, so later changes to
                ``location`` do not apply.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``location`` is not a :class:`popsim.TensorLocationSettings`, or the
                options are frozen.
        """
        with self._setting():
            self.accumulator_location = self._checked("setAccumulatorLocation", location)
        return self

    def setActivationLocation(self, location: TensorLocationSettings
                              ) -> "_TensorLocationOptions":
        """Sets where the activations a pipeline stashes live.

        These are the activations kept between a micro-batch's forward and backward passes. Off
        chip, the forward task streams them out and the backward task streams them back in
        ("stash" moves to Streaming Memory). popsim does not shard activations: compiling with
        ``useReplicatedTensorSharding(True)`` here raises :class:`popsim.OptionError`.

        Args:
            location: Where these tensors live. The group keeps a copy, so later changes to
                ``location`` do not apply.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``location`` is not a :class:`popsim.TensorLocationSettings`, or the
                options are frozen.
        """
        with self._setting():
            self.activation_location = self._checked("setActivationLocation", location)
        return self

    @staticmethod
    def _checked(setter: str, settings: TensorLocationSettings) -> TensorLocationSettings:
        if not isinstance(settings, TensorLocationSettings):
            raise OptionError(f"TensorLocations.{setter} expects a "
                              f"popsim.TensorLocationSettings, got {settings!r}.",
                              option=f"TensorLocations.{setter}")
        return copy.copy(settings)  # later changes to the caller's settings do not leak in


class _DistributedOptions(_OptionGroup):
    """Which process of a multi-process job this is (``opts.Distributed``),
    as PopTorch's: ``processId`` and ``numProcesses``. They are read from the
    launcher's environment when the options are created: torchrun's ``RANK``
    and ``WORLD_SIZE``, else OpenMPI's ``OMPI_COMM_WORLD_RANK`` and
    ``OMPI_COMM_WORLD_SIZE`` (PopTorch's default, for mpirun and PopRun), else
    process 0 of 1. popsim.DataLoader gives each process its own part of
    every epoch (``auto_distributed_partitioning``), inference models run in
    every process on their own data, and training models sum their
    gradients across the processes with torch.distributed (Gloo)."""

    num_distributed_processes: int
    distributed_process_id: int
    _group_name = "Options.Distributed"
    _core_fields = {
        "num_distributed_processes": _CoreField("distributed.num_processes"),
        "distributed_process_id": _CoreField("distributed.process_id"),
    }
    _ENVIRONMENTS = (("WORLD_SIZE", "RANK"), ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"))

    def __init__(self, core: _C.SessionOptions) -> None:
        """Reads the process ID and count from the launcher's environment, if it set them.

        ``popsim.Options`` creates the group.

        Args:
            core: The session's options in the core, which the group's setters write.
        """
        super().__init__(core)
        for size, rank in self._ENVIRONMENTS:
            if size in os.environ:
                self.setEnvVarNames(size, rank)
                break

    def disable(self) -> "_DistributedOptions":
        """Ignores the launcher's environment: this is process 0 of 1.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if the options are frozen (they were passed to a model).
        """
        return self.configureProcessId(0, 1)

    def setEnvVarNames(self, var_num_processes: str, var_process_id: str
                       ) -> "_DistributedOptions":
        """Reads the process count and this process's ID from the named environment variables.

        A variable that is not set reads as 1 process or ID 0.

        Args:
            var_num_processes: The variable holding the number of processes (torchrun's
                ``WORLD_SIZE``, for example).
            var_process_id: The variable holding this process's ID, from 0 (torchrun's ``RANK``,
                for example).

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if a variable's value is not an integer, the values are not a valid
                process ID and count, or the options are frozen.
        """
        values = []
        for variable, default in ((var_process_id, "0"), (var_num_processes, "1")):
            text = os.environ.get(variable, default)
            try:
                values.append(int(text))
            except ValueError:
                raise OptionError(f"Distributed.setEnvVarNames: the environment variable "
                                  f"{variable} is {text!r}, not an integer.",
                                  option="Distributed.setEnvVarNames") from None
        return self.configureProcessId(*values)

    def configureProcessId(self, process_id: int, num_processes: int) -> "_DistributedOptions":
        """Sets this process's ID and the number of processes.

        Args:
            process_id: This process's ID, from 0 to ``num_processes - 1``.
            num_processes: The number of processes the job runs in.

        Returns:
            This group (``self``), so calls chain.

        Raises:
            OptionError: if ``num_processes`` is not a positive integer, ``process_id`` is not an
                integer from 0 to ``num_processes - 1``, or the options are frozen.
        """
        num_processes = positive_int("Distributed.configureProcessId(num_processes)",
                                     num_processes)
        if not is_integer(process_id) or not 0 <= process_id < num_processes:
            raise OptionError(f"Distributed.configureProcessId expects a process ID from 0 to "
                              f"{num_processes - 1} for {num_processes} process(es), got "
                              f"{process_id!r}.", option="Distributed.configureProcessId")
        with self._setting():
            self.distributed_process_id = int(process_id)
        with self._setting():
            self.num_distributed_processes = num_processes
        return self

    @property
    def processId(self) -> int:
        """The ID of this process, from 0."""
        return self.distributed_process_id

    @property
    def numProcesses(self) -> int:
        """The number of processes the job runs in."""
        return self.num_distributed_processes
