# popsim._C, the C++ core's bindings (csrc/python), typed: every name the
# module has is declared here and nothing else (tests/python/test_typing.py
# compares this file with the module), so mypy checks the Python side
# against the C++ contract.
import enum
from typing import Any, Callable, Dict, List, Optional, Tuple, TypedDict

import torch

# --- Compile options (bind_options.cpp) ---

class ProgramKind(enum.Enum):
    Inference: int
    Training: int
    Gradients: int

class ScheduleKind(enum.Enum):
    Interleaved: int
    Grouped: int
    Sequential: int

class OutputMode(enum.Enum):
    All: int
    Final: int
    EveryN: int
    Sum: int

class OptimizerKind(enum.Enum):
    Sgd: int
    Adam: int
    AdamW: int
    Rmsprop: int
    Lamb: int

class ChipVersion(enum.Enum):
    Mk1: int
    Mk2: int
    Bow: int

class TensorLocation:
    on_chip: bool
    min_elements_for_off_chip: int
    io_tiles_to_load: bool
    io_tiles_to_store: bool
    def __init__(self, on_chip: bool = ..., min_elements_for_off_chip: int = ...,
                 io_tiles_to_load: bool = ..., io_tiles_to_store: bool = ...) -> None: ...

class StageAssignment:
    @property
    def block(self) -> str: ...
    @property
    def stage(self) -> int: ...
    @property
    def ipu(self) -> int: ...
    def __init__(self, block: str, stage: int, ipu: int) -> None: ...

class ParameterGroup:
    parameters: List[str]
    has_momentum: bool
    nesterov: bool
    amsgrad: bool
    centered: bool
    maximize: bool
    bias_correction: bool
    use_tf_variant: bool
    def __init__(self) -> None: ...

class TrainingConfig:
    optimizer: OptimizerKind
    groups: List[ParameterGroup]
    max_grad_norm: float
    gradient_scale: float
    running_mean: bool
    half_accumulators: bool
    half_states: List[str]
    anchored_gradients: List[str]
    replicas: int
    system_ipus: int
    sharded_parameters: List[str]
    sharded_weights: List[str]
    grouped_parameters: Dict[str, Tuple[int, int]]
    loss_scaling: float
    loss_scaling_state: bool
    automatic_loss_scaling: bool
    loss_scaling_bin_edge: float
    loss_scaling_threshold: float
    def __init__(self) -> None: ...

class IpuSystemConfig:
    chip: ChipVersion
    num_ipus: int
    memory_per_ipu: int
    io_tiles: int
    replicas_per_host_thread: int
    @property
    def clock_hz(self) -> float: ...
    def __init__(self) -> None: ...

class CompilerOptions:
    program: ProgramKind
    training: TrainingConfig
    stages: List[StageAssignment]
    schedule: ScheduleKind
    recomputation: bool
    device_iterations: int
    gradient_accumulation: int
    output_mode: OutputMode
    output_return_period: int
    def __init__(self) -> None: ...

class MemoryOptions:
    weight_location: TensorLocation
    optimizer_location: TensorLocation
    accumulator_location: TensorLocation
    activation_location: TensorLocation
    available_memory_proportion: Dict[int, float]
    prefetch_depth: int
    half_partials: bool
    def __init__(self) -> None: ...

class ClockOptions:
    synthetic_data: bool
    def __init__(self) -> None: ...

class KernelOptions:
    threads_per_ipu: int
    stochastic_rounding: bool
    stochastic_rounding_seed: int
    floating_point_exceptions: bool
    cost_only: bool
    def __init__(self) -> None: ...

class CompileOptions:
    system: IpuSystemConfig
    compiler: CompilerOptions
    memory: MemoryOptions
    clock: ClockOptions
    kernels: KernelOptions
    allow_over_capacity: bool
    def __init__(self) -> None: ...

RANDOM_COUNTER_NAME: str
LOSS_SCALING_NAME: str

# --- Session options and host steps (bind_session.cpp) ---

class SessionOutputMode(enum.Enum):
    Final: int
    EveryN: int
    All: int
    Sum: int
    Default: int
    def __init__(self, value: int) -> None: ...
    def __int__(self) -> int: ...

class ReductionType(enum.Enum):
    Sum: int
    Mean: int
    NoReduction: int
    def __init__(self, value: int) -> None: ...
    def __int__(self) -> int: ...

class MeanReductionStrategy(enum.Enum):
    Running: int
    Post: int
    PostAndLoss: int
    def __init__(self, value: int) -> None: ...
    def __int__(self) -> int: ...

class HalfFloatCasting(enum.Enum):
    FloatDowncastToHalf: int
    HalfUpcastToFloat: int
    Default: int
    def __init__(self, value: int) -> None: ...
    def __int__(self) -> int: ...

class ConnectionType(enum.Enum):
    Always: int
    OnDemand: int
    Never: int
    def __init__(self, value: int) -> None: ...
    def __int__(self) -> int: ...

class SyncPattern(enum.Enum):
    Full: int
    SinglePipeline: int
    ReplicaAndLadder: int
    def __init__(self, value: int) -> None: ...
    def __int__(self) -> int: ...

class CommGroupType(enum.Enum):
    All: int
    Consecutive: int
    Orthogonal: int
    Ungrouped: int
    def __init__(self, value: int) -> None: ...
    def __int__(self) -> int: ...

class StreamCallbackMode(enum.Enum):
    SingleThread: int
    Collaborative: int
    Dedicated: int

class StrategyKind(enum.Enum):
    Pipelined: int
    Sharded: int
    SerialPhased: int
    ParallelPhased: int

class AutoStage(enum.Enum):
    SameAsIpu: int
    AutoIncrement: int

class Liveness(enum.Enum):
    AlwaysLive: int
    OffChipAfterFwd: int
    OffChipAfterEachPhase: int

class ExecutableCacheSource(enum.Enum):
    Environment: int
    Off: int
    Directory: int

class StrategyStage:
    blocks: List[str]
    ipu: Optional[int]
    def __init__(self, blocks: List[str], ipu: Optional[int] = ...) -> None: ...

class ExecutionStrategy:
    kind: StrategyKind
    schedule: ScheduleKind
    auto_stage: Optional[AutoStage]
    stages: List[StrategyStage]
    phase_sizes: List[int]
    liveness: Liveness
    separate_backward_phase: bool
    def __init__(self) -> None: ...

class TensorLocationSettings:
    on_chip: bool
    min_elements_for_off_chip: int
    replicated_tensor_sharding: bool
    min_elements_for_sharding: int
    io_tiles_to_load: bool
    io_tiles_to_store: bool
    def __init__(self) -> None: ...

class InputReplicaGrouping:
    size: int
    type: CommGroupType
    def __init__(self) -> None: ...

class Anchor:
    short_name: str
    long_name: str
    mode: Optional[SessionOutputMode]
    period: int
    def __init__(self, short_name: str, long_name: str, mode: Optional[SessionOutputMode] = ...,
                 period: int = ...) -> None: ...

class ExecutableCache:
    source: ExecutableCacheSource
    directory: str
    def __init__(self) -> None: ...

class StreamCallbackThreads:
    mode: Optional[StreamCallbackMode]
    workers: Optional[int]
    auto_workers: bool
    def __init__(self) -> None: ...

class TrainingOptions:
    gradient_accumulation: int
    reduction: ReductionType
    mean_strategy: MeanReductionStrategy
    recomputation: bool
    automatic_loss_scaling: bool
    loss_scaling_bin_edge: float
    loss_scaling_threshold: float
    loss_scaling_update_period: int
    def __init__(self) -> None: ...

class PrecisionOptions:
    half_partials: bool
    running_statistics_always_float: bool
    half_float_casting: HalfFloatCasting
    floating_point_exceptions: bool
    stochastic_rounding: bool
    def __init__(self) -> None: ...

class SimulatorOptions:
    num_ipus: Optional[int]
    chip: ChipVersion
    memory_per_ipu: Optional[int]
    threads_per_ipu: Optional[int]
    cost_only: bool
    allow_over_capacity: bool
    def __init__(self) -> None: ...

class TensorLocationOptions:
    optimizer: TensorLocationSettings
    weights: TensorLocationSettings
    accumulators: TensorLocationSettings
    activations: TensorLocationSettings
    num_io_tiles: int
    def __init__(self) -> None: ...

class DistributedOptions:
    num_processes: int
    process_id: int
    def __init__(self) -> None: ...

class SessionOptions:
    device_iterations: int
    replication_factor: int
    input_replica_grouping: InputReplicaGrouping
    output_mode: SessionOutputMode
    output_return_period: int
    random_seed: Optional[int]
    prefetch_depth: int
    available_memory_proportion: Dict[int, float]
    execution_strategy: Optional[ExecutionStrategy]
    auto_round_num_ipus: bool
    synthetic_data: bool
    module_namescope: bool
    broadcast_buffers: bool
    connection_type: ConnectionType
    sync_pattern: SyncPattern
    updatable_named_buffers: List[str]
    source_location_excludes: Optional[List[str]]
    executable_cache: ExecutableCache
    profile_directory: Optional[str]
    model_name: Optional[str]
    log_directory: Optional[str]
    ipu_id: Optional[int]
    anchors: List[Anchor]
    relax_optimizer_attributes_checks: bool
    use_ipu_model: bool
    show_compilation_progress_bar: bool
    log_cycle_count: bool
    trace_model: bool
    stream_callbacks: StreamCallbackThreads
    training: TrainingOptions
    precision: PrecisionOptions
    simulator: SimulatorOptions
    tensor_locations: TensorLocationOptions
    distributed: DistributedOptions
    def __init__(self) -> None: ...
    def resolved_output_mode(self, training: bool) -> SessionOutputMode: ...
    def downcasts_mixed_floats(self) -> bool: ...
    def to_json(self) -> str: ...
    @staticmethod
    def from_json(text: str) -> SessionOptions: ...
    def __copy__(self) -> SessionOptions: ...
    def __deepcopy__(self, memo: Dict[int, Any]) -> SessionOptions: ...
    def __getstate__(self) -> str: ...
    def __setstate__(self, state: str) -> None: ...

class Replication:
    @property
    def local(self) -> int: ...
    @property
    def processes(self) -> int: ...
    @property
    def first(self) -> int: ...
    @property
    def input_parts(self) -> int: ...
    @property
    def input_part_of(self) -> List[int]: ...
    @property
    def job(self) -> int: ...
    @property
    def input_label(self) -> str: ...
    def input_group_size(self) -> int: ...

def replication_of(options: SessionOptions, training: bool = ...) -> Replication: ...
def ipus_per_replica(options: SessionOptions, ipus_used: int) -> int: ...

class BatchSplit:
    @property
    def device_iterations(self) -> int: ...
    @property
    def gradient_accumulation(self) -> int: ...
    @property
    def replica_parts(self) -> int: ...
    @property
    def replica_label(self) -> str: ...
    @property
    def factor(self) -> int: ...
    def micro_batch_shape(self, name: str, shape: List[int]) -> List[int]: ...
    def batch_text(self, micro_batch: int) -> str: ...
    def explanation(self) -> str: ...

def batch_split_of(options: SessionOptions) -> BatchSplit: ...
def build_compile_options(options: SessionOptions, graph: Graph, training: bool,
                          config: TrainingConfig, random_seed: int,
                          environment_stream_callbacks: StreamCallbackThreads,
                          host_threads: int) -> CompileOptions: ...
def apply_session_training(options: SessionOptions, config: TrainingConfig
                           ) -> TrainingConfig: ...
def gradient_scale(options: SessionOptions) -> float: ...
def running_mean(options: SessionOptions) -> bool: ...

def parse_memory_size(text: str) -> Optional[int]: ...
def parse_chip_version(text: str) -> Optional[str]: ...
def parameter_state_keys(optimizer: OptimizerKind, group: ParameterGroup) -> List[str]: ...
def parameter_state_name(parameter: str, key: str) -> str: ...
def group_state_name(group: int, key: str) -> str: ...
def hyperparameter_names(optimizer: OptimizerKind) -> List[str]: ...

# --- The IR and the frontend (bind_ir.cpp, bind_frontend.cpp) ---

class GraphTensor(TypedDict):
    name: str
    dtype: str
    shape: List[int]

class GraphWeight(GraphTensor):
    trainable: bool

class GraphBlock(TypedDict):
    name: str
    ipu: Optional[int]
    location: str

class Graph:
    @property
    def num_nodes(self) -> int: ...
    def set_input_streamed_element_bytes(self, input: int, bytes: int) -> None: ...
    def to_text(self, locations: bool = True, full_paths: bool = False,
                full: bool = False) -> str: ...
    def serialize(self, stacks: bool = True) -> bytes: ...
    def inputs(self) -> List[GraphTensor]: ...
    def weights(self) -> List[GraphWeight]: ...
    def input_updates(self) -> List[int]: ...
    def blocks(self) -> List[GraphBlock]: ...

def parse_graph(text: str) -> Graph: ...
def pointwise_functions() -> Dict[str, List[str]]: ...
def binary_functions() -> List[str]: ...
def lowered_ops() -> List[str]: ...
def import_module(traced: object, examples: List[torch.Tensor], library_paths: List[str],
                  model_attribute: str = ..., input_names: List[str] = ...,
                  training: bool = ..., random_seed: int = ...,
                  downcast_mixed_floats: bool = ...) -> Graph: ...

# --- What a compiled program reports (bind_runtime.cpp) ---

class MemoryCategory:
    @property
    def name(self) -> str: ...
    @property
    def bytes(self) -> int: ...
    @property
    def always_live(self) -> bool: ...

class TensorMemory:
    @property
    def description(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def category(self) -> str: ...
    @property
    def bytes(self) -> int: ...

class IpuMemoryReport:
    @property
    def ipu(self) -> int: ...
    @property
    def capacity(self) -> int: ...
    @property
    def categories(self) -> List[MemoryCategory]: ...
    @property
    def streaming_memory(self) -> List[MemoryCategory]: ...
    @property
    def largest_tensors(self) -> List[TensorMemory]: ...
    @property
    def temporary_budget(self) -> int: ...
    @property
    def io_tiles(self) -> int: ...
    @property
    def io_tile_bytes(self) -> int: ...
    @property
    def io_tile_capacity(self) -> int: ...
    @property
    def total(self) -> int: ...
    @property
    def always_live(self) -> int: ...
    @property
    def not_always_live(self) -> int: ...
    @property
    def off_chip(self) -> int: ...
    @property
    def fits(self) -> bool: ...
    def to_dict(self) -> Dict[str, Any]: ...

class MemoryReport:
    @property
    def chip(self) -> str: ...
    @property
    def ipus(self) -> List[IpuMemoryReport]: ...
    def to_dict(self) -> Dict[str, Any]: ...

class ProgramStep:
    @property
    def op(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def location(self) -> str: ...
    @property
    def implementation(self) -> str: ...
    @property
    def task(self) -> str: ...
    @property
    def ipu(self) -> int: ...
    @property
    def cycles(self) -> int: ...
    @property
    def temporary_bytes(self) -> int: ...
    @property
    def passes(self) -> int: ...
    @property
    def unbounded_temporary_bytes(self) -> int: ...
    @property
    def sync_cycles(self) -> int: ...
    @property
    def exchange_cycles(self) -> int: ...
    @property
    def compute_cycles(self) -> int: ...
    @property
    def collective(self) -> bool: ...
    @property
    def recomputed(self) -> bool: ...
    def to_dict(self) -> Dict[str, Any]: ...

class TimelineEvent:
    @property
    def ipu(self) -> int: ...
    @property
    def task(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def step(self) -> int: ...
    @property
    def micro_batch(self) -> int: ...
    @property
    def cycle(self) -> int: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def from_ipus(self) -> List[int]: ...
    @property
    def io_tiles(self) -> bool: ...
    @property
    def output(self) -> int: ...
    def to_dict(self) -> Dict[str, Any]: ...

class PipelineInfo:
    @property
    def stages(self) -> int: ...
    @property
    def ipus(self) -> int: ...
    @property
    def pipeline_stages(self) -> int: ...
    @property
    def schedule(self) -> str: ...
    @property
    def cycles_per_step(self) -> int: ...
    @property
    def prefetch_depth(self) -> int: ...
    @property
    def io_tiles(self) -> int: ...
    @property
    def replicas_per_host_thread(self) -> int: ...
    def to_dict(self) -> Dict[str, Any]: ...

# --- Running programs (bind_runtime.cpp) ---

class ReplicaGroup:
    @property
    def replicas(self) -> int: ...
    @property
    def first_index(self) -> int: ...
    @property
    def job_replicas(self) -> int: ...
    def __init__(self, replicas: int,
                 cross_process: Optional[Callable[
                     [str, int, torch.Tensor, Optional[Tuple[int, int, int]]], None]] = None,
                 first_index: int = 0, job_replicas: int = 0) -> None: ...
    def abort(self, reason: str) -> None: ...
    def reset(self) -> None: ...

class Executable:
    @property
    def last_run_cycles(self) -> int: ...
    @property
    def cost_only(self) -> bool: ...
    @property
    def compute_cycles_per_iteration(self) -> int: ...
    @property
    def clock_hz(self) -> float: ...
    def run(self, inputs: List[torch.Tensor]) -> List[torch.Tensor]: ...
    def join_replicas(self, group: ReplicaGroup, index: int) -> None: ...
    def serialize_program(self) -> bytes: ...
    def write_variables(self, values: Dict[str, torch.Tensor]) -> None: ...
    def read_variables(self, names: List[str]) -> Dict[str, torch.Tensor]: ...
    def weight_names(self) -> List[str]: ...
    def state_names(self) -> List[str]: ...
    def write_hyperparameters(self, group: int, values: Dict[str, float]) -> None: ...
    def memory_report(self) -> MemoryReport: ...
    def program(self) -> List[ProgramStep]: ...
    def input_types(self) -> List[Tuple[str, List[int]]]: ...
    def output_types(self) -> List[Tuple[str, List[int]]]: ...
    def graph_text(self, locations: bool = True) -> str: ...
    def timeline(self) -> List[TimelineEvent]: ...
    def pipeline(self) -> PipelineInfo: ...

def compile(graph: Graph, options: CompileOptions) -> Executable: ...

# --- Profiles and sizing (bind_profile.cpp) ---

Assignment = List[Tuple[str, int, int]]  # (block, stage, ipu)

class ProfileWriter:
    def __init__(self, root: str, kind: str, model_name: Optional[str] = None) -> None: ...
    @property
    def root(self) -> str: ...
    @property
    def directory(self) -> str: ...
    def after_compile(self, executable: Executable, model: str, assigned_stages: Assignment,
                      compile_seconds: float, replicas: int) -> None: ...
    def after_call(self, executable: Executable, wall_seconds: float,
                   sizing_job: Optional[Dict[str, Any]]) -> None: ...

def sizing_report(executable: Executable, assigned_stages: Assignment,
                  job: Dict[str, Any]) -> Dict[str, Any]: ...
def sizing_report_lines(report_json: str) -> Dict[str, List[str]]: ...
def sizing_time_parts() -> List[str]: ...
def replication_meta(executable: Executable, replicas: int) -> Dict[str, Any]: ...
def profile_summary(directory: str, trace_json: Optional[str],
                    memory_json: Optional[str]) -> str: ...
def stage_loads(executable: Executable, assigned_stages: Assignment) -> List[Dict[str, Any]]: ...
def profile_style() -> Dict[str, Any]: ...
def load_program(program: bytes, options: CompileOptions) -> Executable: ...
def register_host_function(id: str,
                           function: Callable[[List[torch.Tensor], List[torch.Tensor]], None]
                           ) -> None: ...
def clear_host_functions() -> None: ...
def set_log_level(level: str) -> None: ...
def _raise_for_test(kind: str, message: str) -> None: ...
