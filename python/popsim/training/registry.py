"""Which training models train which modules.

A live training model records every module of its host model, with one
record per training model: the training model, its host model and how many
calls it has run. Inference models look for records of their own modules, so
one built from the whole model, a submodule or a larger model containing the
trained one sees the trained weights.

Several training models may train modules they share (a GAN's generator
and discriminator, each trained by a model of its own that runs both), or
parameters tied between their modules. Each record knows the records it
shares a module or a tensor with, and a training model brings their newer
weights to its device before it runs (weight_flow.py). So, of the training
models that train one tensor, at most one holds weights newer than the
host's at any time, and copying them home needs no order. The same host
model wrapped twice is refused, as PopTorch refuses it, and so is one
optimizer given to two training models (each device holds the state of the
optimizer it runs).

Records live outside the modules (a weak map), so copies and pickles of a
module never carry them.
"""

import itertools
import weakref
from typing import Dict, FrozenSet, List, Optional, Protocol, Set

import torch

from popsim.api.errors import InputError


class Trainer(Protocol):
    """What the registry asks of a training model (its weight flow): that its
    trained weights reach the host model; its repr names it in errors."""

    optimizer: Optional[torch.optim.Optimizer]

    def copy_weights_home_if_newer(self) -> bool: ...


_records: "weakref.WeakKeyDictionary[object, List[TrainingRecord]]" = (
    weakref.WeakKeyDictionary())  # module -> the records of the training models training it
# Every live record by serial (the values of _records, kept so that finding them
# does not walk every recorded module).
_live: Dict[int, "TrainingRecord"] = {}
_serials = itertools.count()
# Bumped whenever any record's version or the set of records changes, so that an
# inference call can skip walking its modules (versions()) when nothing did.
generation = 0


def _bump() -> None:
    global generation
    generation += 1


class TrainingRecord:
    def __init__(self, trainer: Trainer, model: torch.nn.Module) -> None:
        self._trainer = weakref.ref(trainer)
        self._model = weakref.ref(model)
        self.serial = next(_serials)
        self.version = 0  # calls run: other models compare it with what they uploaded
        self.tensors = _tensor_ids(model)  # its model's parameters and buffers
        # The other training models' records that train a module or tensor of this one's.
        self.sharing: Set["TrainingRecord"] = set()

    def called(self) -> None:
        """The training model's device weights changed: it ran a call, or the host's were
        written to it."""
        self.version += 1
        _bump()

    @property
    def trainer(self) -> Optional[Trainer]:
        """The training model, or None once it has been collected."""
        return self._trainer()

    def wraps(self, model: torch.nn.Module) -> bool:
        """Whether `model` is the host model this training model wraps (not a submodule)."""
        return self._model() is model and self.trainer is not None


def _tensor_ids(model: torch.nn.Module) -> FrozenSet[int]:
    """The ids of `model`'s parameters and buffers, read without the host model's hooks
    (host_sync.py), which would copy weights home."""
    ids: Set[int] = set()
    for module in model.modules():
        tensors: Dict[str, Optional[torch.Tensor]] = {**module._parameters, **module._buffers}
        ids.update(id(tensor) for tensor in tensors.values() if tensor is not None)
    return frozenset(ids)


def register(model: torch.nn.Module, trainer: Trainer) -> TrainingRecord:
    """Records `model`'s modules as trained by `trainer` too; fails if another training
    model wraps `model` itself or runs the same optimizer."""
    for other in _records.get(model, ()):
        if other.wraps(model):
            raise InputError(
                f"This model is already wrapped by popsim.trainingModel ({other.trainer!r}). "
                "Call destroy() on that wrapper before wrapping the model for training again.")
    check_optimizer_unshared(trainer.optimizer, trainer)
    record = TrainingRecord(trainer, model)
    for module in model.modules():
        trained_by = _records.setdefault(module, [])
        for other in trained_by:
            other.sharing.add(record)
            record.sharing.add(other)
        trained_by.append(record)
    for other in _live.values():
        if other.tensors & record.tensors:  # tied parameters
            other.sharing.add(record)
            record.sharing.add(other)
    _live[record.serial] = record
    _bump()
    return record


def check_optimizer_unshared(optimizer: Optional[torch.optim.Optimizer],
                             trainer: Trainer) -> None:
    """Refuses an optimizer another live training model runs: each device holds the state
    (momentum, Adam's moments) of the optimizer it runs, where eager PyTorch has one."""
    if optimizer is None:
        return
    for other in _live.values():
        if other.trainer is not None and other.trainer is not trainer and (
                other.trainer.optimizer is optimizer):
            raise InputError(
                f"This optimizer already trains another training model ({other.trainer!r}). "
                "Each training model keeps its optimizer's state (momentum, Adam's moments) on "
                "its own device, so two cannot share one: give each its own optimizer (a GAN "
                "gives one to the generator's parameters and one to the discriminator's), or "
                "call destroy() on that training model first.")


def release(record: TrainingRecord) -> None:
    """Forgets a training model's record (destroy(), or the model was collected)."""
    for module, trained_by in list(_records.items()):
        if record in trained_by:
            trained_by.remove(record)
            if not trained_by:
                del _records[module]
    for other in record.sharing:
        other.sharing.discard(record)
    record.sharing.clear()
    _live.pop(record.serial, None)
    _bump()


def records(model: torch.nn.Module) -> List[TrainingRecord]:
    """The records of training models that train modules or tensors of `model`."""
    found: Dict[int, TrainingRecord] = {}
    for module in model.modules():
        for record in _records.get(module, ()):
            found[record.serial] = record
    if _live:  # (a parameter tied into a module no training model holds)
        tensors = _tensor_ids(model)
        for record in _live.values():
            if record.serial not in found and record.tensors & tensors:
                found[record.serial] = record
    return list(found.values())


def versions(model: torch.nn.Module) -> Dict[int, int]:
    """{record serial: version}: what an inference model compares to know it is stale."""
    return {record.serial: record.version for record in records(model)}
