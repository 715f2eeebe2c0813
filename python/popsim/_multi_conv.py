"""poptorch.MultiConv: the convolutions run inside its `with` block form one
multi-convolution on an IPU, with options per convolution.

popsim computes each convolution as usual (the numbers do not depend on the
grouping) and one after another on the simulated IPU, so the plan, reserved
tiles and cycle back-off options are recorded. The available memory
proportions do change the simulation: each convolution's temporaries are
bounded by its own (popsim.set_available_memory on its output)."""

import threading
from types import TracebackType
from typing import Any, Callable, Dict, List, Literal, Optional, Sequence, Type, TypeVar, Union

import torch

from popsim._tensor_ops import set_available_memory
from popsim.enums import MultiConvPartialsType, MultiConvPlanType
from popsim.errors import OptionError

_CONVOLUTIONS = ("conv1d", "conv2d", "conv3d")
_ACTIVE = threading.local()
_T = TypeVar("_T")


def _per_convolution(name: str, value: Union[_T, Sequence[_T]], valid: Callable[[_T], bool],
                     expected: str) -> List[_T]:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not values or not all(valid(v) for v in values):
        raise OptionError(f"MultiConv.{name} expects {expected} or a non-empty list of them, "
                          f"got {value!r}.")
    return values


def _is_number(value: object) -> bool:
    """A float, or an int standing for one (1 for 1.0), as Python's float
    annotations accept; not a bool."""
    return isinstance(value, (float, int)) and not isinstance(value, bool)


class MultiConv:
    """Groups the convolutions of its `with` block, as PopTorch's MultiConv:

        with popsim.MultiConv().availableMemoryProportions((0.3, 0.6)):
            y = self.conv_a(x)
            z = self.conv_b(x)

    A single value applies to every convolution; a list has one value per
    convolution, in the order they run (a different count is an error)."""

    def __init__(self) -> None:
        self._proportions: Optional[List[float]] = None
        self._partials_types: Optional[List[Union[torch.dtype, MultiConvPartialsType]]] = None
        self._plan_type = MultiConvPlanType.Parallel
        self._reserved_tiles: Optional[int] = None
        self._cycle_back_off: Optional[float] = None
        self._dithering: Optional[List[bool]] = None
        self._saved: Dict[str, Callable] = {}
        self._count = 0
        self._thread: Optional[int] = None

    def availableMemoryProportions(self, value: Union[float, Sequence[float]]) -> "MultiConv":
        """Each convolution's share of its IPU's memory for temporaries, in (0, 1]."""
        self._proportions = [float(v) for v in _per_convolution(
            "availableMemoryProportions", value,
            lambda v: _is_number(v) and 0.0 < v <= 1.0, "a float in (0, 1]")]
        return self

    def partialsTypes(self, value: Union[torch.dtype, MultiConvPartialsType,
                                         Sequence[Union[torch.dtype, MultiConvPartialsType]]]
                      ) -> "MultiConv":
        """torch.float (or MultiConvPartialsType.Float); half partials are
        refused (popsim's convolutions accumulate in float32)."""
        self._partials_types = _per_convolution(
            "partialsTypes", value,
            lambda v: v is MultiConvPartialsType.Float or v in (torch.float, torch.float32),
            "torch.float (popsim's convolutions accumulate in float32)")
        return self

    def planType(self, value: MultiConvPlanType) -> "MultiConv":
        """MultiConvPlanType.Parallel or Serial (recorded)."""
        if not isinstance(value, MultiConvPlanType):
            raise OptionError(f"MultiConv.planType expects a popsim.MultiConvPlanType, got "
                              f"{value!r}.")
        self._plan_type = value
        return self

    def perConvReservedTiles(self, value: int) -> "MultiConv":
        """Tiles reserved per convolution (recorded)."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise OptionError(f"MultiConv.perConvReservedTiles expects an int >= 0, got "
                              f"{value!r}.")
        self._reserved_tiles = value
        return self

    def cycleBackOff(self, value: float) -> "MultiConv":
        """The planner's cycle back-off, in [0, 1] (recorded)."""
        if not _is_number(value) or not 0.0 <= value <= 1.0:
            raise OptionError(f"MultiConv.cycleBackOff expects a float in [0, 1], got "
                              f"{value!r}.")
        self._cycle_back_off = float(value)
        return self

    def enableConvDithering(self, value: Union[bool, Sequence[bool]]) -> "MultiConv":
        """Convolution dithering, one bool or one per convolution (recorded)."""
        self._dithering = _per_convolution("enableConvDithering", value,
                                           lambda v: isinstance(v, bool), "a bool")
        return self

    def __enter__(self) -> "MultiConv":
        if getattr(_ACTIVE, "block", None) is not None:
            raise OptionError("popsim.MultiConv blocks cannot be nested: close the first one "
                              "before opening another.")
        _ACTIVE.block = self
        self._count = 0
        self._thread = threading.get_ident()
        functional = torch.nn.functional
        for name in _CONVOLUTIONS:
            self._saved[name] = getattr(functional, name)
            setattr(functional, name, self._counted(self._saved[name]))
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> Literal[False]:
        for name, function in self._saved.items():
            setattr(torch.nn.functional, name, function)
        self._saved = {}
        _ACTIVE.block = None
        if exc_type is None:
            if self._count == 0:
                raise OptionError("popsim.MultiConv: its block ran no convolution (conv1d, "
                                  "conv2d or conv3d); put the convolutions to combine inside "
                                  "the `with` block.")
            for name, values in (("availableMemoryProportions", self._proportions),
                                 ("partialsTypes", self._partials_types),
                                 ("enableConvDithering", self._dithering)):
                if values is not None and len(values) not in (1, self._count):
                    raise OptionError(
                        f"popsim.MultiConv: {len(values)} {name} for {self._count} "
                        f"convolutions; give one value for all or one per convolution.")
        return False

    def _counted(self, convolution: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        def run(*args: Any, **kwargs: Any) -> torch.Tensor:
            # The functions are patched process-wide; other threads' convolutions pass by.
            if threading.get_ident() != self._thread:
                return convolution(*args, **kwargs)
            index = self._count
            self._count += 1
            output = convolution(*args, **kwargs)
            if self._proportions is not None:
                proportion = self._proportions[min(index, len(self._proportions) - 1)]
                output = set_available_memory(output, proportion)
            return output

        return run
