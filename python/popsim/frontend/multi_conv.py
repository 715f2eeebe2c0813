"""poptorch.MultiConv: the convolutions run inside its `with` block form one
multi-convolution on an IPU, with options per convolution.

popsim computes each convolution as usual (the numbers do not depend on the
grouping) and one after another on the simulated IPU, so the plan, reserved
tiles and cycle back-off options are recorded. The available memory
proportions do change the simulation: each convolution's temporaries are
bounded by its own (popsim.set_available_memory on its output); and so do the
partials types: a convolution of float16 operands sums in float16 partials or
float32 ones as its own says (popsim::partials_type on its output)."""

import threading
from types import TracebackType
from typing import Any, Callable, Dict, List, Literal, Optional, Sequence, Type, TypeVar, Union

import torch

from popsim.frontend.tensor_ops import set_available_memory, set_partials_type
from popsim.api.enums import MultiConvPartialsType, MultiConvPlanType
from popsim.api.errors import OptionError, PlanTypeError

_CONVOLUTIONS = ("conv1d", "conv2d", "conv3d")
_ACTIVE = threading.local()
_T = TypeVar("_T")


def _per_convolution(name: str, value: Union[_T, Sequence[_T]], valid: Callable[[_T], bool],
                     expected: str, lead: str = "") -> List[_T]:
    """`value` as a list (one value, or one per convolution), each checked by `valid`; the
    refusal starts with `lead` (PopTorch's words, where a test of its matches them)."""
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not values or not all(valid(v) for v in values):
        raise OptionError(f"{lead}MultiConv.{name} expects {expected} or a non-empty list of "
                          f"them, got {value!r}.", option=f"MultiConv.{name}")
    return values


def _is_half_partials(value: object) -> Optional[bool]:
    """Whether a partials type is float16 (True) or float32 (False); None if it is neither."""
    if value is MultiConvPartialsType.Half or value is torch.half:
        return True
    if value is MultiConvPartialsType.Float or value is torch.float:
        return False
    return None


def _is_number(value: object) -> bool:
    """A float, or an int standing for one (1 for 1.0), as Python's float
    annotations accept; not a bool."""
    return isinstance(value, (float, int)) and not isinstance(value, bool)


class MultiConv:
    """Groups the convolutions of its ``with`` block into one multi-convolution, as PopTorch's.

    ::

        with popsim.MultiConv().availableMemoryProportions((0.3, 0.6)):
            y = self.conv_a(x)
            z = self.conv_b(x)

    The block counts the calls of ``torch.nn.functional.conv1d``, ``conv2d`` and ``conv3d``
    made in its thread (convolution modules included). A single value applies to every
    convolution; ``availableMemoryProportions``, ``partialsTypes`` and ``enableConvDithering``
    also take a list with one value per convolution, in the order they run. The setters
    return the object, so calls chain. popsim computes each convolution as usual and runs
    them one after another on the simulated IPU: the available memory proportions bound each
    convolution's temporaries, the partials types set how each float16 convolution sums (as
    ``Precision.setPartialsType`` does for the whole model), and the other options are checked
    and recorded.

    Blocks cannot be nested, and a block must run at least one convolution; a list whose
    length is neither 1 nor the number of convolutions is an error when the block ends.
    These errors raise :class:`popsim.OptionError`.
    """

    def __init__(self) -> None:
        self._proportions: Optional[List[float]] = None
        self._half_partials: Optional[List[bool]] = None  # per convolution, from partialsTypes
        self._plan_type = MultiConvPlanType.Parallel
        self._reserved_tiles: Optional[int] = None
        self._cycle_back_off: Optional[float] = None
        self._dithering: Optional[List[bool]] = None
        self._saved: Dict[str, Callable] = {}
        self._count = 0
        self._thread: Optional[int] = None

    def availableMemoryProportions(self, value: Union[float, Sequence[float]]) -> "MultiConv":
        """Sets each convolution's share of its IPU's memory for temporaries.

        Each convolution's output is marked as :func:`popsim.set_available_memory` marks it.
        Unset, the convolutions use the model's proportion
        (:meth:`popsim.Options.setAvailableMemoryProportion`).

        Args:
            value: A proportion in (0, 1] for every convolution, or a list (or tuple) of them,
                one per convolution.

        Returns:
            This MultiConv (``self``), so calls chain.

        Raises:
            OptionError: if ``value`` is not a number in (0, 1] or a non-empty list of them.
        """
        self._proportions = [float(v) for v in _per_convolution(
            "availableMemoryProportions", value,
            lambda v: _is_number(v) and 0.0 < v <= 1.0, "a float in (0, 1]")]
        return self

    def partialsTypes(self, value: Union[torch.dtype, MultiConvPartialsType,
                                         Sequence[Union[torch.dtype, MultiConvPartialsType]]]
                      ) -> "MultiConv":
        """Sets the type each convolution sums its products in.

        ``torch.half`` sums a convolution of float16 operands, and its gradients, in float16
        partials, as :meth:`Precision.setPartialsType` does for every matmul and convolution of
        the model; ``torch.float`` sums it in float32 whatever the model's setting. Convolutions
        of float32 operands always sum in float32.

        Args:
            value: ``torch.float`` or ``torch.half`` (or PopTorch's older
                ``MultiConvPartialsType.Float`` and ``.Half``) for every convolution, or a list
                (or tuple) of them, one per convolution.

        Returns:
            This MultiConv (``self``), so calls chain.

        Raises:
            OptionError: if ``value`` is none of these, or not a non-empty list of them
                (starting with PopTorch's "Invalid partials types").
        """
        values = _per_convolution(
            "partialsTypes", value, lambda v: _is_half_partials(v) is not None,
            "torch.float or torch.half",
            lead="Invalid partials types. Expecting torch.float or torch.half: ")
        self._half_partials = [bool(_is_half_partials(v)) for v in values]
        return self

    def planType(self, value: Optional[MultiConvPlanType]) -> "MultiConv":
        """Sets whether the convolutions are planned together or one by one (recorded).

        The simulated IPU runs them one after another either way.

        Args:
            value: ``MultiConvPlanType.Parallel`` (the default) or ``MultiConvPlanType.Serial``;
                None, as in PopTorch, goes back to the default.

        Returns:
            This MultiConv (``self``), so calls chain.

        Raises:
            PlanTypeError: if ``value`` is neither a :class:`popsim.MultiConvPlanType` nor
                None (an ``OptionError`` and an ``AssertionError``).
        """
        if value is not None and not isinstance(value, MultiConvPlanType):
            raise PlanTypeError(f"Invalid plan type: MultiConv.planType expects a "
                                f"popsim.MultiConvPlanType or None, got {value!r}.",
                                option="MultiConv.planType")
        self._plan_type = MultiConvPlanType.Parallel if value is None else value
        return self

    def perConvReservedTiles(self, value: int) -> "MultiConv":
        """Sets the tiles reserved for each convolution (recorded).

        Args:
            value: The number of tiles, 0 or more.

        Returns:
            This MultiConv (``self``), so calls chain.

        Raises:
            OptionError: if ``value`` is not an int of at least 0.
        """
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise OptionError(f"MultiConv.perConvReservedTiles expects an int >= 0, got "
                              f"{value!r}.", option="MultiConv.perConvReservedTiles")
        self._reserved_tiles = value
        return self

    def cycleBackOff(self, value: float) -> "MultiConv":
        """Sets the planner's cycle back-off (recorded).

        Args:
            value: A number in [0, 1].

        Returns:
            This MultiConv (``self``), so calls chain.

        Raises:
            OptionError: if ``value`` is not a number in [0, 1].
        """
        if not _is_number(value) or not 0.0 <= value <= 1.0:
            raise OptionError(f"MultiConv.cycleBackOff expects a float in [0, 1], got "
                              f"{value!r}.", option="MultiConv.cycleBackOff")
        self._cycle_back_off = float(value)
        return self

    def enableConvDithering(self, value: Union[bool, Sequence[bool]]) -> "MultiConv":
        """Sets whether each convolution uses dithering (recorded).

        Args:
            value: One bool for every convolution, or a list (or tuple) of them, one per
                convolution.

        Returns:
            This MultiConv (``self``), so calls chain.

        Raises:
            OptionError: if ``value`` is not a bool or a non-empty list of bools.
        """
        self._dithering = _per_convolution("enableConvDithering", value,
                                           lambda v: isinstance(v, bool), "a bool")
        return self

    def __enter__(self) -> "MultiConv":
        if getattr(_ACTIVE, "block", None) is not None:
            raise OptionError("popsim.MultiConv blocks cannot be nested: close the first one "
                              "before opening another.", option="MultiConv")
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
                                  "the `with` block.", option="MultiConv")
            for name, values in (("availableMemoryProportions", self._proportions),
                                 ("partialsTypes", self._half_partials),
                                 ("enableConvDithering", self._dithering)):
                if values is not None and len(values) not in (1, self._count):
                    raise OptionError(
                        f"popsim.MultiConv: {len(values)} {name} for {self._count} "
                        f"convolutions; give one value for all or one per convolution.",
                        option=f"MultiConv.{name}")
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
            if self._half_partials is not None:
                half = self._half_partials[min(index, len(self._half_partials) - 1)]
                output = set_partials_type(output, half)
            return output

        return run
