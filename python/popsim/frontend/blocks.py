"""Block annotations: which ops of a model form a pipeline block.

``Block``, ``BeginBlock`` and ``BlockFunction`` leave marker ops in the
trace (``popsim::begin_block(user_id, ipu_id)`` and ``popsim::end_block()``).
They are declared with conservative alias analysis, so TorchScript treats
them as side effects and keeps them in place; the C++ importer gives every op
between two markers the current block. Run eagerly, the markers do nothing,
so annotated models still run in plain PyTorch.
"""

import functools
from typing import Any, Callable, List, Literal, Optional, Tuple, Union

import torch

from popsim.frontend.ops import LIBRARY as _LIBRARY
from popsim.api.values import is_integer
from popsim.api.errors import OptionError

_LIBRARY.define("begin_block(str user_id, int ipu_id) -> ()", alias_analysis="CONSERVATIVE")
_LIBRARY.define("end_block() -> ()", alias_analysis="CONSERVATIVE")
_LIBRARY.impl("begin_block", lambda user_id, ipu_id: None, "CompositeExplicitAutograd")
_LIBRARY.impl("end_block", lambda: None, "CompositeExplicitAutograd")

# The block ops are currently traced into: (user_id, ipu_id) or None.
_current: Optional[Tuple[str, Optional[int]]] = None
_auto_ids = {"enabled": False, "next": 0}
# The ids of the blocks that forward() itself opened (popsim.Block,
# Block.start, BlockFunction, a function BeginBlock wrapped) in the latest
# trace, as opposed to BeginBlock's module hooks, which the planners write: a
# planner uses it to tell a model that brings its own blocks from other
# failures of its stages.
_opened_by_forward: List[str] = []


def reset_for_trace() -> None:
    """Called before each trace: no block is open and auto ids restart at 0."""
    global _current
    _current = None
    _auto_ids["next"] = 0
    _opened_by_forward.clear()


def opened_by_forward() -> List[str]:
    """The ids of the blocks that the latest trace's forward() opened itself (with
    ``popsim.Block``, ``Block.start``, ``BlockFunction`` or a function ``BeginBlock``
    wrapped), in order; BeginBlock's module annotations are not listed."""
    return list(_opened_by_forward)


def _opened_in_forward(block: str) -> str:
    if torch.jit.is_tracing():  # (eager runs would only grow the list)
        _opened_by_forward.append(block)
    return block


def _emit(block: Optional[Tuple[str, Optional[int]]]) -> None:
    global _current
    _current = block
    if block is None:
        torch.ops.popsim.end_block()
    else:
        torch.ops.popsim.begin_block(block[0], -1 if block[1] is None else block[1])


def _check_ipu(ipu_id: Optional[int], what: str) -> Optional[int]:
    if ipu_id is not None and (not is_integer(ipu_id) or ipu_id < 0):
        raise OptionError(f"{what} expects ipu_id to be a non-negative int or None, "
                          f"got {ipu_id!r}.", option=f"{what.removeprefix('popsim.')}.ipu_id")
    return None if ipu_id is None else int(ipu_id)


def _block_id(user_id: Union[str, int, None], ipu_id: Optional[int], what: str
              ) -> Optional[str]:
    if user_id is not None:
        if not (isinstance(user_id, str) or is_integer(user_id)):
            raise OptionError(f"{what} expects user_id to be a str, an int or None, "
                              f"got {user_id!r}.", option=f"{what.removeprefix('popsim.')}.user_id")
        return str(user_id)
    if _auto_ids["enabled"]:
        return None  # numbered when entered, in the order the model runs
    if ipu_id is not None:
        return f"ipu{ipu_id}"
    raise OptionError(
        f"{what} needs a user_id or an ipu_id to name its block, e.g. popsim.Block('B1') or "
        "popsim.Block(ipu_id=1); or call popsim.Block.useAutoId() to number id-less blocks.",
        option=what.removeprefix("popsim."))


def _next_auto_id() -> str:
    value = _auto_ids["next"]
    _auto_ids["next"] += 1
    return str(value)


class Block:
    """Runs the ops inside ``with popsim.Block(user_id, ipu_id):`` as one block.

    Blocks are grouped into pipeline stages by the execution strategy
    (popsim.PipelinedExecution, popsim.ShardedExecution). With ``ipu_id`` and
    no strategy, each block runs on that IPU, pipelined. Blocks nest: leaving
    one returns to the enclosing block.

    Example:
        >>> class TwoBlocks(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.first, self.second = torch.nn.Linear(4, 8), torch.nn.Linear(8, 2)
        ...     def forward(self, x):
        ...         with popsim.Block("B1", ipu_id=0):
        ...             x = self.first(x).relu()
        ...         with popsim.Block("B2", ipu_id=1):
        ...             return self.second(x)
        >>> executor = popsim.inferenceModel(TwoBlocks(), popsim.Options().deviceIterations(4))
        >>> executor(torch.randn(8, 4)).shape  # pipelined over IPUs 0 and 1
        torch.Size([8, 2])
        >>> len(executor.memoryReport()["ipus"])
        2
    """

    def __init__(self, user_id: Optional[str] = None, ipu_id: Optional[int] = None) -> None:
        """Creates the block; the ``with`` statement opens it and closes it.

        Args:
            user_id: The block's name (an ``int`` is taken as its ``str``). None numbers the
                block in the order the model enters its blocks ("0", "1", ...) after
                :meth:`popsim.Block.useAutoId`, and otherwise names it "ipu<ipu_id>" (then
                ``ipu_id`` is needed).
            ipu_id: The IPU the block runs on, a non-negative ``int``; None leaves it to the
                execution strategy.

        Raises:
            OptionError: when ``ipu_id`` is not a non-negative ``int`` or None, when
                ``user_id`` is not a ``str``, an ``int`` or None, or when neither names the
                block and :meth:`popsim.Block.useAutoId` was not called.
        """
        self._ipu = _check_ipu(ipu_id, "popsim.Block")
        self._id = _block_id(user_id, self._ipu, "popsim.Block")
        self._outer: List[Optional[Tuple[str, Optional[int]]]] = []

    @staticmethod
    def useAutoId() -> None:
        """Names blocks created without a user_id "0", "1", ... in the order the model enters them.

        This holds from then on, for every block created afterwards (numbering restarts at 0
        for each trace); there is no call to turn it off.
        """
        _auto_ids["enabled"] = True

    @staticmethod
    def start(user_id: Optional[str] = None, ipu_id: Optional[int] = None) -> None:
        """Starts a block here, without a ``with``.

        The ops after it belong to the block until the next block starts (as
        :func:`popsim.BeginBlock` does at a module).

        Args:
            user_id: The block's name (an ``int`` is taken as its ``str``). None numbers the
                block in the order the model enters its blocks ("0", "1", ...) after
                :meth:`popsim.Block.useAutoId`, and otherwise names it "ipu<ipu_id>" (then
                ``ipu_id`` is needed).
            ipu_id: The IPU the block runs on, a non-negative ``int``; None leaves it to the
                execution strategy.

        Raises:
            OptionError: when ``ipu_id`` is not a non-negative ``int`` or None, when
                ``user_id`` is not a ``str``, an ``int`` or None, or when neither names the
                block and :meth:`popsim.Block.useAutoId` was not called.
        """
        ipu = _check_ipu(ipu_id, "popsim.Block.start")
        block_id = _block_id(user_id, ipu, "popsim.Block.start")
        _emit((_opened_in_forward(block_id if block_id is not None else _next_auto_id()), ipu))

    def __enter__(self) -> "Block":
        self._outer.append(_current)
        block = _opened_in_forward(self._id if self._id is not None else _next_auto_id())
        _emit((block, self._ipu))
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        _emit(self._outer.pop())
        return False


class _BlockStart:
    """Forward pre-hook that opens a block (picklable, unlike a closure)."""

    def __init__(self, user_id: Optional[str], ipu_id: Optional[int]) -> None:
        self.user_id = user_id
        self.ipu_id = ipu_id

    def __call__(self, module: Optional[torch.nn.Module], inputs: Tuple[Any, ...]) -> None:
        _emit((self.user_id if self.user_id is not None else _next_auto_id(), self.ipu_id))

    def __repr__(self) -> str:  # PopTorch's text: the ids unquoted
        return f"BeginBlock(user_id={self.user_id}, ipu_id={self.ipu_id})"


class _BlockStartAfter(_BlockStart):
    """Forward hook that opens a block when its module returns."""

    def __call__(self, module: Optional[torch.nn.Module], inputs: Tuple[Any, ...],
                 output: Any = None) -> None:
        super().__call__(module, inputs)

    def __repr__(self) -> str:
        return f"BeginBlock(user_id={self.user_id}, ipu_id={self.ipu_id}, after=True)"


def BeginBlock(layer_to_call: Union[torch.nn.Module, Callable[..., Any]],
               user_id: Optional[str] = None,
               ipu_id: Optional[int] = None, *,
               after: bool = False) -> Union[torch.nn.Module, Callable[..., Any]]:
    """Starts a block where ``layer_to_call`` runs.

    The module's ops and every op after it belong to the block until the next block starts.
    The module is annotated in place, with a forward pre-hook (:func:`popsim.removeBlocks`
    removes it). Given a function instead, it returns a function that starts the block at
    each call and then calls it.

    Example:
        >>> model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        >>> model[0] = popsim.BeginBlock(model[0], "B1", ipu_id=0)
        >>> model[2] = popsim.BeginBlock(model[2], "B2", ipu_id=1)  # the ReLU stays in B1
        >>> executor = popsim.inferenceModel(model, popsim.Options().deviceIterations(4))
        >>> executor(torch.randn(8, 4)).shape
        torch.Size([8, 2])

    Args:
        layer_to_call: The ``torch.nn.Module`` (or function) that starts the block.
        user_id: The block's name (an ``int`` is taken as its ``str``). None numbers the block
            in the order the model enters its blocks ("0", "1", ...) after
            :meth:`popsim.Block.useAutoId`, and otherwise names it "ipu<ipu_id>" (then
            ``ipu_id`` is needed).
        ipu_id: The IPU the block runs on, a non-negative ``int``; None leaves it to the
            execution strategy.
        after: popsim's own, for modules only: True starts the block when the module returns
            instead, so that the ops after it, up to the next block, belong to the block (how
            :func:`popsim.plan` places a model's tail).

    Returns:
        The module itself, annotated; or, for a function, the function that starts the block
        and then calls it.

    Raises:
        OptionError: when ``layer_to_call`` is neither a module nor callable, when ``after``
            is given with a function, when the module already starts a block (of the same
            kind: before or after it), or when the ids are not valid (as for
            :class:`popsim.Block`).
    """
    if not isinstance(layer_to_call, torch.nn.Module):
        if not callable(layer_to_call):
            raise OptionError(f"popsim.BeginBlock expects a torch.nn.Module or a function, "
                              f"got {type(layer_to_call).__name__}.", option="BeginBlock")
        if after:
            raise OptionError("popsim.BeginBlock(after=True) takes a torch.nn.Module; a "
                              "function's block starts when it is called.", option="BeginBlock")
        ipu = _check_ipu(ipu_id, "popsim.BeginBlock")
        start = _BlockStart(_block_id(user_id, ipu, "popsim.BeginBlock"), ipu)

        @functools.wraps(layer_to_call)
        def starting_the_block(*args: Any, **kwargs: Any) -> Any:
            start(None, args)
            if _current is not None:
                _opened_in_forward(_current[0])
            return layer_to_call(*args, **kwargs)
        return starting_the_block
    attribute = "_popsim_block_after" if after else "_popsim_block"
    existing = getattr(layer_to_call, attribute, None)
    if existing is not None:
        raise OptionError(
            f"popsim.BeginBlock{'(after=True)' if after else ''}: this "
            f"{type(layer_to_call).__name__} module has already been assigned to a block "
            f"({existing.user_id!r}); a module starts one block. popsim.removeBlocks(module) "
            "clears its annotation.", option="BeginBlock")
    ipu = _check_ipu(ipu_id, "popsim.BeginBlock")
    block = _block_id(user_id, ipu, "popsim.BeginBlock")
    if after:
        after_hook = _BlockStartAfter(block, ipu)
        setattr(layer_to_call, attribute, after_hook)
        layer_to_call.register_forward_hook(after_hook)
        return layer_to_call
    hook = _BlockStart(block, ipu)
    setattr(layer_to_call, attribute, hook)
    layer_to_call.register_forward_pre_hook(hook)
    return layer_to_call


def removeBlocks(module: torch.nn.Module) -> None:
    """Removes the :func:`popsim.BeginBlock` annotations of ``module`` and its submodules.

    Both kinds go (``after=True`` too). Functions that ``BeginBlock`` wrapped are not
    affected.

    Args:
        module: The module to clear, in place.

    Raises:
        OptionError: when ``module`` is not a ``torch.nn.Module``.
    """
    if not isinstance(module, torch.nn.Module):
        raise OptionError(f"popsim.removeBlocks expects a torch.nn.Module, got "
                          f"{type(module).__name__}.", option="removeBlocks")
    for submodule in module.modules():
        for hooks in (submodule._forward_pre_hooks, submodule._forward_hooks):
            for key in [key for key, hook in hooks.items() if isinstance(hook, _BlockStart)]:
                del hooks[key]
        submodule.__dict__.pop("_popsim_block", None)
        submodule.__dict__.pop("_popsim_block_after", None)


def module_repr(module: torch.nn.Module) -> str:
    """Gives the module's repr with its :func:`popsim.BeginBlock` annotations shown.

    Each annotation stands in front of the module it starts, ``module`` itself included:
    ``(layer2): BeginBlock(user_id=B2, ipu_id=1) Linear(...)``; an ``after=True`` one
    stands behind it: ``Linear(...) then BeginBlock(..., after=True)``.

    Args:
        module: The module to describe.

    Returns:
        The text, laid out as ``repr(module)``.
    """
    def annotated(current: torch.nn.Module, text: str) -> str:
        block = current.__dict__.get("_popsim_block")
        after = current.__dict__.get("_popsim_block_after")
        return f"{f'{block!r} ' if block else ''}{text}{f' then {after!r}' if after else ''}"

    def describe(current: torch.nn.Module) -> str:
        extra = current.extra_repr()
        lines = extra.split("\n") if extra else []
        children = []
        for name, child in current._modules.items():
            if child is None:
                continue
            text = torch.nn.modules.module._addindent(describe(child), 2)
            children.append(f"({name}): {annotated(child, text)}")
        body = current._get_name() + "("
        if children or len(lines) > 1:
            body += "\n  " + "\n  ".join(lines + children) + "\n"
        elif lines:
            body += lines[0]
        return body + ")"
    return annotated(module, describe(module))


def BlockFunction(user_id: Optional[str] = None,
                  ipu_id: Optional[int] = None) -> Callable[[Callable], Callable]:
    """Makes a decorator whose function runs inside ``popsim.Block(user_id, ipu_id)`` at each call.

    Example:
        >>> @popsim.BlockFunction("Head", ipu_id=1)
        ... def head(x):
        ...     return torch.softmax(x, -1)
        >>> class Classifier(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.body = torch.nn.Linear(4, 3)
        ...     def forward(self, x):
        ...         with popsim.Block("Body", ipu_id=0):
        ...             x = self.body(x)
        ...         return head(x)
        >>> executor = popsim.inferenceModel(Classifier(), popsim.Options().deviceIterations(2))
        >>> probabilities = executor(torch.randn(4, 4))  # the body on IPU 0, the head on IPU 1
        >>> torch.allclose(probabilities.sum(-1), torch.ones(4))
        True

    Args:
        user_id: The block's name (an ``int`` is taken as its ``str``). None numbers the block
            in the order the model enters its blocks ("0", "1", ...) after
            :meth:`popsim.Block.useAutoId`, and otherwise names it "ipu<ipu_id>" (then
            ``ipu_id`` is needed).
        ipu_id: The IPU the block runs on, a non-negative ``int``; None leaves it to the
            execution strategy.

    Returns:
        The decorator, which returns the function wrapped.

    Raises:
        OptionError: when the ids are not valid or do not name the block (as for
            :class:`popsim.Block`).
    """
    block_ipu = _check_ipu(ipu_id, "popsim.BlockFunction")
    block_id = _block_id(user_id, block_ipu, "popsim.BlockFunction")

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with Block(block_id, block_ipu):
                return function(*args, **kwargs)
        return wrapper

    return decorate
