"""Which training model trains which modules.

A live training model records every module of its host model, with one
shared record: the training model and how many calls it has run. Inference
models look for records of their own modules, so one built from the whole
model, a submodule or a larger model containing the trained one sees the
trained weights. A module already recorded cannot be trained by a second
training model. Records live outside the modules (a weak map), so copies and
pickles of a module never carry them.
"""

import itertools
import weakref
from typing import Dict, List, Optional, Protocol

import torch

from popsim.api.errors import InputError


class Trainer(Protocol):
    """What the registry asks of a training model (its weight flow): that its
    trained weights reach the host model; its repr names it in errors."""

    def copy_weights_home_if_newer(self) -> None: ...


_records: "weakref.WeakKeyDictionary[object, TrainingRecord]" = (
    weakref.WeakKeyDictionary())  # module -> TrainingRecord
_serials = itertools.count()
# Bumped whenever any record's version or the set of records changes, so that an
# inference call can skip walking its modules (versions()) when nothing did.
generation = 0


def _bump() -> None:
    global generation
    generation += 1


class TrainingRecord:
    def __init__(self, trainer: Trainer) -> None:
        self._trainer = weakref.ref(trainer)
        self.serial = next(_serials)
        self.version = 0  # calls run: inference models compare it with what they uploaded

    def called(self) -> None:
        """The training model ran a call: its weights changed."""
        self.version += 1
        _bump()

    @property
    def trainer(self) -> Optional[Trainer]:
        """The training model, or None once it has been collected."""
        return self._trainer()


def register(model: torch.nn.Module, trainer: Trainer) -> TrainingRecord:
    """Records `model`'s modules as trained by `trainer`; fails if another one trains any."""
    for name, module in model.named_modules():
        record = _records.get(module)
        if record is not None and record.trainer is not None:
            what = f"Its submodule '{name}' is" if name else "This model is"
            raise InputError(
                f"{what} already wrapped by popsim.trainingModel ({record.trainer!r}). Call "
                "destroy() on that wrapper before wrapping the model for training again.")
    record = TrainingRecord(trainer)
    for module in model.modules():
        _records[module] = record
    _bump()
    return record


def release(record: TrainingRecord) -> None:
    """Forgets a training model's record (destroy(), or the model was collected)."""
    for module in [module for module, other in _records.items() if other is record]:
        del _records[module]
    _bump()


def records(model: torch.nn.Module) -> List[TrainingRecord]:
    """The records of training models that train modules of `model`."""
    found: Dict[int, TrainingRecord] = {}
    for module in model.modules():
        record = _records.get(module)
        if record is not None:
            found[record.serial] = record
    return list(found.values())


def versions(model: torch.nn.Module) -> Dict[int, int]:
    """{record serial: version}: what an inference model compares to know it is stale."""
    return {record.serial: record.version for record in records(model)}
