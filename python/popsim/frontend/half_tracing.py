"""Tracing float16 models on a CPU whose PyTorch lacks float16 kernels.

Tracing runs the model once. PyTorch 1.13's CPU backend has no float16
kernels for most ops (matmul, convolution, softmax, ReLU...), so a model in
float16 would fail there, long before popsim sees it. While tracing, this
dispatch mode runs every op that has float16 operands on float32 copies of
them and rounds its float results to the dtypes PyTorch would give them
(float16 where PyTorch has no kernel to ask, or as Precision.halfFloatCasting
says for mixed operands). The JIT tracer sits above the mode in the
dispatcher: it records each op as the model called it, with float16 types,
and does not see what the mode does underneath.

The same mode is the eager reference of popsim's float16 tests: each op
computed in float32 and its result rounded to float16, as popsim and an IPU
round every float16 op's result.
"""

import contextlib
from typing import (Any, Callable, Collection, Dict, Iterator, List, Optional, Sequence, Set,
                    Tuple, Union, cast)

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map


def _is_half(value: object) -> bool:
    return isinstance(value, torch.Tensor) and value.dtype == torch.float16


def _upcast(value: Any) -> Any:
    """float16 tensors as float32 copies, and a float16 dtype argument as float32."""
    if value is torch.float16:
        return torch.float32
    return value.float() if _is_half(value) else value


class UncomputedValueRead(Exception):
    """forward() read a Python value (bool, int, float, item) from a tensor that a
    cost-only trace did not compute (a placeholder): the trace would follow the
    placeholder's zeros, not the call's data. The trace is done again, computing."""

    def __init__(self, where: str) -> None:
        super().__init__(f"forward() at {where} reads a value a cost-only trace does not "
                         "compute")
        self.where = where


# The dispatch modes running, innermost last (reads_uncomputed asks the innermost),
# and whether reads_uncomputed is answering already (see there).
_RUNNING: List["HalfOnCpu"] = []
_ASKING: List[bool] = []


def reads_uncomputed(tensor: torch.Tensor) -> bool:
    """Whether `tensor` stands for a value the running cost-only trace did not compute."""
    if not _RUNNING or not _RUNNING[-1]._shapes_only or _ASKING:
        return False
    # (While tracing, numel() is traced too, and comparing it reads a Python bool,
    # which asks this again: the nested question is not about the model's data.)
    _ASKING.append(True)
    try:
        return _RUNNING[-1]._is_placeholder(tensor)
    finally:
        _ASKING.pop()


class HalfOnCpu(TorchDispatchMode):
    """Runs every op with float16 operands in float32 and rounds its float
    results to float16 (see the module doc). Views run as they are (they
    compute nothing and must share their input's storage)."""

    def __init__(self, downcast_mixed: bool, shapes_only: bool = False,
                 weights: Collection[torch.Tensor] = ()) -> None:
        super().__init__()
        # FloatDowncastToHalf: an op mixing float16 and float32 operands gives float16.
        self._downcast_mixed = downcast_mixed
        # The model's parameters and buffers, by storage: a layer (_LAYERS) whose float32
        # operands are all of them, fed float16 activations, computes in float16, as
        # PopTorch casts the parameters (popsim's importer does the same).
        self._weight_storages = {_storage_address(w) for w in weights if w.is_floating_point()}
        self._weight_storages.discard(0)  # empty tensors have no storage to tell apart
        # A cost-only compilation: ops with float16 operands give zeros of their
        # result's shape and dtype instead of computing (matmuls and convolutions
        # whatever their operands), and in-place ops leave their targets. So do
        # ops with a placeholder operand (a result standing for a value not
        # computed): what follows a skipped product is not computed either.
        self._shapes_only = shapes_only
        # Per dtype, the zero storage that a cost-only trace's placeholders view
        # (_zeros); the storages they outgrew stay alive while the trace runs,
        # so that no other tensor takes their address, by which
        # _is_placeholder tells placeholders.
        self._shared_zeros: Dict[torch.dtype, torch.Tensor] = {}
        self._outgrown: List[torch.Tensor] = []
        self._placeholder_storages: Set[int] = set()

    def __enter__(self) -> "HalfOnCpu":
        _RUNNING.append(self)
        return cast("HalfOnCpu", super().__enter__())

    def __exit__(self, *exc: Any) -> None:
        _RUNNING.remove(self)
        super().__exit__(*exc)

    def _zeros(self, like: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """Zeros standing for a result in a cost-only trace (a placeholder), with the
        shape and strides of `like` (the op's meta result, so that code reading strides
        traces as a computing run does). Each is a view of one zero storage per dtype,
        grown as needed, instead of a tensor filled anew (a ResNet-50 activation at
        micro-batch 32 is 200 MB, vit_h_14's attention scores at 518x518 240 MB each):
        nothing writes a placeholder during the trace, since the ops that would write
        one leave it as it is."""
        span = 1 + sum((size - 1) * stride for size, stride in zip(like.shape, like.stride())) \
            if like.numel() > 0 else 0
        zeros = self._shared_zeros.get(dtype)
        if zeros is None or zeros.numel() < span:
            if zeros is not None:
                self._outgrown.append(zeros)
            zeros = torch.zeros(max(span, 2 * (0 if zeros is None else zeros.numel()), 1),
                                dtype=dtype)
            self._shared_zeros[dtype] = zeros
            self._placeholder_storages.add(_storage_address(zeros))
        return zeros.as_strided(like.shape, like.stride())

    def _is_placeholder(self, value: Any) -> bool:
        # (sparse tensors have no storage to ask; placeholders are all strided)
        return (isinstance(value, torch.Tensor) and value.layout == torch.strided
                and value.numel() > 0 and _storage_address(value) in self._placeholder_storages)

    def __torch_dispatch__(self, func: torch._ops.OpOverload, types: Collection[type],
                           args: Sequence[Any] = (), kwargs: Optional[Dict[str, Any]] = None
                           ) -> Any:
        try:
            return self._dispatch(func, args, kwargs or {})
        except RuntimeError as error:
            tensors = _numbers_as_tensors(func, args)
            if tensors is args or "Expected a value of type 'Tensor'" not in str(error):
                raise
            return self._dispatch(func, tensors, kwargs or {})

    def _dispatch(self, func: torch._ops.OpOverload, args: Sequence[Any],
                  kwargs: Dict[str, Any]) -> Any:
        flat, _ = tree_flatten((args, kwargs))
        tensors = [t for t in flat if isinstance(t, torch.Tensor)]
        if self._shapes_only and func in _PRODUCTS:
            return self._placeholder(func, args, kwargs, tensors)
        asks_half = kwargs.get("dtype") == torch.float16
        if (self._shapes_only and not any(_is_half(t) for t in tensors) and not asks_half
                and any(self._is_placeholder(t) for t in tensors)):
            # float32 (or integer) work on placeholders: in-place ops leave their
            # targets, others give placeholders (views run as they are)
            written = _written_arguments(func, args, kwargs)
            if written:
                if any(self._is_placeholder(t) for t in written):
                    return written[0] if len(written) == 1 else tuple(written)
            elif not _returns_view(func):
                shaped = _meta_result(func, args, kwargs)
                if shaped is not None:
                    zeros = [self._zeros(t, t.dtype) for t in _as_list(shaped)]
                    return tuple(zeros) if isinstance(shaped, (tuple, list)) else zeros[0]
        if (not any(_is_half(t) for t in tensors) and not asks_half) or _returns_view(func):
            return func(*args, **kwargs)
        written = _written_arguments(func, args, kwargs)
        if written and self._shapes_only:
            # A cost-only trace records the op; its targets' values matter to nothing it keeps.
            return written[0] if len(written) == 1 else tuple(written)
        if written:  # an in-place op or an out= variant: compute, then write into its targets
            result = func(*tree_map(_upcast_copy, args), **tree_map(_upcast_copy, kwargs))
            for target, value in zip(written, _as_list(result)):
                with torch.no_grad():
                    target.copy_(value)
            return written[0] if len(written) == 1 else tuple(written)
        dtypes = _small_probe(func, args, kwargs, flat) if self._shapes_only else _UNKNOWN
        if dtypes is _UNKNOWN:
            try:  # PyTorch's own result dtypes, where it has a float16 kernel
                dtypes = [t.dtype if isinstance(t, torch.Tensor) else None
                          for t in _as_list(func(*args, **kwargs))]
            except RuntimeError:
                dtypes = None
        args, kwargs = _half_defaults(func, args, kwargs)
        shaped = _meta_result(func, args, kwargs) if self._shapes_only else None
        result = (shaped if shaped is not None
                  else func(*tree_map(_upcast, args), **tree_map(_upcast, kwargs)))
        if dtypes is not None and len(dtypes) != len(_as_list(result)):
            # An op giving a list of tensors (split, unbind...) gives as many as the
            # operands' shapes make, which the small probe's one-element operands
            # change (nn.GRU splits its gates in 3): the tensors share one dtype.
            dtypes = [dtypes[0] if dtypes else None] * len(_as_list(result))
        if dtypes is None:
            floats = [t for t in tensors if t.is_floating_point()]
            half = (all(_is_half(t) for t in floats) or self._downcast_mixed or asks_half
                    or self._casts_parameters(func, floats))
            dtypes = [torch.float16 if half else None] * len(_as_list(result))
        if shaped is not None:
            zeros = [self._zeros(t, dtype if t.is_floating_point() and dtype is not None
                                 and dtype.is_floating_point else t.dtype)
                     for t, dtype in zip(_as_list(shaped), dtypes)]
            return tuple(zeros) if isinstance(shaped, (tuple, list)) else zeros[0]
        rounded = [t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point()
                   and dtype is not None and dtype.is_floating_point else t
                   for t, dtype in zip(_as_list(result), dtypes)]
        return tuple(rounded) if isinstance(result, (tuple, list)) else rounded[0]


    def _casts_parameters(self, func: torch._ops.OpOverload, floats: List[torch.Tensor]
                          ) -> bool:
        """Whether `func` is a layer fed float16 activations whose float32 operands are
        all the model's parameters (or views of them)."""
        return (func in _LAYERS and any(_is_half(t) for t in floats)
                and all(_storage_address(t) in self._weight_storages
                        for t in floats if not _is_half(t)))

    def _placeholder(self, func: torch._ops.OpOverload, args: Sequence[Any],
                     kwargs: Dict[str, Any], tensors: List[torch.Tensor]) -> torch.Tensor:
        """Zeros with the shape of `func`'s result (from its meta kernel) and the
        dtype a computing trace gives it: PyTorch 1.13's CPU has no float16
        matmul or convolution, so with float16 operands it is float16 when
        they all are or FloatDowncastToHalf says, else float32."""
        if func is torch.ops.aten._convolution.default:
            func, args = torch.ops.aten.convolution.default, args[:9]
        meta = func(*tree_map(_to_meta, args), **tree_map(_to_meta, kwargs))
        dtype = meta.dtype
        floats = [t for t in tensors if t.is_floating_point()]
        if any(_is_half(t) for t in floats):
            half = (all(_is_half(t) for t in floats) or self._downcast_mixed
                    or self._casts_parameters(func, floats))
            dtype = torch.float16 if half else torch.float32
        return self._zeros(meta, dtype)


# _small_probe's answer when the small operands tell nothing (the op is then probed on
# its own operands).
_UNKNOWN: Any = object()
# (op, operand dtypes and ranks, other arguments) -> _small_probe's answer.
_PROBED: Dict[Any, Any] = {}


def _small_probe(func: torch._ops.OpOverload, args: Sequence[Any], kwargs: Dict[str, Any],
                 leaves: Sequence[Any]) -> Any:
    """What probing `func` on its operands would tell (its result dtypes where CPU
    PyTorch has a float16 kernel, None where it has not), from operands of one
    element each of the same dtypes and ranks: a cost-only trace would otherwise
    compute float16 ops on the CPU's slow float16 kernels just to read their
    result dtypes. _UNKNOWN when the small operands fail otherwise (shapes that
    must agree with other arguments): the caller then probes the op itself."""
    def small(value: Any) -> Any:
        return (torch.zeros([1] * value.dim(), dtype=value.dtype)
                if isinstance(value, torch.Tensor) else value)

    key = (func, tuple((leaf.dtype, leaf.dim()) if isinstance(leaf, torch.Tensor)
                       else repr(leaf) for leaf in leaves))
    if key not in _PROBED:
        try:
            result = func(*tree_map(small, args), **tree_map(small, kwargs))
            _PROBED[key] = [t.dtype if isinstance(t, torch.Tensor) else None
                            for t in _as_list(result)]
        except RuntimeError as error:
            _PROBED[key] = None if "not implemented for 'Half'" in str(error) else _UNKNOWN
        except Exception:  # noqa: BLE001 - any other failure: probe the op itself
            _PROBED[key] = _UNKNOWN
    return _PROBED[key]


def _meta_result(func: torch._ops.OpOverload, args: Sequence[Any], kwargs: Dict[str, Any]
                 ) -> Any:
    """`func`'s result on meta twins of its operands (float16 as float32), for
    a cost-only trace, which needs its results' shapes, not their values; None
    where that is not a tensor or tensors, or the op has no meta kernel (it is
    then computed: ops whose results' shapes depend on values, such as nonzero,
    and those that give Python numbers, such as item)."""
    try:
        meta = func(*tree_map(_to_meta, args), **tree_map(_to_meta, kwargs))
    except (NotImplementedError, RuntimeError, TypeError, ValueError):
        return None
    outputs = _as_list(meta)
    if not outputs or not all(isinstance(t, torch.Tensor) and t.is_meta for t in outputs):
        return None
    return meta


def _numbers_as_tensors(func: torch._ops.OpOverload, args: Sequence[Any]) -> Sequence[Any]:
    """`args` with a Python number where `func` takes a tensor made a 0-d tensor
    (`args` itself when there is none). PyTorch 1.13 hands a dispatch mode such
    numbers: an op's number overload that wraps its number into a tensor and calls
    the tensor overload (torch.special's orthogonal polynomials with a degree n
    given as a number) reaches __torch_dispatch__ as the tensor overload with the
    number unwrapped, which that overload refuses unless it is one of the
    arithmetic ops that take numbers (whose wrapped numbers must stay numbers:
    they do not promote a 0-d int32 tensor, where a 0-d int64 tensor would)."""
    schema = func._schema.arguments
    if not any(isinstance(value, (bool, int, float)) and index < len(schema)
               and isinstance(schema[index].type, torch.TensorType)
               for index, value in enumerate(args)):
        return args
    return tuple(torch.tensor(value) if isinstance(value, (bool, int, float)) and index < len(schema)
                 and isinstance(schema[index].type, torch.TensorType) else value
                 for index, value in enumerate(args))


def _storage_address(tensor: torch.Tensor) -> int:
    """Where `tensor`'s storage starts: the same for a tensor and its views."""
    return int(tensor.storage().data_ptr())


def _to_meta(value: Any) -> Any:
    """A tensor's meta twin (float16 as float32, as the computing trace runs it)."""
    if not isinstance(value, torch.Tensor):
        return value
    return value.to("meta", torch.float32 if _is_half(value) else value.dtype)


# What a cost-only trace does not compute: the products, which are nearly all
# of a model's host time (PyTorch's generic CPU BLAS runs a transformer
# layer's matmuls for seconds per micro-batch). Their values matter to
# nothing a cost-only compilation keeps; the ops around them still run.
_PRODUCTS = frozenset({torch.ops.aten.addmm.default, torch.ops.aten.mm.default,
                       torch.ops.aten.bmm.default, torch.ops.aten.baddbmm.default,
                       torch.ops.aten.convolution.default, torch.ops.aten._convolution.default})

_HALF_MAX = 65504.0  # the largest finite float16


def _half_defaults(func: torch._ops.OpOverload, args: Sequence[Any], kwargs: Dict[str, Any]
                   ) -> Tuple[Sequence[Any], Dict[str, Any]]:
    """Arguments whose defaults depend on the dtype, made explicit for float16 so
    that float32 arithmetic gives float16's answer: nan_to_num's bounds."""
    if func.name().split("::")[-1].split(".")[0] not in ("nan_to_num", "nan_to_num_"):
        return args, kwargs
    args = list(args) + [None] * (4 - len(args))
    bounds = [kwargs.pop(name, value) for name, value in zip(("nan", "posinf", "neginf"),
                                                               args[1:4])]
    nan, posinf, neginf = bounds
    return ([args[0], nan, _HALF_MAX if posinf is None else posinf,
             -_HALF_MAX if neginf is None else neginf], kwargs)


def _upcast_copy(value: Any) -> Any:
    """_upcast, with float32 tensors copied too: an in-place op writes its
    targets only through target.copy_(), never through its operands."""
    upcast = _upcast(value)
    return upcast.clone() if upcast is value and isinstance(value, torch.Tensor) else upcast


# The tag of ops that change only their target's shape or strides (PyTorch
# 1.13's type stubs do not declare torch.Tag).
_INPLACE_VIEW = torch.Tag.inplace_view  # type: ignore[attr-defined]


def _returns_view(func: torch._ops.OpOverload) -> bool:
    """Whether the op returns a view of an operand: a view op, or an in-place one
    that changes only its target's shape or strides (transpose_, squeeze_, ...,
    which nn.GRU and nn.LSTM call), whose target's values stay as they are."""
    return (_INPLACE_VIEW in func.tags
            or any(r.alias_info is not None and not r.alias_info.is_write
                   for r in func._schema.returns))


def _as_list(result: Any) -> List[Any]:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _written_arguments(func: torch._ops.OpOverload, args: Sequence[Any], kwargs: Dict[str, Any]
                       ) -> List[torch.Tensor]:
    """The tensors an op writes (its `Tensor(a!)` arguments), in schema order."""
    written = []
    for position, argument in enumerate(func._schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = args[position] if position < len(args) else kwargs.get(argument.name)
        if isinstance(value, torch.Tensor):
            written.append(value)
    return written


# The tracer records torch's convolutions as aten::_convolution, which
# aten::convolution calls from underneath the dispatch mode, where nothing is
# recorded. While the mode is on, F.conv*d and F.conv_transpose*d call
# aten::_convolution directly: the tracer records it, and the mode runs the
# backend kernel it reaches in float32.
def _convolution(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                 stride: Union[int, Sequence[int]], padding: Union[str, int, Sequence[int]],
                 dilation: Union[int, Sequence[int]], transposed: bool,
                 output_padding: Union[int, Sequence[int]], groups: int, dims: int
                 ) -> torch.Tensor:
    def expand(value: Union[int, Sequence[int]]) -> List[int]:
        return [value] * dims if isinstance(value, int) else list(value)

    if input.dim() == dims + 1:  # unbatched, as PyTorch's convolutions accept
        return _convolution(input.unsqueeze(0), weight, bias, stride, padding, dilation,
                            transposed, output_padding, groups, dims).squeeze(0)
    stride, dilation, output_padding = expand(stride), expand(dilation), expand(output_padding)
    if isinstance(padding, str):
        if padding == "valid":
            padding = [0] * dims
        else:  # "same": PyTorch pads the input when the two sides differ
            totals = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
            lefts = [t // 2 for t in totals]
            if any(t % 2 for t in totals):
                pads = []
                for total, left in reversed(list(zip(totals, lefts))):
                    pads += [left, total - left]
                input = torch.nn.functional.pad(input, pads)
                lefts = [0] * dims
            padding = lefts
    return torch.ops.aten._convolution(input, weight, bias, stride, expand(padding), dilation,
                                       transposed, output_padding, groups, False, False, True,
                                       True)


# The layers, as the dispatcher sees them, that take the model's parameters as
# operands: Linear (addmm or mm on the weight's transpose), convolutions,
# GroupNorm and PReLU.
_LAYERS = frozenset({torch.ops.aten.addmm.default, torch.ops.aten.mm.default,
                     torch.ops.aten.convolution.default, torch.ops.aten._convolution.default,
                     torch.ops.aten.native_group_norm.default,
                     torch.ops.aten.prelu.default})


def _conv(dims: int) -> Callable[..., torch.Tensor]:
    def conv(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
             stride: Union[int, Sequence[int]] = 1, padding: Union[str, int, Sequence[int]] = 0,
             dilation: Union[int, Sequence[int]] = 1, groups: int = 1) -> torch.Tensor:
        return _convolution(input, weight, bias, stride, padding, dilation, False, 0, groups,
                            dims)
    return conv


def _conv_transpose(dims: int) -> Callable[..., torch.Tensor]:
    def conv_transpose(input: torch.Tensor, weight: torch.Tensor,
                       bias: Optional[torch.Tensor] = None, stride: Union[int, Sequence[int]] = 1,
                       padding: Union[int, Sequence[int]] = 0,
                       output_padding: Union[int, Sequence[int]] = 0, groups: int = 1,
                       dilation: Union[int, Sequence[int]] = 1) -> torch.Tensor:
        return _convolution(input, weight, bias, stride, padding, dilation, True,
                            output_padding, groups, dims)
    return conv_transpose


_CONVOLUTIONS = {f"conv{d}d": _conv(d) for d in (1, 2, 3)}
_CONVOLUTIONS.update({f"conv_transpose{d}d": _conv_transpose(d) for d in (1, 2, 3)})


@contextlib.contextmanager
def half_on_cpu(downcast_mixed: bool, shapes_only: bool = False,
                weights: Collection[torch.Tensor] = ()) -> Iterator[None]:
    """HalfOnCpu with the convolutions traced as aten::_convolution."""
    functional = torch.nn.functional
    saved = {name: getattr(functional, name) for name in _CONVOLUTIONS}
    for name, function in _CONVOLUTIONS.items():
        setattr(functional, name, function)
    try:
        with HalfOnCpu(downcast_mixed, shapes_only, weights):
            yield
    finally:
        for name, function in saved.items():
            setattr(functional, name, function)
