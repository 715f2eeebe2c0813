"""PopDist's functions on torchrun's environment: which instance this process is of
how many, and the replicas and IPUs each runs (popsim.popdist re-exports them)."""

import os
from typing import Any, Callable, Collection, Optional

from popsim.api.errors import OptionError


def _positive(variable: str, default: int) -> int:
    text = os.environ.get(variable)
    if text is None or not text.strip():
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise OptionError(f"popdist: the environment variable {variable} must be a positive "
                          f"integer, got {text!r}.", option=variable)
    return value


def _index(variable: str) -> int:
    text = os.environ.get(variable, "0")
    try:
        return int(text)
    except ValueError:
        raise OptionError(f"popdist: the environment variable {variable} must be an integer, "
                          f"got {text!r}.", option=variable) from None


def isPopdistEnvSet() -> bool:
    """Whether this process belongs to a launched job (torchrun's environment)."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def getInstanceIndex() -> int:
    """This process's index in the job (torchrun's RANK; 0 outside a job)."""
    return _index("RANK")


def getNumInstances() -> int:
    """The job's processes (torchrun's WORLD_SIZE; 1 outside a job)."""
    return _positive("WORLD_SIZE", 1)


def getNumLocalReplicas() -> int:
    """The replicas each process runs (POPDIST_NUM_LOCAL_REPLICAS, default 1)."""
    return _positive("POPDIST_NUM_LOCAL_REPLICAS", 1)


def getNumTotalReplicas() -> int:
    """The job's replicas: each process's times the processes."""
    return getNumLocalReplicas() * getNumInstances()


def getReplicaIndexOffset() -> int:
    """The index of this process's first replica among the job's."""
    return getInstanceIndex() * getNumLocalReplicas()


def getNumIpusPerReplica() -> int:
    """IPUs per replica (POPDIST_NUM_IPUS_PER_REPLICA, default 1)."""
    return _positive("POPDIST_NUM_IPUS_PER_REPLICA", 1)


def getDeviceId() -> int:
    """0: popsim simulates its IPUs, so there is no device ID to choose."""
    return 0


def init() -> None:
    """Checks that the environment describes a consistent job."""
    if isPopdistEnvSet() and not 0 <= getInstanceIndex() < getNumInstances():
        raise OptionError(f"popdist.init: RANK {getInstanceIndex()} is not in "
                          f"[0, {getNumInstances()}) for WORLD_SIZE {getNumInstances()}.",
                          option="RANK")


def execute_on_instances(instances: Collection[int], fn: Callable[..., Any], *args: Any,
                         **kwargs: Any) -> Optional[Any]:
    """Calls ``fn(*args, **kwargs)`` on the listed instances only (Graphcore's examples write
    checkpoints on instance 0 this way) and returns its result there, None elsewhere. Every
    process then waits for the others at a barrier of the job's torch.distributed group, when
    one is running, so that no instance reads what another has not finished writing."""
    import torch.distributed as dist

    result = fn(*args, **kwargs) if getInstanceIndex() in instances else None
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
    return result
