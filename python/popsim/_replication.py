"""Replicas of a compiled model (``Options.replicationFactor``).

Each replica is an executable of the same program with simulated IPUs of its
own; the replicas of a call run concurrently on host threads, and in
training their ``replica_all_reduce`` ops meet in one ``_C.ReplicaGroup``,
which sums every step's gradients across them before the update.

A call's combined batch is laid out as PopTorch lays it out: dimension 0
holds, for each of the call's micro-batch steps (deviceIterations x
gradientAccumulation), one micro-batch per replica, replica by replica. Each
replica takes its micro-batches from every step; outputs come back in the
same order (a scalar per replica and step is stacked into a vector).
"""

import concurrent.futures
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Set,
                    Tuple, Union)

import torch

from popsim import _C, _process_group

if TYPE_CHECKING:
    from popsim.options import Options
    from popsim.tensor_locations import TensorLocationSettings

_STOPPED_BY_ANOTHER = "because another replica failed"
# Each replica's random counter starts 2**40 micro-batches from the next one's.
_COUNTER_RANGE_BITS = 40


# Where a job's replicas are (local, processes, first, input_parts,
# input_part_of, job, input_label): the host runtime's one reading of
# replicationFactor, Options.Distributed and inputReplicaGrouping
# (csrc/host/replication.h).
Replication = _C.Replication


def of(options: "Options", training: bool = True) -> Replication:
    """The replicas of a job: replicationFactor in each of
    Options.Distributed's processes for training, which sums gradients across
    all of them; inference replicas are this process's own. Input groups of
    replicas (Options.inputReplicaGrouping) share their data."""
    return _C.replication_of(options._session, training)


def sharded_by(settings: "TensorLocationSettings", replicas: int,
               parameters: Iterable[Tuple[str, torch.Tensor]]) -> Dict[str, torch.Size]:
    """{parameter: shape} of the `parameters` that replicated tensor sharding
    in the location `settings` (a TensorLocationSettings) splits over
    `replicas`: the floating-point ones of at least
    minElementsForReplicatedTensorSharding elements."""
    if not settings.replicated_tensor_sharding or replicas == 1:
        return {}
    return {name: parameter.shape for name, parameter in parameters
            if parameter.is_floating_point()
            and parameter.numel() >= settings.min_elements_for_sharding}


def split(tensor: torch.Tensor, steps: int, parts: Sequence[int]) -> List[torch.Tensor]:
    """Each replica's part of one input: its micro-batches of every step,
    `parts[r]` being the micro-batch of each step replica r takes (replicas
    that share their input take the same). A 0-d input (one micro-batch per
    call) goes to every replica."""
    if tensor.dim() == 0:
        return [tensor] * len(parts)
    count = max(parts) + 1
    per_step = tensor.reshape(steps, count, tensor.shape[0] // (steps * count),
                              *tensor.shape[1:])
    pieces = [per_step[:, p].reshape(-1, *tensor.shape[1:]).contiguous() for p in range(count)]
    return [pieces[p] for p in parts]


def merge(parts: Sequence[torch.Tensor], slots: int) -> torch.Tensor:
    """One output from the replicas' `parts`, each holding `slots` returned
    micro-batches (or iterations) concatenated along dimension 0: for each
    slot, every replica's in replica order."""
    first = parts[0]
    if first.dim() == 0:
        return torch.stack(list(parts))
    if first.numel() == 0:
        return first.new_empty(first.shape[0] * len(parts), *first.shape[1:])
    stacked = torch.stack([part.reshape(slots, -1) for part in parts], dim=1)
    return stacked.reshape(first.shape[0] * len(parts), *first.shape[1:])


def _shard(value: torch.Tensor, index: int, count: int, dtype: torch.dtype) -> torch.Tensor:
    """Replica `index`'s shard of `value` in `dtype`, flattened and
    zero-padded to a multiple of `count` elements, as the program shards it."""
    flat = value.detach().reshape(-1).to(dtype)
    size = -(-flat.numel() // count)
    padded = torch.zeros(size * count, dtype=dtype)
    padded[:flat.numel()] = flat
    return padded[index * size:(index + 1) * size].clone()


def replicate(executable: "_C.Executable", compile_options: "_C.CompileOptions",
              options: "Options", replication: Replication, steps: int,
              output_slots: Callable[[int, int], int],
              groupings: Sequence[Tuple[int, int, Sequence[int]]]
              ) -> Union["_C.Executable", "ReplicatedExecutable"]:
    """The executable itself, or for a job of several replicas this
    process's replicas of it (the same program loaded again), which run every
    call together: `steps` micro-batch steps per call, `output_slots` saying
    how many each output returns, `groupings` the (size, stride, job groups)
    of replica-grouped variables (their sums across processes need groups)."""
    if replication.job == 1:
        return executable
    program = executable.serialize_program()
    copies = [executable] + [_C.load_program(program, compile_options)
                             for _ in range(1, replication.local)]
    cross_process = (None if replication.processes == 1 else _process_group.cross_process_sum(
        options, replication.local, compile_options.system.num_ipus, groupings))
    group = _C.ReplicaGroup(replication.local, cross_process, replication.first, replication.job)
    return ReplicatedExecutable(copies, group, steps, output_slots, replication.input_part_of,
                                broadcast_across_processes=replication.processes > 1)


def first_executable(program: Union["_C.Executable", "ReplicatedExecutable"]) -> "_C.Executable":
    """The core's executable of replica 0, which stands for every replica in
    profiles and reports (replicas run the same program)."""
    return program.replicas[0] if isinstance(program, ReplicatedExecutable) else program


class ReplicatedExecutable:
    """Stands for the replicas' executables where the executor uses one:
    runs split the call across them; writes go to every replica; reads,
    the memory report, the clock and the trace are replica 0's (replicas
    run the same program, and training keeps their weights equal)."""

    def __init__(self, executables: List["_C.Executable"], group: "_C.ReplicaGroup",
                 steps: int, output_slots: Callable[[int, int], int],
                 input_parts: Sequence[int], broadcast_across_processes: bool = False) -> None:
        self._replicas = executables
        # Replicas of the whole job, and this process's first among them: sharded
        # state is split over all of them (replica first + k holds shard first + k).
        self._job_replicas = group.job_replicas
        self._first = group.first_index
        self._input_parts = list(input_parts)  # the input micro-batch each replica takes
        self._group = group
        self._steps = steps  # micro-batch steps per call
        self._output_slots = output_slots  # (output index, outputs) -> returned slots
        self._across_processes = broadcast_across_processes
        self._sharded: Dict[str, torch.Size] = {}  # sharded variables: their whole shape
        self._sharded_weights: Set[str] = set()  # of which weights (in their own dtype)
        # Replica-grouped variables: the group of each replica, by name.
        self._grouped: Dict[str, List[int]] = {}
        # Where each replica's random counter starts (draw_apart): the host
        # reads and writes the counter as replica 0 of process 0 would see it.
        self._counter_offsets = [0] * len(executables)
        self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        for index, executable in enumerate(executables):
            executable.join_replicas(group, index)

    @property
    def replicas(self) -> List["_C.Executable"]:
        return list(self._replicas)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._replicas[0], name)

    def run(self, inputs: List[torch.Tensor]) -> List[torch.Tensor]:
        count = len(self._replicas)
        parts = [split(tensor, self._steps, self._input_parts) for tensor in inputs]
        per_replica = [[part[r] for part in parts] for r in range(count)]
        self._group.reset()
        if count == 1:  # one replica in this process, of a job of several
            return self._replicas[0].run(per_replica[0])
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=count - 1, thread_name_prefix="popsim-replica")
        others = [self._pool.submit(self._replicas[r].run, per_replica[r])
                  for r in range(1, count)]
        results: List[List[torch.Tensor]] = [[] for _ in range(count)]
        errors: List[Exception] = []
        try:
            results[0] = self._replicas[0].run(per_replica[0])
        except Exception as error:  # noqa: BLE001 - reported below, after the others stop
            errors.append(error)
        for r, future in enumerate(others, start=1):
            try:
                results[r] = future.result()
            except Exception as error:  # noqa: BLE001
                errors.append(error)
        if errors:
            # The replica that failed first, not those it stopped.
            raise next((e for e in errors if _STOPPED_BY_ANOTHER not in str(e)), errors[0])
        outputs = len(results[0])
        return [merge([result[i] for result in results], self._output_slots(i, outputs))
                for i in range(outputs)]

    def shard_states(self, shapes: Dict[str, torch.Size],
                     weights: Optional[Dict[str, torch.Size]] = None) -> None:
        """Declares the optimizer state (float32) and the weights each replica
        holds a shard of (replicated tensor sharding), by their whole shape:
        reads gather them, writes split them."""
        self._sharded = {**shapes, **(weights or {})}
        self._sharded_weights = set(weights or {})

    def group_variables(self, groups: Dict[str, List[int]]) -> None:
        """Declares replica-grouped variables (replicaGrouping), with the group
        of each of the job's replicas: writes give each replica its group's
        row, reads join each group's value along a new first dimension, read
        from the group's first replica (in whichever process holds it)."""
        self._grouped = {name: list(job) for name, job in groups.items()}

    def _local_groups(self, name: str) -> List[int]:
        return self._grouped[name][self._first:self._first + len(self._replicas)]

    def write_variables(self, values: Dict[str, torch.Tensor]) -> None:
        whole = {name: value for name, value in values.items()
                 if name not in self._sharded and name not in self._grouped}
        sharded = {name: value for name, value in values.items() if name in self._sharded}
        grouped = {name: value for name, value in values.items() if name in self._grouped}
        counter = whole.pop(_C.RANDOM_COUNTER_NAME, None)
        for index, executable in enumerate(self._replicas):
            own = {name: _shard(value, self._first + index, self._job_replicas,
                                value.dtype if name in self._sharded_weights else torch.float32)
                   for name, value in sharded.items()}
            own.update({name: value[self._local_groups(name)[index]]
                        for name, value in grouped.items()})
            if counter is not None:
                own[_C.RANDOM_COUNTER_NAME] = counter + self._counter_offsets[index]
            executable.write_variables({**whole, **own})

    def read_variables(self, names: Sequence[str]) -> Dict[str, torch.Tensor]:
        values = self._replicas[0].read_variables(
            [name for name in names if name not in self._sharded and name not in self._grouped])
        for name in names:  # in the same order in every process
            if name in self._grouped:
                values[name] = self._read_grouped(name)
        if _C.RANDOM_COUNTER_NAME in values:
            values[_C.RANDOM_COUNTER_NAME] -= self._counter_offsets[0]
        sharded = [name for name in names if name in self._sharded]
        if sharded:
            parts = [executable.read_variables(sharded) for executable in self._replicas]
            for name in sorted(sharded):  # the same order in every process
                shape = self._sharded[name]
                joined = torch.cat([part[name] for part in parts])
                if self._across_processes:
                    joined = _process_group.gather_from_every_process(joined)
                values[name] = joined[:shape.numel()].reshape(shape)
        return values

    def _read_grouped(self, name: str) -> torch.Tensor:
        """Each group's value, from its first replica: the rows this process
        holds first replicas of, and (across processes) the others' rows."""
        job, count = self._grouped[name], len(self._replicas)
        owners = [job.index(group) for group in range(max(job) + 1)]  # first replicas
        mine = {group: self._replicas[owner - self._first].read_variables([name])[name]
                for group, owner in enumerate(owners)
                if self._first <= owner < self._first + count}
        if not self._across_processes:
            return torch.stack([mine[group] for group in range(len(owners))])
        like = next(iter(mine.values())) if mine else \
            self._replicas[0].read_variables([name])[name]
        rows = torch.stack([mine.get(group, torch.zeros_like(like))
                            for group in range(len(owners))])
        every = _process_group.gather_from_every_process(rows)  # process p's rows at p x groups
        return torch.stack([every[(owner // count) * len(owners) + group]
                            for group, owner in enumerate(owners)])

    def write_hyperparameters(self, *args: Any, **kwargs: Any) -> None:
        for executable in self._replicas:
            executable.write_hyperparameters(*args, **kwargs)

    def broadcast(self, names: Sequence[str]) -> None:
        """Copies replica 0's variables `names` (of process 0, in a job of
        several) to the other replicas."""
        if not names:
            return
        values = self._replicas[0].read_variables(list(names))
        if self._across_processes:
            _process_group.broadcast_from_first_process(values)
            targets = self._replicas
        else:
            targets = self._replicas[1:]
        for executable in targets:
            executable.write_variables(values)

    def draw_apart(self, process: int) -> None:
        """Moves each replica's random counter (dropout masks, random ops) to
        a range of its own, so replicas do not draw the same numbers; the
        host keeps reading and writing replica 0's."""
        if _C.RANDOM_COUNTER_NAME not in set(self._replicas[0].state_names()):
            return
        counter = self.read_variables([_C.RANDOM_COUNTER_NAME])
        count = len(self._replicas)
        self._counter_offsets = [(process * count + index) << _COUNTER_RANGE_BITS
                                 for index in range(count)]
        self.write_variables(counter)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
