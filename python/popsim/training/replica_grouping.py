"""Replica-grouped variables (PopTorch's ``replicaGrouping``): a parameter
whose replicas form groups, each group with a value of its own.

``ipu_model.<parameter>.replicaGrouping(CommGroupType, shards, mode)`` (or
``ipu_model.per_replica_params[name] = (CommGroupType, shards, mode)``)
before the model compiles. The host parameter then holds one value per group
along a new leading dimension; the model is traced with group 0's value (so
``forward`` sees one group's shape), replica r receives its group's row, and
in training each step sums the parameter's gradient within the group only
(a group of one keeps its own), still divided by every replica for a mean,
as PopART's Post strategy does (with MeanReductionStrategy.Running, the
group's mean); a group whose replicas are in several processes of a job sums
across those processes too. The host reads the first replica of each group
back (``VariableRetrievalMode.OnePerGroup``); optimizer state follows its
parameter.
"""

import contextlib
import weakref
from typing import TYPE_CHECKING, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple

import torch

from popsim.device import replication as _replication
from popsim.api.log import LOGGER
from popsim.api.enums import CommGroupType
from popsim.api.enums import VariableRetrievalMode
from popsim.api.errors import OptionError

if TYPE_CHECKING:
    from popsim.api.options import Options

# Records a parameter's grouping: (name, (CommGroupType, shards, VariableRetrievalMode)).
SetGrouping = Callable[[str, Tuple[CommGroupType, int, VariableRetrievalMode]], None]


class Grouping(NamedTuple):
    """One parameter's groups: the group of each replica of this process and,
    for the training program, the replicas per group and their stride among
    the job's replicas (1: neighbours; m: every m-th replica); `total`
    counts the job's groups and `job` holds the group of each of the job's
    replicas."""
    groups: List[int]
    size: int
    stride: int
    total: int = 0
    job: Tuple[int, ...] = ()

    @property
    def group_count(self) -> int:
        return self.total or max(self.groups) + 1


def grouping_of(name: str, setting: tuple, replicas: int) -> Grouping:
    """The groups `setting` = (CommGroupType, shards, VariableRetrievalMode)
    makes among `replicas`; an OptionError names the parameter otherwise."""
    where = f"replicaGrouping of '{name}'"
    if not isinstance(setting, tuple) or len(setting) != 3:
        raise OptionError(f"{where}: expected (CommGroupType, shards, VariableRetrievalMode), "
                          f"got {setting!r}.", option="replicaGrouping")
    kind, shards, mode = setting
    if not isinstance(kind, CommGroupType):
        raise OptionError(f"{where}: expected a popsim.CommGroupType, got {kind!r}.",
                          option="replicaGrouping")
    if not isinstance(mode, VariableRetrievalMode):
        raise OptionError(f"{where}: expected a popsim.VariableRetrievalMode, got {mode!r}.",
                          option="replicaGrouping")
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 0:
        raise OptionError(f"{where}: shards (replicas per group) must be a non-negative int, "
                          f"got {shards!r}.", option="replicaGrouping")
    grouping = _groups(where, kind, shards, replicas)
    if mode == VariableRetrievalMode.AllReplicas and 1 < grouping.size < replicas:
        # With groups of one (or one group) a value per replica is a value per group.
        raise OptionError(
            f"{where}: VariableRetrievalMode.AllReplicas would read back one value per replica "
            f"({replicas}), but the host parameter holds one per group "
            f"({grouping.group_count}), and the {grouping.size} replicas of a group hold the "
            "same value. Use VariableRetrievalMode.OnePerGroup.", option="replicaGrouping")
    return grouping


def _groups(where: str, kind: CommGroupType, shards: int, replicas: int) -> Grouping:
    if kind == CommGroupType.All:
        return Grouping([0] * replicas, replicas, 1)
    if kind == CommGroupType.Ungrouped:
        return Grouping(list(range(replicas)), 1, 1)
    if shards == 0 or replicas % shards != 0:
        raise OptionError(
            f"{where}: CommGroupType.{kind.name} groups of {shards} replicas must divide "
            f"replicationFactor ({replicas}). Choose a group size that divides it.",
            option="replicaGrouping")
    count = replicas // shards
    if kind == CommGroupType.Consecutive:
        return Grouping([r // shards for r in range(replicas)], shards, 1)
    return Grouping([r % count for r in range(replicas)], shards, count)


def plan(settings: Dict[str, tuple], parameters: Dict[str, torch.Tensor], options: "Options",
         training: bool) -> Dict[str, Grouping]:
    """The groupings of the named parameters with more than one group, checked
    against the parameters and options: for this process's replicas, whose
    groups are numbered over the job's replicas in training."""
    replication = _replication.of(options, training)
    local, first = replication.local, replication.first
    groupings = {}
    for name, setting in settings.items():
        if name not in parameters:
            LOGGER.warning("replicaGrouping names '%s', which is not a parameter of the "
                           "model; it has no effect.", name)
            continue
        job = grouping_of(name, setting, replication.job)
        if job.group_count == 1:
            continue  # one value for every replica: an ordinary parameter
        _check_not_sharded(name, options, training)
        grouping = _this_process(job, first, local)
        shape, groups = list(parameters[name].shape), grouping.group_count
        if not shape or shape[0] != groups:
            raise OptionError(
                f"replicaGrouping of '{name}': its {groups} groups need one value each, along a "
                f"leading dimension of {groups}, but the parameter's shape is {shape}."
                + (" Scalars cannot be per-replica weights." if not shape else ""),
                option="replicaGrouping")
        groupings[name] = grouping
    return groupings


def _this_process(job: Grouping, first: int, local: int) -> Grouping:
    """The job's grouping as this process's replicas see it. A group may have
    replicas in several processes: each process sums its own members'
    gradients, then the processes holding the group sum theirs
    (torch.distributed, _process_group.py)."""
    return Grouping(job.groups[first:first + local], job.size, job.stride, job.group_count,
                    tuple(job.groups))


def _check_not_sharded(name: str, options: "Options", training: bool) -> None:
    locations = options.TensorLocations
    sharding = [("weights", locations.weight_location)]
    if training:
        sharding.append(("optimizer state", locations.optimizer_location))
    for what, settings in sharding:
        if settings.replicated_tensor_sharding:
            raise OptionError(
                f"replicaGrouping of '{name}': replicated tensor sharding spreads the {what} "
                "over every replica, which a grouped parameter's groups do not share. Turn "
                "sharding off or the grouping.", option="replicaGrouping")


def check_no_clipping(groupings: Dict[str, Grouping], max_grad_norm: Optional[float]) -> None:
    if groupings and max_grad_norm is not None and max_grad_norm > 0:
        raise OptionError(
            f"max_grad_norm with replicaGrouping ({', '.join(sorted(groupings))}): each group's "
            "gradients differ, so the global norm would differ from replica to replica and "
            "ungrouped weights would drift apart. Clip without replica-grouped parameters.",
            option="replicaGrouping")


def training_groups(groupings: Dict[str, Grouping]) -> Dict[str, Tuple[int, int]]:
    """TrainingConfig.grouped_parameters: (replicas per group, stride)."""
    return {name: (g.size, g.stride) for name, g in groupings.items()}


def _owner(model: torch.nn.Module, name: str) -> Tuple[torch.nn.Module, str]:
    path, _, attribute = name.rpartition(".")
    return (model.get_submodule(path) if path else model), attribute


@contextlib.contextmanager
def traced_with_first_group(model: torch.nn.Module,
                            groupings: Dict[str, Grouping]) -> Iterator[None]:
    """While tracing, each grouped parameter is its first group's value."""
    originals = []
    try:
        for name in groupings:
            module, attribute = _owner(model, name)
            original = module._parameters[attribute]
            assert original is not None, name  # plan() found it among the parameters
            originals.append((module, attribute, original))
            module._parameters[attribute] = torch.nn.Parameter(
                original.detach()[0].clone(), requires_grad=original.requires_grad)
        yield
    finally:
        for module, attribute, original in reversed(originals):
            module._parameters[attribute] = original


class GroupingHandle:
    """What ``ipu_model.<parameter>`` offers beside the parameter itself:
    ``replicaGrouping(comm_group_type, shards, variable_retrieval_mode)``
    (and PopTorch's older spelling ``perReplica``), which records the
    grouping in the executor's ``per_replica_params`` through `set_grouping`
    (a method of the executor, held weakly: the parameter must not keep the
    executor alive)."""

    def __init__(self, set_grouping: SetGrouping, name: str) -> None:
        self._set_grouping: Callable[[], Optional[SetGrouping]] = weakref.WeakMethod(
            set_grouping)  # type: ignore[arg-type]
        self._name = name

    def __call__(self, comm_group_type: CommGroupType, shards: int,
                 variable_retrieval_mode: VariableRetrievalMode) -> None:
        set_grouping = self._set_grouping()
        if set_grouping is None:
            raise OptionError(f"replicaGrouping of '{self._name}': the model it was read "
                              "from no longer exists.", option="replicaGrouping")
        set_grouping(self._name, (comm_group_type, shards, variable_retrieval_mode))

    def __reduce__(self) -> Tuple[Callable[[str], "GroupingHandle"], Tuple[str]]:
        # A copied or pickled parameter no longer belongs to the executor.
        return (_detached_handle, (self._name,))


def _detached_handle(name: str) -> GroupingHandle:
    handle = GroupingHandle.__new__(GroupingHandle)
    handle._set_grouping = lambda: None
    handle._name = name
    return handle
