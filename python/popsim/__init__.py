"""popsim: run PyTorch models on simulated Graphcore IPUs, with PopTorch's API.

    import popsim
    opts = popsim.Options().deviceIterations(4)
    model = popsim.inferenceModel(my_module, opts)
    out = model(batch)       # compiled on the first call, then run in C++

    trainer = popsim.trainingModel(module_with_loss, opts, popsim.optim.AdamW(params))
    output, loss = trainer(batch, labels)   # forward, backward and update on the device

PopTorch code runs with ``import popsim as poptorch`` for the parts popsim
implements (the documentation's "How popsim differs from PopTorch" lists the rest).
"""

try:
    from popsim import _C as _C  # noqa: F401  the C++ core
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError(
        "popsim's C++ extension (popsim._C) is not built or cannot be loaded: "
        f"{error}. Install popsim with `pip install --no-build-isolation .` in a venv created "
        "from /usr/bin/python3 with --system-site-packages (see README.md)."
    ) from error

# The PopTorch-shaped API (api/): options, their enums and groups, strategies, errors.
from popsim.api.device import ipuHardwareIsAvailable, ipuHardwareVersion, isRunningOnIpu
from popsim.api.enums import (
    AnchorMode,
    CommGroupType,
    ConnectionType,
    DataLoaderMode,
    HalfFloatCastingBehavior,
    MatMulSerializationMode,
    MeanReductionStrategy,
    MultiConvPartialsType,
    MultiConvPlanType,
    OutputMode,
    OverlapMode,
    ReductionType,
    SharingStrategy,
    SyncPattern,
    VariableRetrievalMode,
)
from popsim.api.errors import (
    ArgumentError,
    CompilationError,
    Error,
    ExecutionError,
    ExecutableFileError,
    InputError,
    InternalError,
    NotCallableError,
    NotCompiledError,
    OfflineTargetError,
    PlanTypeError,
    OptionError,
    OutOfMemoryError,
    RecoverableError,
    UnrecoverableError,
    UnsupportedOperationError,
)
from popsim.api.hooks import registerPostCompileHook, registerPreCompileHook
from popsim.api.log import LOGGER as logger
from popsim.api.log import setLogLevel
from popsim.api.options import Options
from popsim.api.strategies import (
    AutoStage,
    Liveness,
    ParallelPhasedExecution,
    Phase,
    PipelinedExecution,
    PipelineSchedule,
    SerialPhasedExecution,
    ShardedExecution,
    Stage,
)
from popsim.api.tensor_locations import TensorLocationSettings
from popsim.api.version import VERSION
# What models call inside forward() (frontend/).
from popsim.frontend.blocks import BeginBlock, Block, BlockFunction, module_repr, removeBlocks
from popsim.frontend.cpu_ops import CPU
from popsim.frontend.ctc_decoder import ctc_beam_search_decoder
from popsim.frontend.losses import identity_loss
from popsim.frontend.multi_conv import MultiConv
from popsim.frontend.name_scope import NameScope
from popsim.frontend.structure import ICustomArgParser, registerCustomArgParser
from popsim.frontend.tensor_ops import (
    cond,
    custom_op,
    dynamic_slice,
    dynamic_update,
    for_loop,
    ipu_print_tensor,
    nop,
    recomputationCheckpoint,
    serializedMatMul,
    set_available_memory,
    set_overlap_for_input,
    set_overlap_for_output,
)
# Training's optimizers, the wrapped models and programs on disk, data loading.
from popsim.training import optim
from popsim.executor import Executor, inferenceModel, trainingModel
from popsim.export import load
from popsim.data.async_data import AsynchronousDataAccessor
from popsim.data.dataloader import DataLoader
# Reports: sizing and planning (profiles are read back by popsim.profiling, reachable as an
# attribute, as popsim.optim is).
from popsim.reports.plan_report import PipelinePlan, Plan, PlannedIpu
from popsim.reports.planner import plan
from popsim.reports.job_plan import JobCandidate, JobPlan
from popsim.reports.job_planner import planJob
from popsim.reports.size_job import sizeJob
from popsim.reports.sizing import IpuSizing, SizingReport
from popsim import profiling  # noqa: F401
from popsim import testing  # noqa: F401  poptorch.testing.allclose for ports' tests
# PopTorch's module names as attributes (poptorch.enums.OverlapMode without importing it).
from popsim import enums, errors, options, strategies  # noqa: F401,E402

PoplarExecutor = Executor

__version__ = VERSION

__all__ = [
    "AnchorMode",
    "CommGroupType",
    "AsynchronousDataAccessor",
    "AutoStage",
    "BeginBlock",
    "Block",
    "BlockFunction",
    "CompilationError",
    "cond",
    "CPU",
    "ConnectionType",
    "custom_op",
    "DataLoader",
    "DataLoaderMode",
    "SharingStrategy",
    "ctc_beam_search_decoder",
    "dynamic_slice",
    "dynamic_update",
    "Error",
    "ExecutionError",
    "ExecutableFileError",
    "ArgumentError",
    "Executor",
    "for_loop",
    "ICustomArgParser",
    "HalfFloatCastingBehavior",
    "identity_loss",
    "inferenceModel",
    "ipuHardwareIsAvailable",
    "ipuHardwareVersion",
    "isRunningOnIpu",
    "InputError",
    "ipu_print_tensor",
    "load",
    "logger",
    "InternalError",
    "MatMulSerializationMode",
    "MeanReductionStrategy",
    "MultiConv",
    "MultiConvPartialsType",
    "MultiConvPlanType",
    "module_repr",
    "NameScope",
    "nop",
    "NotCallableError",
    "NotCompiledError",
    "OfflineTargetError",
    "PlanTypeError",
    "optim",
    "OptionError",
    "Options",
    "OutOfMemoryError",
    "OutputMode",
    "OverlapMode",
    "PipelinedExecution",
    "ParallelPhasedExecution",
    "Phase",
    "Liveness",
    "SerialPhasedExecution",
    "PipelineSchedule",
    "PoplarExecutor",
    "RecoverableError",
    "recomputationCheckpoint",
    "ReductionType",
    "registerCustomArgParser",
    "registerPostCompileHook",
    "registerPreCompileHook",
    "removeBlocks",
    "serializedMatMul",
    "set_available_memory",
    "set_overlap_for_input",
    "set_overlap_for_output",
    "setLogLevel",
    "ShardedExecution",
    "Stage",
    "SyncPattern",
    "TensorLocationSettings",
    "trainingModel",
    "sizeJob",
    "plan",
    "Plan",
    "planJob",
    "JobPlan",
    "JobCandidate",
    "PipelinePlan",
    "PlannedIpu",
    "SizingReport",
    "IpuSizing",
    "UnrecoverableError",
    "UnsupportedOperationError",
    "VariableRetrievalMode",
]
