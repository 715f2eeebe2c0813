"""Enumerations of the PopTorch-shaped API."""

import enum

__all__ = [
    "AnchorMode",
    "AutoStage",
    "CommGroupType",
    "ConnectionType",
    "DataLoaderMode",
    "HalfFloatCastingBehavior",
    "Liveness",
    "MatMulSerializationMode",
    "MeanReductionStrategy",
    "MultiConvPartialsType",
    "MultiConvPlanType",
    "OutputMode",
    "OverlapMode",
    "ReductionType",
    "SharingStrategy",
    "SyncPattern",
    "VariableRetrievalMode",
]


class OutputMode(enum.IntEnum):
    """Which device iterations' outputs a call returns to the host.

    - ``Final``: only the last iteration's outputs.
    - ``EveryN``: every N-th iteration (N is ``output_return_period``); in
      training, each with all of its gradient accumulation micro-batches.
    - ``All``: every iteration, concatenated along dimension 0 (scalars are
      stacked).
    - ``Sum``: the elementwise sum over all iterations.
    - ``Default``: ``All`` for inference models, ``Final`` for training models.
    """

    Final = 0
    EveryN = 1
    All = 2
    Sum = 3
    Default = 4


# PopTorch's earlier name for OutputMode, which PopTorch code still uses.
AnchorMode = OutputMode


class ReductionType(enum.IntEnum):
    """How the gradients of a step's micro-batches, and of the replicas, are combined
    (``Options.Training.accumulationAndReplicationReductionType``).

    - ``Sum``: they are added.
    - ``Mean`` (the default): they are averaged; ``MeanReductionStrategy`` says when the
      division happens.
    - ``NoReduction``: PopTorch's value for no reduction, which popsim refuses.
    """

    Sum = 0
    Mean = 1
    NoReduction = 2


class MeanReductionStrategy(enum.IntEnum):
    """When a mean over a step's micro-batch gradients divides
    (``Training.setMeanAccumulationAndReplicationReductionStrategy``).

    - ``Running``: the accumulator is the mean of the gradients so far; the
      f-th gradient of a step weighs 1 / (f + 1), so the accumulator never
      exceeds the largest gradient (it cannot overflow where the sum would).
    - ``Post`` (default): the accumulator is the sum, divided by the number
      of micro-batches when the step reads it.
    - ``PostAndLoss``: deprecated by PopTorch, which divides the loss by the
      replicas and the accumulated gradient by the micro-batches; popsim
      computes what ``Post`` computes (both divisions when the step reads the
      gradient), the same up to rounding.
    """

    Running = 0
    Post = 1
    PostAndLoss = 2


class DataLoaderMode(enum.IntEnum):
    """How ``popsim.DataLoader`` loads its batches.

    - ``Sync``: in the iterating process (through torch's DataLoader workers
      when ``num_workers`` > 0), while the model waits.
    - ``Async``: in a background process that keeps a ring of combined batches
      ready in shared memory, so loading overlaps the model's calls.
    - ``AsyncRebatched``: like ``Async``, but the loader's workers load smaller
      batches which the background process assembles into combined batches,
      so workers' leftovers add up instead of being dropped one by one.
    """

    Sync = 0
    Async = 1
    AsyncRebatched = 2


class SharingStrategy(enum.IntEnum):
    """How PopTorch's AsynchronousDataAccessor starts its loading process and passes
    objects to it (spawned with shared memory or the file system, forked, or through a
    fork server). popsim accepts each: its loading process is always forked and hands
    batches over in shared-memory slots of its own, so a dataset need not be picklable
    and batches cost no copy whichever is chosen.
    """

    SharedMemory = 0
    FileSystem = 1
    Fork = 2
    ForkServer = 3


class ConnectionType(enum.IntEnum):
    """When a model attaches to its (simulated) IPUs.

    - ``Always``: when it compiles (the default).
    - ``OnDemand``: when it first runs: ``compile()`` leaves it detached.
    - ``Never``: never; the model compiles (memory report, cycle estimates of
      the plan) but calling it raises an error. ``useOfflineIpuTarget``
      sets this.
    """

    Always = 0
    OnDemand = 1
    Never = 2


class SyncPattern(enum.IntEnum):
    """How IPUs synchronise with each other and the host (Options.syncPattern):
    under ``Full`` every IPU waits out any IPU's host exchange; under
    ``SinglePipeline`` each IPU exchanges with the host on its own;
    ``ReplicaAndLadder`` is simulated as ``Full``."""

    Full = 0
    SinglePipeline = 1
    ReplicaAndLadder = 2


class MatMulSerializationMode(enum.Enum):
    """Which dimension popsim.serializedMatMul splits ``lhs @ rhs`` along, for
    lhs [.., m, n] and rhs [.., n, p]: ``InputChannels`` (m),
    ``ReducingDim`` (n: the partial products are summed) or
    ``OutputChannels`` (p); ``Disabled`` multiplies in one go."""

    InputChannels = "input_channels"
    ReducingDim = "reducing_dim"
    OutputChannels = "output_channels"
    Disabled = "none"


class HalfFloatCastingBehavior(enum.IntEnum):
    """How ops that mix float16 and float32 operands compute (PopTorch's
    Precision.halfFloatCasting): ``FloatDowncastToHalf`` casts the float32
    ones to float16, ``HalfUpcastToFloat`` follows PyTorch's promotion
    (float32); ``Default`` (the default) is HalfUpcastToFloat, as with
    PopTorch 3's dispatcher frontend, and FloatDowncastToHalf under its legacy
    tracing frontend (Options.Jit.traceModel(True))."""

    FloatDowncastToHalf = 0
    HalfUpcastToFloat = 1
    Default = 2


class MultiConvPartialsType(enum.IntEnum):
    """The type a popsim.MultiConv sums a convolution's products in,
    PopTorch's older spelling of torch.float / torch.half (see
    MultiConv.partialsTypes)."""

    Half = 0
    Float = 1


class MultiConvPlanType(enum.IntEnum):
    """How a popsim.MultiConv plans its convolutions on an IPU: together
    (``Parallel``, the default) or one by one (``Serial``). popsim records
    it; the simulated IPU runs them one after another either way."""

    Parallel = 0
    Serial = 1


class CommGroupType(enum.IntEnum):
    """How replicas form groups (PopTorch's ``CommGroupType``), for
    ``Options.inputReplicaGrouping`` and replica-grouped parameters
    (``replicaGrouping``): ``All`` replicas in one group, ``Consecutive``
    groups of neighbouring replicas (0 1 | 2 3), ``Orthogonal`` groups that
    take one replica from each run of neighbours (0 2 | 1 3), or
    ``Ungrouped`` (PopTorch's ``NoGrouping``: each replica alone)."""

    All = 0
    Consecutive = 1
    Orthogonal = 2
    Ungrouped = 3
    NoGrouping = 3


class VariableRetrievalMode(enum.IntEnum):
    """Which values of a replica-grouped parameter the host reads back
    (PopTorch's ``VariableRetrievalMode``): ``OnePerGroup``, the first
    replica of each group's; ``AllReplicas``, each replica's, which popsim
    accepts for groups of one replica only (the host parameter holds a value
    per group, and the replicas of a larger group hold the same one)."""

    OnePerGroup = 0
    AllReplicas = 2


class OverlapMode(enum.Enum):
    """How a model input or output streams between the host and its IPU, set
    with popsim.set_overlap_for_input / set_overlap_for_output (PopTorch's
    ``OverlapMode``). ``NoOverlap``: through the IPU's compute tiles, which
    wait meanwhile. ``OverlapAccumulationLoop``: through the IO tiles
    (``Options.TensorLocations.numIOTiles``) while the compute tiles work on
    the micro-batch before, up to the edge of a training step's gradient
    accumulation (in inference, of the call). ``OverlapDeviceIterationLoop``:
    also across device iterations, so only a call's edges stop the overlap."""

    NoOverlap = "no_overlap"
    OverlapAccumulationLoop = "overlap_accumulation_loop"
    OverlapDeviceIterationLoop = "overlap_device_iteration_loop"


# The strategies' enums, which PopTorch's enums module holds too (poptorch.enums.AutoStage);
# imported last, as strategies.py needs nothing from here.
from popsim.api.strategies import AutoStage, Liveness  # noqa: E402
