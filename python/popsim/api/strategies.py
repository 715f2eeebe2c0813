"""Execution strategies: how a model's blocks become pipeline stages on IPUs.

A strategy lists stages (``popsim.Stage("B1", "B2").ipu(0)``), block ids
(one stage per block) or an ``AutoStage`` rule, and is set with
``opts.setExecutionStrategy``. ``PipelinedExecution`` keeps every IPU busy
on a different micro-batch; ``ShardedExecution`` runs one stage at a time.
A model with blocks and no strategy runs ``PipelinedExecution(AutoStage.SameAsIpu)``.
"""

import enum
from typing import Dict, List, Optional, Tuple, TypeVar, Union

from popsim import _C
from popsim.api.values import is_integer
from popsim.api.errors import OptionError


class AutoStage(enum.IntEnum):
    """How blocks map to stages when a strategy lists no stages.

    - ``SameAsIpu``: a block's stage is its ``ipu_id``, so blocks on the same IPU form one
      stage; every block needs an ``ipu_id``.
    - ``AutoIncrement``: a new stage starts whenever the IPU changes along the model (a
      block without an ``ipu_id`` is placed on the IPU numbered as its position among the
      model's blocks).
    """

    SameAsIpu = 0       # stage id = the block's ipu_id
    AutoIncrement = 1   # a new stage whenever the IPU changes along the model


class PipelineSchedule(enum.Enum):
    """The order of forward and backward passes in a pipeline (see ARCHITECTURE.md).

    - ``Interleaved`` (the default): one forward, one backward.
    - ``Grouped``: all forwards, then all backwards (as GPipe).
    - ``Sequential``: one micro-batch through one stage at a time.
    """

    Interleaved = "Interleaved"  # one forward, one backward (default)
    Grouped = "Grouped"          # all forwards, then all backwards (GPipe)
    Sequential = "Sequential"    # one micro-batch through one stage at a time


def _block_name(block: Union[str, int], what: str) -> str:
    if not (isinstance(block, str) or is_integer(block)):
        raise OptionError(f"{what} expects block ids (str or int), got {block!r}.",
                          option=what.removeprefix("popsim."))
    return str(block)


class Stage:
    """Blocks that run together as one pipeline stage, optionally on a chosen IPU.

    ::

        popsim.PipelinedExecution(popsim.Stage("B1", "B2").ipu(0), popsim.Stage("B3").ipu(1))

    Without :meth:`popsim.Stage.ipu`, the stage runs on its blocks' ``ipu_id``, or without
    one, on the IPU numbered as the stage's position in the strategy.
    """

    def __init__(self, *block_ids: Union[str, int]) -> None:
        """Creates a stage of the given blocks.

        Args:
            *block_ids: The ids of the blocks (:class:`popsim.Block`, :class:`popsim.BeginBlock`)
                the stage runs, at least one; int ids are taken as their str.

        Raises:
            OptionError: if no block id is given, or one is neither a str nor an int.
        """
        if not block_ids:
            raise OptionError("popsim.Stage needs at least one block id, e.g. Stage('B1').",
                              option="Stage")
        self._blocks = [_block_name(block, "popsim.Stage") for block in block_ids]
        self._ipu: Optional[int] = None

    def ipu(self, ipu: int) -> "Stage":
        """Runs this stage on a given IPU, whatever its blocks' ``ipu_id``.

        Args:
            ipu: The IPU's index, from 0.

        Returns:
            This stage (``self``), so calls chain.

        Raises:
            OptionError: if ``ipu`` is not a non-negative integer.
        """
        if not is_integer(ipu) or ipu < 0:
            raise OptionError(f"Stage.ipu expects a non-negative int, got {ipu!r}.",
                              option="Stage.ipu")
        self._ipu = int(ipu)
        return self

    @property
    def blocks(self) -> List[str]:
        """The ids of the stage's blocks, as strings, in the order given (a copy)."""
        return list(self._blocks)

    def __repr__(self) -> str:
        ipu = "" if self._ipu is None else f".ipu({self._ipu})"
        return f"Stage({', '.join(map(repr, self._blocks))}){ipu}"


# A stage as strategies and phases take it: a Stage, a block id, or a list of block ids.
StageSpec = Union[Stage, str, int, List[Union[str, int]], Tuple[Union[str, int], ...]]


class _ExecutionStrategy:
    _name = "ExecutionStrategy"
    _kind = _C.StrategyKind.Pipelined

    def __init__(self, *args: Union[StageSpec, AutoStage]) -> None:
        """Creates the strategy from its stages, or from a rule that makes them.

        Args:
            *args: The stages: :class:`popsim.Stage` objects, block ids, each a stage of one
                block, or lists of block ids, each a stage of those blocks; or a single
                :class:`popsim.AutoStage` rule. Without arguments,
                ``AutoStage.SameAsIpu``. Stages are numbered in the order given; a block the
                model enters and no stage lists (or a listed block the model does not have) is
                an error when the model compiles.

        Raises:
            OptionError: if an AutoStage is mixed with stages or block ids, an argument is not a
                stage, AutoStage or block id (str or int), or a block is in more than one stage.
        """
        if not args:
            args = (AutoStage.SameAsIpu,)
        self._auto: Optional[AutoStage] = None
        self._stages: Optional[List[Stage]] = None
        if len(args) == 1 and isinstance(args[0], AutoStage):
            self._auto = args[0]
            return
        stages = []
        for arg in args:
            if isinstance(arg, Stage):
                stages.append(arg)
            elif isinstance(arg, (list, tuple)):  # block ids that make one stage, as PopTorch
                stages.append(Stage(*arg))
            elif isinstance(arg, AutoStage):
                raise OptionError(f"popsim.{self._name} takes one AutoStage on its own, not "
                                  "mixed with stages or block ids.", option=self._name)
            else:
                stages.append(Stage(_block_name(arg, f"popsim.{self._name}")))
        seen: Dict[str, int] = {}
        for index, stage in enumerate(stages):
            for block in stage.blocks:
                if block in seen:
                    raise OptionError(
                        f"Block '{block}' associated with more than one stage (stages "
                        f"{seen[block]} and {index} of popsim.{self._name}); each block "
                        "belongs to exactly one stage.", option=self._name)
                seen[block] = index
        self._stages = stages

    def stage(self, block_id: Union[str, int]) -> Stage:
        """The stage that runs a block, as PopTorch's strategies give it.

        Args:
            block_id: The block's id (an int id is taken as its str).

        Returns:
            The :class:`popsim.Stage` listing the block (the strategy's own object: setting
            its IPU changes the strategy).

        Raises:
            OptionError: if no stage lists the block, or the strategy makes its stages by an
                AutoStage rule when the model compiles.
        """
        block = _block_name(block_id, f"popsim.{self._name}.stage")
        if self._stages is None:
            raise OptionError(f"{self!r} makes its stages from the model's blocks when the model "
                              f"compiles ({self._auto!r}), so it has none to look block "
                              f"'{block}' up in; list the stages to set one's IPU.",
                              option=self._name)
        for stage in self._stages:
            if block in stage.blocks:
                return stage
        listed = [name for stage in self._stages for name in stage.blocks]
        raise OptionError(f"Unknown Block '{block}': no stage of {self._name} lists it (its "
                          f"blocks are {listed}).", option=self._name)

    def _spec(self) -> "_C.ExecutionStrategy":
        """What the strategy says, as the host runtime reads it (host::ExecutionStrategy),
        which places the model's blocks on stages and IPUs when it compiles."""
        spec = _C.ExecutionStrategy()
        spec.kind = self._kind
        if self._stages is None:
            spec.auto_stage = getattr(_C.AutoStage, self._auto.name)  # type: ignore[union-attr]
        else:
            spec.stages = [_C.StrategyStage(stage.blocks, stage._ipu) for stage in self._stages]
        return spec

    def __repr__(self) -> str:
        args = repr(self._auto) if self._stages is None else ", ".join(map(repr, self._stages))
        return f"{self._name}({args})"


class PipelinedExecution(_ExecutionStrategy):
    """Stages on different IPUs work on different micro-batches at once.

    Training needs ``gradientAccumulation`` >= 2 x stages - 1 (each stage but the last also
    runs its backward pass as a pipeline stage); inference needs ``deviceIterations`` >=
    stages.

    Example:
        >>> model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        >>> model[0] = popsim.BeginBlock(model[0], "B1")
        >>> model[2] = popsim.BeginBlock(model[2], "B2")
        >>> opts = popsim.Options().deviceIterations(4).setExecutionStrategy(
        ...     popsim.PipelinedExecution(popsim.Stage("B1").ipu(0), popsim.Stage("B2").ipu(1)))
        >>> popsim.inferenceModel(model, opts)(torch.randn(8, 4)).shape
        torch.Size([8, 2])
    """

    _name = "PipelinedExecution"

    def __init__(self, *args: Union[StageSpec, AutoStage],
                 schedule: PipelineSchedule = PipelineSchedule.Interleaved) -> None:
        """Creates the strategy from its stages, or from a rule that makes them.

        Args:
            *args: The stages: :class:`popsim.Stage` objects, block ids, each a stage of one
                block, or lists of block ids, each a stage of those blocks; or a single
                :class:`popsim.AutoStage` rule. Without arguments,
                ``AutoStage.SameAsIpu``. Stages are numbered in the order given; a block the
                model enters and no stage lists (or a listed block the model does not have) is
                an error when the model compiles.
            schedule: The order of forward and backward passes
                (``PipelineSchedule.Interleaved`` by default).

        Raises:
            OptionError: if an AutoStage is mixed with stages or block ids, an argument is not a
                stage, AutoStage or block id (str or int), a block is in more than one stage, or
                ``schedule`` is not a :class:`popsim.PipelineSchedule`.
        """
        super().__init__(*args)
        if not isinstance(schedule, PipelineSchedule):
            raise OptionError(f"PipelinedExecution(schedule=...) expects a "
                              f"popsim.PipelineSchedule, got {schedule!r}.",
                              option="PipelinedExecution")
        self.schedule = schedule

    def _spec(self) -> "_C.ExecutionStrategy":
        spec = super()._spec()
        spec.schedule = getattr(_C.ScheduleKind, self.schedule.value)
        return spec


class ShardedExecution(_ExecutionStrategy):
    """Stages run one after another, one micro-batch at a time.

    One IPU is busy at a time, which takes the least memory (no stash) and needs no minimum
    number of micro-batches. It takes its stages as :class:`popsim.PipelinedExecution` does
    (without ``schedule``): :class:`popsim.Stage` objects, block ids or a single
    :class:`popsim.AutoStage` (by default ``AutoStage.SameAsIpu``).

    Example:
        >>> model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        >>> model[0] = popsim.BeginBlock(model[0], "B1", ipu_id=0)
        >>> model[2] = popsim.BeginBlock(model[2], "B2", ipu_id=1)
        >>> opts = popsim.Options().setExecutionStrategy(popsim.ShardedExecution())
        >>> popsim.inferenceModel(model, opts)(torch.randn(2, 4)).shape  # one micro-batch is enough
        torch.Size([2, 2])
    """

    _name = "ShardedExecution"
    _kind = _C.StrategyKind.Sharded


class Liveness(enum.IntEnum):
    """Where a phased execution keeps tensors between its phases (PopTorch's ``Liveness``).

    - ``AlwaysLive``: on the IPUs.
    - ``OffChipAfterFwd``: the activations the backward pass needs move to Streaming Memory
      after the forward pass.
    - ``OffChipAfterFwdNoOverlap``: as ``OffChipAfterFwd``, but the loads and stores never
      overlap the compute.
    - ``OffChipAfterEachPhase``: the weights live in Streaming Memory too, streamed in for
      each phase that uses them.

    The off-chip kinds load and store through the IO tiles when the model sets some aside
    (:meth:`Options.TensorLocations.numIOTiles <popsim.options._TensorLocationOptions.numIOTiles>`),
    beside the compute; without IO tiles, or with ``OffChipAfterFwdNoOverlap``, the transfers
    go through the compute tiles, which wait for them.
    """

    AlwaysLive = 0
    OffChipAfterFwd = 1
    OffChipAfterFwdNoOverlap = 2
    OffChipAfterEachPhase = 3


class Phase:
    """Stages that a phased execution runs in one phase, each on its own IPU of the phase's group.

    The IPUs are set with ``Phase(...).ipus(0, 1)`` or ``strategy.phase(i).ipus(...)``;
    otherwise the phased execution places the stages.
    """

    def __init__(self, *stages: StageSpec) -> None:
        """Creates a phase of the given stages.

        Args:
            *stages: The phase's stages, at least one: :class:`popsim.Stage` objects, block
                ids, each a stage of one block, or lists of block ids, each a stage of those.

        Raises:
            OptionError: if no stage is given, or a block id is neither a str nor an int.
        """
        if not stages:
            raise OptionError("popsim.Phase needs at least one stage or block id.", option="Phase")
        self._stages = [stage if isinstance(stage, Stage)
                        else Stage(*stage) if isinstance(stage, (list, tuple))
                        else Stage(_block_name(stage, "popsim.Phase")) for stage in stages]

    def ipus(self, *ipus: int) -> "Phase":
        """Sets the IPU of each of the phase's stages, in order.

        Args:
            *ipus: One IPU index per stage of the phase.

        Returns:
            This phase (``self``), so calls chain.

        Raises:
            OptionError: if the number of IPUs is not the number of stages, or an IPU is not a
                non-negative integer.
        """
        if len(ipus) != len(self._stages):
            raise OptionError(
                f"Phase.ipus: this phase has {len(self._stages)} stage(s), so it needs as many "
                f"IPUs (one per stage), got {len(ipus)}: {list(ipus)}.", option="Phase.ipus")
        for stage, ipu in zip(self._stages, ipus):
            stage.ipu(ipu)
        return self

    @property
    def stages(self) -> List[Stage]:
        """The phase's stages, in order (a new list of the same Stage objects)."""
        return list(self._stages)

    def stage(self, index: int) -> Stage:
        """The phase's stage at an index, as PopTorch's ``Phase.stage`` gives it.

        Args:
            index: The stage's position in the phase, from 0.

        Returns:
            The phase's own :class:`popsim.Stage` (setting its IPU changes the phase).

        Raises:
            OptionError: if the phase has no stage at `index`.
        """
        if not is_integer(index) or not 0 <= index < len(self._stages):
            raise OptionError(f"Phase.stage: this phase has {len(self._stages)} stage(s), "
                              f"numbered from 0; got {index!r}.", option="Phase.stage")
        return self._stages[index]

    def __repr__(self) -> str:
        return f"Phase({', '.join(map(repr, self._stages))})"


_Phased = TypeVar("_Phased", bound="_PhasedExecution")


class _PhasedExecution(_ExecutionStrategy):
    """Phases run one after another, forward then backward; the stages of a
    phase run on the phase's IPUs. popsim runs them as sharded execution
    does (one stage at a time, in phase order) and keeps tensors between
    phases as the liveness says."""

    @staticmethod
    def _default_ipu(phase: int, position: int) -> int:
        """The IPU of the stage at `position` of phase `phase` when not given."""
        raise NotImplementedError  # each phased execution places its stages


    def __init__(self, *phases: Union[Phase, Stage, str, int, List[Union[Stage, str, int]],
                                      Tuple[Union[Stage, str, int], ...]]) -> None:
        """Creates the strategy from its phases.

        Stages whose IPU is not set are placed as the strategy's summary says.

        Args:
            *phases: The phases, in order, at least one: :class:`popsim.Phase` objects, lists or
                tuples of stages (each a phase), or single stages or block ids (a phase of one
                stage).

        Raises:
            OptionError: if no phase is given, a stage or block id is invalid, or a block is in
                more than one stage.
        """
        if not phases:
            raise OptionError(f"popsim.{self._name} needs at least one phase: "
                              f"popsim.{self._name}(popsim.Phase('A'), popsim.Phase('B')).",
                              option=self._name)
        self._phases = []
        for phase in phases:
            if isinstance(phase, Phase):
                self._phases.append(phase)
            elif isinstance(phase, (list, tuple)):
                self._phases.append(Phase(*phase))
            else:
                self._phases.append(Phase(phase))
        for index, phase in enumerate(self._phases):
            for position, stage in enumerate(phase.stages):
                if stage._ipu is None:
                    stage.ipu(self._default_ipu(index, position))
        super().__init__(*[stage for phase in self._phases for stage in phase.stages])
        self._liveness = Liveness.AlwaysLive
        self._separate_backward_phase = False

    def phase(self, index: int) -> Phase:
        """The phase at ``index``, to set its IPUs.

        Args:
            index: The phase's position, from 0.

        Returns:
            The :class:`popsim.Phase` itself, so ``phase(i).ipus(...)`` changes the strategy.

        Raises:
            OptionError: if ``index`` is not an integer from 0 to the number of phases - 1.
        """
        if not is_integer(index) or not 0 <= index < len(self._phases):
            raise OptionError(f"{self._name}.phase: phases are numbered 0 to "
                              f"{len(self._phases) - 1}, got {index!r}.",
                              option=f"{self._name}.phase")
        return self._phases[index]

    def useSeparateBackwardPhase(self: _Phased, use: bool = True) -> _Phased:
        """Sets whether the last forward phase and the first backward phase are separate (recorded).

        popsim's phases run one after another either way, so it changes neither results nor
        the simulated time.

        Args:
            use: True (the default of this call) for separate phases.

        Returns:
            This strategy (``self``), so calls chain.

        Raises:
            OptionError: if ``use`` is not a bool.
        """
        if not isinstance(use, bool):
            raise OptionError(f"useSeparateBackwardPhase expects True or False, got {use!r}.",
                              option="useSeparateBackwardPhase")
        self._separate_backward_phase = use
        return self

    def _spec(self) -> "_C.ExecutionStrategy":
        spec = super()._spec()
        spec.phase_sizes = [len(phase.stages) for phase in self._phases]
        spec.liveness = getattr(_C.Liveness, self._liveness.name)
        spec.separate_backward_phase = self._separate_backward_phase
        return spec

    def __repr__(self) -> str:
        return f"{self._name}({', '.join(map(repr, self._phases))})"


class SerialPhasedExecution(_PhasedExecution):
    """All phases run one after another on one group of IPUs.

    Stage k of every phase runs on IPU k unless its IPU is set: with
    :meth:`popsim.Stage.ipu`, :meth:`popsim.Phase.ipus` or ``strategy.phase(i).ipus(...)``.

    Example:
        >>> model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        >>> model[0] = popsim.BeginBlock(model[0], "B1")
        >>> model[2] = popsim.BeginBlock(model[2], "B2")
        >>> strategy = popsim.SerialPhasedExecution(popsim.Phase("B1"), popsim.Phase("B2"))
        >>> strategy = strategy.setTensorsLiveness(popsim.Liveness.OffChipAfterEachPhase)
        >>> opts = popsim.Options().setExecutionStrategy(strategy)
        >>> popsim.inferenceModel(model, opts)(torch.randn(2, 4)).shape  # both phases on IPU 0
        torch.Size([2, 2])
    """

    _name = "SerialPhasedExecution"
    _kind = _C.StrategyKind.SerialPhased

    @staticmethod
    def _default_ipu(phase: int, position: int) -> int:
        return position

    def setTensorsLiveness(self, liveness: Liveness) -> "SerialPhasedExecution":
        """Sets where tensors stay between phases.

        Args:
            liveness: A :class:`popsim.Liveness` (``Liveness.AlwaysLive`` by default).

        Returns:
            This strategy (``self``), so calls chain.

        Raises:
            OptionError: if ``liveness`` is not a :class:`popsim.Liveness`.
        """
        if not isinstance(liveness, Liveness):
            raise OptionError(f"setTensorsLiveness expects a popsim.Liveness, got {liveness!r}.",
                              option="setTensorsLiveness")
        self._liveness = liveness
        return self


class ParallelPhasedExecution(_PhasedExecution):
    """Phases alternate between two groups of IPUs: even phases on even IPUs, odd on odd.

    Stage k of phase p runs on IPU 2k + p % 2 unless its IPU is set: with
    :meth:`popsim.Stage.ipu`, :meth:`popsim.Phase.ipus` or ``strategy.phase(p).ipus(...)``. A
    stage on an IPU of the wrong parity is an error (:class:`popsim.OptionError`) when the
    model compiles.
    """

    _name = "ParallelPhasedExecution"
    _kind = _C.StrategyKind.ParallelPhased

    @staticmethod
    def _default_ipu(phase: int, position: int) -> int:
        return 2 * position + phase % 2

    def sendTensorsOffChipAfterFwd(self, off_chip: bool = True) -> "ParallelPhasedExecution":
        """Sets whether activations move off chip after the forward pass.

        Args:
            off_chip: True (the default of this call): ``Liveness.OffChipAfterFwd``. False:
                ``Liveness.AlwaysLive`` (the default of the strategy).

        Returns:
            This strategy (``self``), so calls chain.

        Raises:
            OptionError: if ``off_chip`` is not a bool.
        """
        if not isinstance(off_chip, bool):
            raise OptionError(f"sendTensorsOffChipAfterFwd expects True or False, got "
                              f"{off_chip!r}.", option="sendTensorsOffChipAfterFwd")
        self._liveness = Liveness.OffChipAfterFwd if off_chip else Liveness.AlwaysLive
        return self
