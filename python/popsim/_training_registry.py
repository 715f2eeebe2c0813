"""Which training model trains which modules.

A training model marks every module of its host model with one shared
record: the training model itself (while it lives) and how many calls it
has run. Inference models look for records in their own modules, so one
built from the whole model, a submodule or a larger model containing the
trained one sees the trained weights. The mark also stops a second training
model from training the same modules.
"""

import itertools
import weakref

from popsim.errors import InputError

_RECORD = "_popsim_training_record"
_serials = itertools.count()


class TrainingRecord:
    def __init__(self, trainer):
        self._trainer = weakref.ref(trainer)
        self.serial = next(_serials)
        self.version = 0  # calls run: inference models compare it with what they uploaded

    @property
    def trainer(self):
        """The live training model, or None once destroyed or collected."""
        return self._trainer() if self._trainer is not None else None

    def release(self):
        self._trainer = None

    def __reduce__(self):
        # Copies and pickles of a module are not trained by this model.
        return (_no_record, ())


def _no_record():
    return None


def register(model, trainer):
    """Marks `model`'s modules as trained by `trainer`; fails if another one trains any."""
    for name, module in model.named_modules():
        record = module.__dict__.get(_RECORD)
        if record is not None and record.trainer is not None:
            what = f"Its submodule '{name}' is" if name else "This model is"
            raise InputError(
                f"{what} already wrapped by popsim.trainingModel ({record.trainer!r}). Call "
                "destroy() on that wrapper before wrapping the model for training again.")
    record = TrainingRecord(trainer)
    for module in model.modules():
        module.__dict__[_RECORD] = record
    return record


def records(model):
    """The training records found in `model`'s modules (live or finished)."""
    found = {}
    for module in model.modules():
        record = module.__dict__.get(_RECORD)
        if record is not None:
            found[record.serial] = record
    return list(found.values())


def versions(model):
    """{record serial: version}: what an inference model compares to know it is stale."""
    return {record.serial: record.version for record in records(model)}
