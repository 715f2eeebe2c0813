# The typed part of popsim's C++ extension: the compile options and the names
# of device state (csrc/python/bind_options.cpp). The rest of the module is
# typed loosely.
import enum
from typing import Any, Callable, Dict, List, Optional, Tuple

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
    block: str
    stage: int
    ipu: int
    def __init__(self, block: str, stage: int, ipu: int) -> None: ...

class ParameterGroup:
    parameters: List[str]
    has_momentum: bool
    nesterov: bool
    amsgrad: bool
    centered: bool
    maximize: bool
    bias_correction: bool
    def __init__(self) -> None: ...

class TrainingConfig:
    optimizer: OptimizerKind
    groups: List[ParameterGroup]
    max_grad_norm: float
    gradient_scale: float
    running_mean: bool
    anchored_gradients: List[str]
    replicas: int
    system_ipus: int
    sharded_parameters: List[str]
    sharded_weights: List[str]
    loss_scaling: float
    loss_scaling_state: bool
    automatic_loss_scaling: bool
    loss_scaling_bin_edge: float
    loss_scaling_threshold: float
    def __init__(self) -> None: ...

class ReplicaGroup:
    replicas: int
    first_index: int
    job_replicas: int
    def __init__(self, replicas: int,
                 cross_process: Optional[Callable[
                     [str, int, Any, Optional[Tuple[int, int, int]]], None]] = None,
                 first_index: int = 0, job_replicas: int = 0) -> None: ...
    def abort(self, reason: str) -> None: ...
    def reset(self) -> None: ...

class IpuSystemConfig:
    chip: ChipVersion
    num_ipus: int
    memory_per_ipu: int
    io_tiles: int
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
    def __init__(self) -> None: ...

class CompileOptions:
    system: IpuSystemConfig
    compiler: CompilerOptions
    memory: MemoryOptions
    clock: ClockOptions
    kernels: KernelOptions
    def __init__(self) -> None: ...

RANDOM_COUNTER_NAME: str
LOSS_SCALING_NAME: str

def parameter_state_keys(optimizer: OptimizerKind, group: ParameterGroup) -> List[str]: ...
def parameter_state_name(parameter: str, key: str) -> str: ...
def group_state_name(group: int, key: str) -> str: ...
def hyperparameter_names(optimizer: OptimizerKind) -> List[str]: ...
def pointwise_functions() -> Dict[str, List[str]]: ...
def set_log_level(level: str) -> None: ...
def register_host_function(id: str, function: Callable[[List[Any], List[Any]], None]) -> None: ...
def clear_host_functions() -> None: ...
def binary_functions() -> List[str]: ...
def lowered_ops() -> List[str]: ...
def __getattr__(name: str) -> Any: ...
