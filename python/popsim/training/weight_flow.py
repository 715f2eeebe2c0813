"""Where a wrapped model's weights and optimizer state are current, and the
copies that keep the host and the device in step: one state machine per
wrapped model, which the registry of training models, the host model's
lazy copies (host_sync.py) and the optimizer's state dict
(optimizer_state.py) reach through narrow protocols.

Weights: an inference model copies the host model's weights to the device
when it compiles (and on copyWeightsToDevice()); it also picks up weights a
training model of the same host model has trained. While a training model
runs, its device weights are the source of truth; the host model is updated
lazily, when it is used. Training models that share modules take each
other's newer weights before they run: the other's go home, and this one's
device gets the host's. The optimizer's state follows the same way, and a
loaded state dict goes to the device before the next call.

The states (each a small enum, not a flag per case):
- weights: in step, or the device's newer (a training call ran since they
  were copied home);
- optimizer state: in step, the device's newer, or the host's newer
  (optimizer.load_state_dict() since the last call, with its "ipu_state");
- the device: attached, or detached (holding the state it had).
"""

import enum
import threading
import warnings
from typing import Callable, Dict, Mapping, Optional, Sequence, Set, Tuple

import torch

from popsim import _C
from popsim.api.enums import ConnectionType
from popsim.api.errors import InputError, OptionError
from popsim.api.options import Options
from popsim.frontend import weights as _weights
from popsim.training import host_sync as _host_sync
from popsim.training import optimizer_binding as _binding
from popsim.training import optimizer_state as _optimizer_state
from popsim.training import poptorch_state_names as _poptorch_names
from popsim.training import registry as _registry

# (the device's optimizer state by name, each group's hyper-parameters and the loss scaling)
DeviceOptimizerState = Tuple[Dict[str, torch.Tensor], Dict[str, torch.Tensor]]


class _Copies(enum.Enum):
    IN_STEP = "in step"
    DEVICE_NEWER = "device newer"
    HOST_NEWER = "host newer"  # (the optimizer state only)


class WeightFlow:
    """The weights and optimizer state of one wrapped model (an Executor's):
    created with it, bound to each program it compiles, released by destroy()."""

    def __init__(self, model: torch.nn.Module, shallow: torch.nn.Module, options: Options,
                 training: bool, optimizer: Optional[torch.optim.Optimizer],
                 lock: "threading.RLock", describe: Callable[[], str],
                 destroy: Callable[[], None]) -> None:
        self._model = model  # the user's
        self._shallow = shallow  # the executor's shallow copy: its named tensors
        self._options = options
        self._training = training
        self.optimizer = optimizer
        self._lock = lock
        self._describe = describe
        self._destroy = destroy  # the executor's destroy(), which the host model offers too
        self._record: Optional[_registry.TrainingRecord] = None
        if training:
            self._record = _registry.register(model, self)
        self._unbind()

    def __repr__(self) -> str:
        return self._describe()

    def _unbind(self) -> None:
        self._program: Optional[_C.DeviceProgram] = None
        self._binding: Optional[_binding.OptimizerBinding] = None
        self._replica_groups: Dict[str, int] = {}  # replica-grouped parameters' group counts
        self._weights = _Copies.IN_STEP
        self._optimizer_copies = _Copies.IN_STEP
        # optimizer.load_state_dict()'s "ipu_state", written to the device with the state
        self._pending_ipu_state: Optional[Dict[str, torch.Tensor]] = None
        # PopTorch's names for the bound optimizer's state (_state_names), by binding.
        self._poptorch_names: Optional[Tuple[_binding.OptimizerBinding,
                                             _poptorch_names.StateNames]] = None
        self.attached = False
        self._detached_state: Optional[Dict[str, torch.Tensor]] = None
        self._syncing = False
        # Inference: the training models' versions last uploaded, and the registry's
        # generation when checked. Training: those of the training models it shares
        # modules with.
        self._seen_training: Optional[Dict[int, int]] = None
        self._seen_generation: Optional[int] = None
        self._warned_unwritten_change = False  # (once per compiled model)

    @property
    def program(self) -> _C.DeviceProgram:
        assert self._program is not None, "the model has not compiled"
        return self._program

    @property
    def binding(self) -> _binding.OptimizerBinding:
        """A training model's optimizer as the program uses it; once compiled."""
        assert self._binding is not None, "the training model has not compiled"
        return self._binding

    @property
    def detached_state(self) -> Optional[Dict[str, torch.Tensor]]:
        """The device state a detached training model keeps to attach again with."""
        return self._detached_state

    def names_by_tensor(self) -> Dict[int, str]:
        """Each parameter's and buffer's name, by the tensor's id."""
        names: Dict[int, str] = {}
        for name, tensor in _weights.named_tensors(self._shallow).items():
            names.setdefault(id(tensor), name)
        return names

    def ensure_registered(self) -> None:
        """A training model compiling again after destroy() is recorded again."""
        if self._training and self._record is None:
            self._record = _registry.register(self._model, self)

    def seen_trainers(self) -> None:
        """A model about to compile: the trained weights it will upload, of the training
        models of its modules (inference) or of those it shares modules with (training)."""
        if not self._training:
            self._seen_training = self._sync_trainers_to_host()
        else:
            self._seen_training = self._sync_sharing_trainers_to_host()

    # --- A compiled program's life ---

    def bind(self, program: _C.DeviceProgram, binding: Optional[_binding.OptimizerBinding],
             jobs_replicas: int,
             replica_groups: Optional[Mapping[str, int]] = None) -> None:
        """The program the model compiled to: its weights (and a training model's
        optimizer state and hyper-parameters) go to the device, and the host model and
        optimizer learn to copy theirs home first. `replica_groups`: each replica-grouped
        parameter's number of groups (its state has one row per group)."""
        self._program, self._binding = program, binding
        self._replica_groups = dict(replica_groups or {})
        self.upload_weights()
        if binding is not None:
            if not program.cost_only:  # (a cost-only device holds no state)
                program.write_variables(binding.initial_state(program))
            binding.write_hyperparameters(program, _binding.grad_scale(self._options))
            _host_sync.install(self._model, self, self._destroy)
            assert self.optimizer is not None, "a training model has an optimizer"
            _optimizer_state.install(self.optimizer, self)
        if jobs_replicas > 1:  # replicas draw random numbers of their own
            program.draw_apart(self._options.Distributed.processId)
        # OnDemand attaches (and Never would) only when the model first runs.
        self.attached = self._options.connection_type == ConnectionType.Always

    def catch_up(self) -> None:
        """The device takes the weights other training models trained since it last did:
        those of its model's modules (inference), or of the modules it shares (training)."""
        if self._training:
            self._catch_up_with_sharing_trainers()
        else:
            self._catch_up_with_training()

    def before_call(self) -> None:
        """What a call needs first: the trained weights of other models, and a training
        model's loaded optimizer state."""
        self.catch_up()
        if not self._training:
            return
        if self._optimizer_copies == _Copies.HOST_NEWER:
            self._write_optimizer_state()
        if not self._warned_unwritten_change:
            change = self.binding.unwritten_change(_binding.grad_scale(self._options))
            if change is not None:
                self._warned_unwritten_change = True
                warnings.warn(
                    f"The optimizer's hyper-parameters changed since they were last given to "
                    f"the device ({change}): as in PopTorch, call "
                    f"setOptimizer(optimizer) on the training model after changing them (after "
                    f"a learning rate scheduler's step(), for one), or the device keeps "
                    f"training with the old ones.", stacklevel=4)

    def after_call(self) -> None:
        """A training call ran: the device's weights and state are newer (a cost-only
        device trains nothing, and the host stays the truth)."""
        if not self._training:
            return
        if not self.program.cost_only:
            self._weights = _Copies.DEVICE_NEWER
            self._optimizer_copies = _Copies.DEVICE_NEWER
        assert self._record is not None, "a training model is recorded while it runs"
        self._record.called()
        if hasattr(self.optimizer, "_step_count"):
            # The device's optimizer steps, as PyTorch's optimizer.step() counts them, for
            # learning rate schedulers (which warn when the optimizer never stepped).
            self.optimizer._step_count += self._options.device_iterations  # type: ignore

    def release(self) -> None:
        """destroy(): weights (when the device's are newer: a training model sharing modules
        may have trained past them since) and optimizer state home, and the program
        forgotten."""
        if self._program is not None and self._training:
            if self.attached and not self._program.cost_only:
                self.copy_weights_home_if_newer()
                self.binding.copy_state_to_host(self._program)
            _host_sync.uninstall(self._model, self)
            assert self.optimizer is not None, "a training model has an optimizer"
            _optimizer_state.uninstall(self.optimizer)
        if self._record is not None:
            _registry.release(self._record)
            self._record = None
        self._unbind()

    # --- Weights ---

    def write_host_weights(self) -> None:
        """copyWeightsToDevice() and the executor's load_state_dict(): the host model's
        weights as a user reading it sees them (other training models' newer weights go
        home first) to the device. Training models sharing modules with this one take them
        before their next call, as they take a call's."""
        if self._training:
            self._seen_training = self._sync_sharing_trainers_to_host()
        else:
            self._seen_training = self._sync_trainers_to_host()
            self._seen_generation = _registry.generation
        self.upload_weights()
        if self._record is not None and self._record.sharing:
            self._record.called()

    def copy_weights_home_explicitly(self) -> None:
        """copyWeightsToHost(): the device's weights home, once it has taken what other
        training models trained since (a device they ran past would undo their steps)."""
        self.catch_up()
        self.copy_weights_home()

    def upload_weights(self) -> None:
        """The host model's weights to the device (a cost-only device checks and drops
        them); the host and the device are then in step."""
        names = self.program.weight_names()
        # (write_variables converts each to the dtype the device holds it in.)
        self.program.write_variables(_weights.host_weights(self._shallow, names))
        self._weights = _Copies.IN_STEP

    def copy_weights_home(self) -> None:
        """The device's weights into the host model (nothing was computed cost-only)."""
        if self.program.cost_only:
            return
        names = self.program.weight_names()
        device = self.program.read_variables(names)
        host = _weights.host_weights(self._shallow, names)
        with torch.no_grad():
            for name in names:
                host[name].copy_(device[name])
        self._weights = _Copies.IN_STEP

    def copy_weights_home_if_newer(self) -> bool:
        """The host model is used: it gets the device's weights if they are newer
        (host_sync.py and the registry of training models ask); returns whether it did."""
        with self._lock:
            if self._weights == _Copies.DEVICE_NEWER and self.attached and not self._syncing:
                self._syncing = True
                try:
                    self.copy_weights_home()
                finally:
                    self._syncing = False
                return True
            return False

    def host_used(self) -> bool:
        """A module this model trains is used on the host: its weights, and those of the
        training models sharing modules or tensors with it, come home if newer
        (host_sync.py asks); returns whether any did."""
        copied = self.copy_weights_home_if_newer()
        return self._sharers_home() or copied

    def write_named_buffers(self, names: Sequence[str]) -> None:
        """copyNamedBuffersToDevice: only the named buffers go to the device."""
        buffers = dict(self._shallow.named_buffers())
        on_device = set(self.program.weight_names())
        unknown = [name for name in names if name not in buffers]
        if unknown:
            raise OptionError(
                f"updatableNamedBuffers names {unknown}, which the model does not have; its "
                f"buffers are {sorted(buffers)}.", option="updatableNamedBuffers")
        unused = [name for name in names if name not in on_device]
        if unused:
            raise OptionError(
                f"updatableNamedBuffers names {unused}, which the compiled program does not "
                "read (popsim keeps only the buffers the model uses on the device).",
                option="updatableNamedBuffers")
        self.program.write_variables({name: buffers[name] for name in names})

    def _sync_trainers_to_host(self) -> Dict[int, int]:
        """Copies weights home from training models of this model's modules;
        returns their versions."""
        for record in _registry.records(self._model):
            trainer = record.trainer
            if trainer is not None:
                trainer.copy_weights_home_if_newer()
        return _registry.versions(self._model)

    def _sharers_home(self) -> bool:
        """Copies home the newer weights of the training models this one shares modules or
        tensors with; returns whether any were."""
        copied = False
        for record in list(self._record.sharing if self._record is not None else ()):
            trainer = record.trainer
            if trainer is not None:
                copied = trainer.copy_weights_home_if_newer() or copied
        return copied

    def _sync_sharing_trainers_to_host(self) -> Dict[int, int]:
        """Copies weights home from the training models this one shares modules with;
        returns their versions."""
        assert self._record is not None, "a training model is recorded while it compiles"
        self._sharers_home()
        return {record.serial: record.version for record in self._record.sharing}

    def _catch_up_with_sharing_trainers(self) -> None:
        """Before a training call: weights that training models sharing modules with this
        one trained since go home, and then the host's weights to this device. When
        another model ran since, this device's own newer weights went home before it did
        (it ran this same catch-up), so the host holds them already; when only the set of
        sharing models changed, they go home first."""
        record = self._record
        assert record is not None, "a training model is recorded while it runs"
        if not record.sharing and not self._seen_training:
            return
        if {other.serial: other.version for other in record.sharing} != self._seen_training:
            self.copy_weights_home_if_newer()
            self._seen_training = self._sync_sharing_trainers_to_host()
            self.upload_weights()

    def _catch_up_with_training(self) -> None:
        """Uploads weights that training models of this model's modules trained since."""
        generation = _registry.generation
        if generation == self._seen_generation:  # no training model ran or came or went
            return
        if _registry.versions(self._model) != self._seen_training:
            self._seen_training = self._sync_trainers_to_host()
            self.upload_weights()
        self._seen_generation = generation

    # --- The device: attached or detached ---

    def detach(self) -> None:
        if not self.attached:
            raise InputError("The model is not attached to the device.")
        if self._training and not self.program.cost_only:
            self.copy_weights_home_if_newer()  # (as release() does)
            self.binding.copy_state_to_host(self.program)
            self._detached_state = self.program.read_variables(self.program.state_names())
        self.attached = False

    def attach(self) -> None:
        if self._options.connection_type == ConnectionType.Never:
            raise OptionError(
                "This model was compiled with connectionType(ConnectionType.Never) (which "
                "useOfflineIpuTarget sets): it compiles for an offline target and cannot run "
                "or attach. Its memoryReport() is available; to run it, wrap the model again "
                "with options that leave connectionType at Always or OnDemand.",
                option="connectionType")
        if self.attached:
            raise InputError("The model is already attached to the device.")
        self.upload_weights()
        if self._training and self._detached_state is not None:
            self.program.write_variables(self._detached_state)
            self._detached_state = None
        self.attached = True

    # --- The optimizer's state (optimizer_state.py's protocol) ---

    def optimizer_state_to_host(self) -> None:
        """Copies the device's optimizer state into the optimizer (its state_dict()
        calls this first)."""
        with self._lock:
            if (self._optimizer_copies == _Copies.DEVICE_NEWER and self.attached
                    and self._program is not None):
                self.binding.copy_state_to_host(self._program)
            if self._optimizer_copies == _Copies.DEVICE_NEWER:
                self._optimizer_copies = _Copies.IN_STEP

    def optimizer_state_loaded(self, ipu_state: Optional[Mapping[str, torch.Tensor]] = None,
                               ipu_param: Optional[Mapping[str, torch.Tensor]] = None) -> None:
        """optimizer.load_state_dict() ran: its state goes to the device next call, and
        then the state dict's "ipu_state", if it has one; its "ipu_param" changes the
        hyper-parameters its compound scalars give otherwise than the param_groups."""
        if ipu_param and self._program is not None and self._training:
            assert self.optimizer is not None, "a training model has an optimizer"
            binding = self.binding
            updates, scaling = self._state_names().hyperparameters(
                ipu_param, self.optimizer.param_groups, _binding.grad_scale(self._options),
                binding.loss_scaling())
            _poptorch_names.apply_hyperparameters(self.optimizer.param_groups, updates)
            if scaling is not None and not binding.constant_loss_scaling():
                setattr(self.optimizer, "loss_scaling", scaling)
        if ipu_state is not None:
            # The program's state names and shapes (the host's view: no device read).
            known = (self.binding.state_shapes(self._program)
                     if self._program is not None and self._training else None)
            if known is None:
                raise OptionError("optimizer.load_state_dict: an 'ipu_state' is the state of a "
                                  "compiled model's device; load it after the model compiles "
                                  "(or leave it out: 'state' holds the same).",
                                  option="optimizer.load_state_dict")
            loaded = self._state_names().device_state(ipu_state, self.binding.loss_scaling())
            for name, value in loaded.items():
                if name not in known or tuple(value.shape) != known[name]:
                    raise OptionError(
                        f"optimizer.load_state_dict: ipu_state['{name}'] is not a state of this "
                        f"program of that shape; its optimizer state is "
                        f"{sorted(known)[:6]}{'...' if len(known) > 6 else ''}.",
                        option="optimizer.load_state_dict")
            self._pending_ipu_state = loaded
        self._optimizer_copies = _Copies.HOST_NEWER

    def _state_names(self) -> _poptorch_names.StateNames:
        """PopTorch's names of the bound optimizer's state, made once per binding (each
        state_dict() of the optimizer asks)."""
        binding = self.binding
        if self._poptorch_names is None or self._poptorch_names[0] is not binding:
            self._poptorch_names = (binding,
                                    _poptorch_names.of_binding(binding, self._replica_groups))
        return self._poptorch_names[1]

    def device_optimizer_state(self, device_names: Optional[Set[str]] = None
                               ) -> Optional[DeviceOptimizerState]:
        """PopTorch's ipu_state and ipu_param: the device's optimizer state (all of it, or the
        states `device_names` names), and each parameter's hyper-parameters as PopART's
        compound scalars and the loss scaling, by PopTorch's names
        (training/poptorch_state_names.py); None before the model compiles."""
        if self._program is None or not self._training:
            return None
        binding = self.binding
        names = sorted(binding.state_shapes(self._program) if device_names is None
                       else device_names)
        state = self._program.read_variables(names) if self.attached else {}
        poptorch = self._state_names()
        scaling = binding.loss_scaling()
        return (poptorch.ipu_state(state, scaling),
                poptorch.ipu_param(binding.optimizer.param_groups,
                                   _binding.grad_scale(self._options), scaling))

    def _write_optimizer_state(self) -> None:
        assert self.optimizer is not None, "a training model has an optimizer"
        binding = _binding.OptimizerBinding(self.optimizer, self.names_by_tensor())
        self.binding.check_compatible(binding)
        self._binding = binding
        self.program.write_variables(binding.optimizer_state(self.program))
        if self._pending_ipu_state:  # load_state_dict's "ipu_state", after the state it mirrors
            self.program.write_variables(
                {name: value.detach().float() if value.is_floating_point() else value
                 for name, value in self._pending_ipu_state.items()})
            self._pending_ipu_state = None
        binding.write_hyperparameters(self.program, _binding.grad_scale(self._options))
        self._optimizer_copies = _Copies.IN_STEP

    def set_optimizer(self, optimizer: torch.optim.Optimizer,
                      reported: "set[str]") -> None:
        """setOptimizer: new hyper-parameters now (and a new optimizer object's state
        next call), the program unchanged."""
        _registry.check_optimizer_unshared(optimizer, self)
        if self._program is not None:
            binding = _binding.OptimizerBinding(optimizer, self.names_by_tensor())
            self.binding.check_compatible(binding)
            _binding.check_group_attributes(optimizer, self._options, reported)
            if optimizer is not self.optimizer:
                self.optimizer_state_to_host()
                assert self.optimizer is not None, "a training model has an optimizer"
                _optimizer_state.uninstall(self.optimizer)
                _optimizer_state.install(optimizer, self)
                # The new optimizer's own state, if it has any, goes to the device.
                self._optimizer_copies = (_Copies.HOST_NEWER if len(optimizer.state) > 0
                                          else _Copies.IN_STEP)
            self._binding = binding
            binding.write_hyperparameters(self._program, _binding.grad_scale(self._options))
            if self._detached_state is not None:
                # attach() restores the detach's snapshot: it must restore these values.
                written = {_C.LOSS_SCALING_NAME} | {
                    _C.group_state_name(group, "hyper")
                    for group in range(len(optimizer.param_groups))}
                self._detached_state.update(self._program.read_variables(
                    [name for name in self._detached_state if name in written]))
        else:
            _binding.optimizer_kind(optimizer)
        self.optimizer = optimizer
