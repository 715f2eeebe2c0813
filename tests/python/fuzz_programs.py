"""Random small models for the differential fuzzer (test_fuzz.py).

A program is a list of instructions over a pool of tensors. The pool starts
with the model's tensor inputs; most instructions append a value, and some
modify a pool value in place (whole, or through a view), so that later
instructions, the outputs and the caller's inputs see the change, as in
eager PyTorch. Every pool value is [micro-batch, width]: batch rows stay
independent, so running each micro-batch eagerly gives popsim's semantics
for device iterations and gradient accumulation.

`Program.describe()` prints the program as Python-like lines, which is what
hypothesis shows for a failing example.
"""

import contextlib
import dataclasses

import torch
import torch.nn.functional as F
from hypothesis import strategies as st

import popsim

UNARY = {
    "relu": torch.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "neg": torch.neg,
    "gelu": F.gelu,
    "exp": lambda x: torch.exp(torch.tanh(x) * 3),
}
BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul,
          "div": lambda x, y: x / (y.abs() + 1)}


@dataclasses.dataclass
class Instruction:
    op: str
    operands: tuple  # pool indices
    params: dict
    no_grad: bool = False

    def line(self, result):
        args = ", ".join(f"v{i}" for i in self.operands)
        params = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        prefix = "with no_grad: " if self.no_grad else ""
        target = f"v{result} = " if result is not None else ""
        return f"{prefix}{target}{self.op}({args}{', ' if params else ''}{params})"


@dataclasses.dataclass
class Program:
    """Inputs: `a` always; `b` (positional-or-keyword, default None) and the
    keyword-only `c` when present; `scale` is a number argument."""

    width: int
    has_b: bool
    has_c: bool
    scale: float  # passed to forward (or left at its default of 1.0)
    pass_scale: bool
    b_by_keyword: bool
    instructions: list
    outputs: list  # pool indices
    blocks: int  # 0: no blocks, else the number of blocks (one per IPU)

    def describe(self):
        lines = [f"inputs: a{', b' if self.has_b else ''}{', c' if self.has_c else ''} "
                 f"[batch, {self.width}], scale={self.scale if self.pass_scale else 1.0}"]
        size = 1 + self.has_b + self.has_c
        for instruction in self.instructions:
            appends = instruction.op not in IN_PLACE
            lines.append(instruction.line(size if appends else None))
            size += appends
        lines.append(f"return {', '.join(f'v{i}' for i in self.outputs)}; blocks={self.blocks}")
        return "\n".join(lines)


IN_PLACE = {"add_", "mul_", "slice_mul_", "column_fill_", "slice_add_", "transposed_row_mul_"}


@st.composite
def programs(draw, training):
    width = draw(st.integers(2, 5))
    has_b = draw(st.booleans())
    has_c = draw(st.booleans())
    widths = [width] * (1 + has_b + has_c)
    instructions = []
    for _ in range(draw(st.integers(1, 8))):
        instruction, new_width = draw(instructions_for(widths, training))
        instructions.append(instruction)
        if new_width is not None:
            widths.append(new_width)
    first = 1 + has_b + has_c
    candidates = list(range(first, len(widths))) or [0]
    outputs = draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=3, unique=True))
    return Program(width, has_b, has_c, draw(st.sampled_from([0.5, 2.0, -3.0])),
                   draw(st.booleans()), draw(st.booleans()), instructions, outputs,
                   draw(st.integers(0, 4)))


@st.composite
def instructions_for(draw, widths, training):
    """One instruction over a pool of values of these widths, and the width of
    the value it appends (None for in-place ones)."""
    pool = range(len(widths))
    kind = draw(st.sampled_from(["unary", "binary", "linear", "conv", "slice", "cat", "reduce",
                                 "softmax", "clone", "detach", "scaled", "truncated",
                                 "constant", "in_place", "in_place_view"]))
    x = draw(st.sampled_from(pool))
    same = [i for i in pool if widths[i] == widths[x]]
    if kind == "unary":
        return Instruction(draw(st.sampled_from(sorted(UNARY))), (x,), {}), widths[x]
    if kind == "binary":
        y = draw(st.sampled_from(same + [i for i in pool if widths[i] == 1]))
        return Instruction(draw(st.sampled_from(sorted(BINARY))), (x, y), {}), widths[x]
    if kind == "linear":
        out = draw(st.integers(1, 5))
        no_grad = training and draw(st.integers(0, 4)) == 0
        return Instruction("linear", (x,), {"out": out}, no_grad), out
    if kind == "conv":  # a Conv1d over the width, 2 channels out, flattened
        k = draw(st.integers(1, widths[x]))
        return Instruction("conv", (x,), {"kernel": k}), 2 * (widths[x] - k + 1)
    if kind == "truncated":  # through int32 and back: no gradient, as eagerly
        return Instruction("truncated", (x,), {}), widths[x]
    if kind == "slice":
        start = draw(st.integers(0, widths[x] - 1))
        stop = draw(st.integers(start + 1, widths[x]))
        step = draw(st.integers(1, 2))
        return (Instruction("slice", (x,), {"start": start, "stop": stop, "step": step}),
                len(range(start, stop, step)))
    if kind == "cat":
        y = draw(st.sampled_from(pool))
        return Instruction("cat", (x, y), {}), widths[x] + widths[y]
    if kind == "reduce":
        return Instruction(draw(st.sampled_from(["sum", "mean"])), (x,), {}), 1
    if kind == "softmax":
        return Instruction(draw(st.sampled_from(["softmax", "log_softmax"])), (x,), {}), widths[x]
    if kind == "clone":
        return Instruction("clone", (x,), {}), widths[x]
    if kind == "detach":
        return Instruction("detach", (x,), {}), widths[x]
    if kind == "scaled":
        return Instruction("scaled", (x,), {}), widths[x]
    if kind == "constant":  # built at compile time; later writes may fill it at runtime
        width = draw(st.integers(1, 5))
        return Instruction("constant", (x,), {"width": width,
                                              "ramp": draw(st.booleans())}), width
    # In-place writes autograd does not record, under torch.no_grad().
    untracked = training and draw(st.integers(0, 3)) == 0
    if kind == "in_place":
        op = draw(st.sampled_from(["add_", "mul_"]))
        if op == "add_":
            return Instruction(op, (x, draw(st.sampled_from(same))), {}, untracked), None
        return Instruction(op, (x,), {"factor": draw(st.sampled_from([-1.5, 0.5, 3.0]))},
                           untracked), None
    op = draw(st.sampled_from(["slice_mul_", "column_fill_", "slice_add_", "transposed_row_mul_"]))
    column = draw(st.integers(0, widths[x] - 1))
    if op == "column_fill_":
        return Instruction(op, (x,), {"column": column, "value": 0.25}, untracked), None
    if op == "transposed_row_mul_":
        return Instruction(op, (x,), {"column": column, "factor": -2.0}, untracked), None
    if op == "slice_mul_":
        return Instruction(op, (x,), {"start": column, "factor": 2.0}, untracked), None
    sources = [i for i in pool if widths[i] >= widths[x] - column]
    return Instruction(op, (x, draw(st.sampled_from(sources))), {"start": column},
                       untracked), None


class ProgramModel(torch.nn.Module):
    """Runs a program; its Linear layers are made from the program."""

    def __init__(self, program, training):
        super().__init__()
        self.program = program
        self.training_program = training
        self.layers = torch.nn.ModuleList()
        # Training always has a parameter on the loss's path, whatever the program.
        self.gain = torch.nn.Parameter(torch.ones(1))
        widths = [program.width] * (1 + program.has_b + program.has_c)
        for instruction in program.instructions:
            x = instruction.operands[0]
            if instruction.op == "linear":
                self.layers.append(torch.nn.Linear(widths[x], instruction.params["out"]))
            if instruction.op == "conv":
                self.layers.append(torch.nn.Conv1d(1, 2, instruction.params["kernel"]))
            if instruction.op not in IN_PLACE:
                widths.append(_width_after(instruction, widths))

    def forward(self, a, b=None, *, scale=1.0, c=None):
        pool = [a] + ([b] if self.program.has_b else []) + ([c] if self.program.has_c else [])
        layers = iter(self.layers)
        with contextlib.ExitStack() as blocks:
            for index, instruction in enumerate(self.program.instructions):
                block = block_of(self.program, index)
                if block is not None and (index == 0 or block_of(self.program, index - 1) != block):
                    blocks.close()
                    blocks.enter_context(popsim.Block(f"B{block}", ipu_id=block))
                with torch.no_grad() if instruction.no_grad else contextlib.nullcontext():
                    result = _run(instruction, pool, layers, scale)
                if result is not None:
                    pool.append(result)
            outputs = tuple(pool[i] for i in self.program.outputs)
            if not self.training_program:
                return outputs
            # A loss every output contributes to (popsim trains on a marked scalar).
            loss = sum((o * o).mean() for o in outputs) * self.gain[0]
            return outputs, popsim.identity_loss(loss, reduction="none")


def block_of(program, index):
    """The block (and IPU) of instruction `index`: IPUs 0, 1, ... in order, each a
    contiguous run of instructions; None without blocks."""
    if not program.blocks:
        return None
    count = len(program.instructions)
    used = sorted({i * program.blocks // count for i in range(count)})
    return used.index(index * program.blocks // count)


def block_count(program):
    if not program.blocks:
        return 0
    return block_of(program, len(program.instructions) - 1) + 1


def _width_after(instruction, widths):
    x = instruction.operands[0]
    p = instruction.params
    return {"linear": lambda: p["out"],
            "conv": lambda: 2 * (widths[x] - p["kernel"] + 1), "slice": lambda: len(range(p["start"], p["stop"],
                                                                 p["step"])),
            "cat": lambda: widths[x] + widths[instruction.operands[1]],
            "sum": lambda: 1, "mean": lambda: 1,
            "constant": lambda: p["width"]}.get(instruction.op, lambda: widths[x])()


def _run(instruction, pool, layers, scale):
    op, p = instruction.op, instruction.params
    x = pool[instruction.operands[0]]
    y = pool[instruction.operands[1]] if len(instruction.operands) > 1 else None
    if op in UNARY:
        return UNARY[op](x)
    if op in BINARY:
        return BINARY[op](x, y)
    if op == "linear":
        return next(layers)(x)
    if op == "conv":
        return next(layers)(x.unsqueeze(1)).flatten(1)
    if op == "truncated":
        return (x * 4).int().float()
    if op == "slice":
        return x[:, p["start"]:p["stop"]:p["step"]]
    if op == "cat":
        return torch.cat([x, y], dim=1)
    if op in ("sum", "mean"):
        return getattr(x, op)(dim=1, keepdim=True)
    if op == "softmax":
        return torch.softmax(x, dim=1)
    if op == "log_softmax":
        return torch.log_softmax(x, dim=1)
    if op == "clone":
        return x.clone()
    if op == "detach":
        return x.detach()
    if op == "scaled":
        return x * scale
    if op == "constant":
        shape = (x.shape[0], p["width"])
        if p["ramp"]:
            return torch.arange(shape[0] * shape[1], dtype=torch.float32).reshape(shape) / 7
        return torch.full(shape, 0.5)
    if op == "add_":
        x.add_(y)
    elif op == "mul_":
        x.mul_(p["factor"])
    elif op == "slice_mul_":
        x[:, p["start"]:].mul_(p["factor"])
    elif op == "column_fill_":
        x[:, p["column"]] = p["value"]
    elif op == "transposed_row_mul_":
        x.t()[p["column"]].mul_(p["factor"])
    elif op == "slice_add_":
        x[:, p["start"]:] += y[:, :x.shape[1] - p["start"]]
    return None


def call_arguments(program, tensors):
    """(args, kwargs) of a call, in the program's calling style."""
    a = tensors[0]
    rest = list(tensors[1:])
    args, kwargs = [a], {}
    if program.has_b:
        b = rest.pop(0)
        if program.b_by_keyword:
            kwargs["b"] = b
        else:
            args.append(b)
    if program.has_c:
        kwargs["c"] = rest.pop(0)
    if program.pass_scale:
        kwargs["scale"] = program.scale
    return args, kwargs


def input_count(program):
    return 1 + program.has_b + program.has_c
