"""The candidate modules the planners split a model at: the planner's own (the children of
the module that splits the model best, refined by their profiled time) or the user's,
checked against the model."""

from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch

from popsim.api.errors import CompilationError, OptionError
from popsim.reports.plan_report import WHOLE_MODEL


def _default_candidates(model: torch.nn.Module, whole_if_none: bool = False) -> List[str]:
    """The children of the module that splits the model best: of the model and its
    modules with 2 or more children, the one whose count of children holding parameters,
    times the share of the model's parameters under it, is largest (the first such, in
    module order). A transformer's list of layers wins over the model's few top-level
    parts, a UNet's top-level blocks over any one block's layers, a ResNet's stem, stages
    and head over one stage's blocks. A module apart from it (neither inside nor around it)
    that scores at least a third as high adds its children too, in module order: the
    second tower of a two-tower model (CLIP's text encoder beside its image encoder), an
    encoder-decoder's other stack. A ModuleList or ModuleDict child stands for the modules
    in it (_called_modules). When no module scores (none has 2 or more children holding
    parameters), `whole_if_none` gives the model itself ("", one candidate: replicas of
    one IPU) instead of refusing."""
    total = sum(parameter.numel() for parameter in model.parameters())
    scored: List[Tuple[float, int, str]] = []  # (score, module order, name)
    for order, (name, module) in enumerate(model.named_modules()):
        children = [child for _, child in module.named_children()]
        if len(children) < 2:
            continue
        if total == 0:  # no parameters anywhere: the most children
            score = float(len(children))
        else:
            holding = sum(1 for child in children if next(child.parameters(), None) is not None)
            score = holding * sum(p.numel() for p in module.parameters()) / total
        if score > 0:
            scored.append((score, order, name))
    if not scored and whole_if_none:
        return [WHOLE_MODEL]
    if not scored:
        raise OptionError(
            f"popsim.plan: {type(model).__name__} has no modules to split at: neither it nor "
            "a module in it has 2 or more children; name the modules to split at with "
            "candidates=[...] (module names as model.named_modules() gives them, in the order "
            "forward() calls them).",
            option="plan.candidates")
    ranked = sorted(scored, key=lambda entry: (-entry[0], entry[1]))
    chosen = [ranked[0]]
    for entry in ranked[1:]:
        if entry[0] < ranked[0][0] / 3:
            break
        if not any(_nested(entry[2], other[2]) for other in chosen):
            chosen.append(entry)
    names: List[str] = []
    for _, _, name in sorted(chosen, key=lambda entry: entry[1]):
        names += _called_modules(model.get_submodule(name), f"{name}." if name else "")
    return names


# How many times the planner may split default candidates that are too slow for one IPU.
_REFINEMENTS = 3

# _profile_finding_tail's result: (each candidate's cycles, each one's memory by
# category, an IPU's capacity, each candidate's share of its cycles spent receiving
# inter-IPU copies), the tail, whether it starts after its module, and the tail
# found by itself.
Profiled = Tuple[Tuple[List[float], List[Dict[str, int]], int, List[float]], Optional[str], bool,
                 Optional[str]]


def refined_by_time(model: torch.nn.Module, names: List[str], profiled: Profiled,
                    profile: Callable[[List[str], Optional[str], bool], Profiled],
                    parts: Callable[[List[str]], int]
                    ) -> Tuple[List[str], Profiled, Optional[List[int]]]:
    """Default candidates come from parameter counts; time can be elsewhere. Each
    candidate whose profiled cycles exceed a share of the total (over
    `parts(names)` IPUs) is split into the modules it calls and the candidates are
    profiled again (by `profile(names, tail, after)`), _REFINEMENTS times at most.
    Returns the candidates, their profile and how many of them each of `names`
    became (None if none was split: _ranked_splits's spans); where children cannot
    be stages (forward() calls them out of order, or not at all), the candidates
    that profiled are kept."""
    coarse = names
    for _ in range(_REFINEMENTS):
        (cycles, *_), tail, after, _ = profiled
        refined = _split_heavy_candidates(model, names, cycles, parts(names), tail)
        if refined == names:
            break
        try:
            again = profile(refined, tail, after)
        except (CompilationError, OptionError):
            break
        names, profiled = refined, again
    if names == coarse:
        return names, profiled, None
    spans = [sum(1 for name in names if name == parent or name.startswith(parent + "."))
             for parent in coarse]
    return names, profiled, spans


def _split_heavy_candidates(model: torch.nn.Module, names: List[str], cycles: List[float],
                            parts: int, tail: Optional[str]) -> List[str]:
    """`names` with each candidate whose profiled cycles exceed an IPU's share of the
    total (the total over `parts`) replaced by the modules it calls, when it calls 2 or
    more and holds no tail: a model-level part that holds most of the time (an
    encoder-decoder's transformer beside its large embeddings, which hold most of the
    parameters) can then be split over IPUs."""
    share = sum(cycles) / parts
    refined: List[str] = []
    for name, spent in zip(names, cycles):
        inside = _called_modules(model.get_submodule(name), name + ".")
        holds_tail = tail is not None and _nested(tail, name)
        if spent > share and len(inside) >= 2 and not holds_tail:
            refined += inside
        else:
            refined.append(name)
    return refined


def _nested(first: str, second: str) -> bool:
    """Whether one of two modules (by name; "" is the model) holds the other or is it."""
    return (first == second or not first or not second or first.startswith(second + ".")
            or second.startswith(first + "."))


def _called_modules(module: torch.nn.Module, prefix: str) -> List[str]:
    """The names of `module`'s children that forward() calls, in order: a ModuleList or
    ModuleDict child (a UNet's list of down blocks) is never called itself, so its own
    children stand in its place."""
    names = []
    for name, child in module.named_children():
        if isinstance(child, _CONTAINERS):
            names += _called_modules(child, f"{prefix}{name}.")
        else:
            names.append(f"{prefix}{name}")
    return names


# Modules that hold others without a forward() of their own.
_CONTAINERS = (torch.nn.ModuleList, torch.nn.ModuleDict)


def _check_candidates(model: torch.nn.Module, candidates: Sequence[str],
                      what: str = "candidate") -> List[str]:
    names = list(candidates)
    if not names:
        raise OptionError(
            f"popsim.plan: the {what} list is empty; name the modules to split at, in the "
            "order forward() calls them, or leave candidates=None for the planner's own.",
            option=f"plan.{what}")
    known = dict(model.named_modules())
    for name in names:
        if not isinstance(name, str) or name not in known or name == "":
            raise OptionError(
                f"popsim.plan: {what} {name!r} is not a submodule of {type(model).__name__}; "
                "name modules as model.named_modules() gives them (e.g. "
                "'encoder.layers.3').", option=f"plan.{what}")
    if len(set(names)) != len(names):
        raise OptionError(f"popsim.plan: candidates {names} name a module twice.",
                          option="plan.candidates")
    for name in names:
        if isinstance(known[name], _CONTAINERS):
            inside = _called_modules(known[name], name + ".")
            listed = ", ".join(repr(called) for called in inside[:3])
            raise OptionError(
                f"popsim.plan: {what} {name!r} is a {type(known[name]).__name__}, which "
                f"forward() never calls (it calls the modules in it); name those instead: "
                f"[{listed}{', ...' if len(inside) > 3 else ''}].", option=f"plan.{what}")
    return names


def _enclosing_modules(model: torch.nn.Module, names: List[str]) -> List[str]:
    """The modules that hold every candidate, innermost first, that forward()
    calls (not the model itself, nor ModuleList and ModuleDict containers,
    which are never called)."""
    common: List[str] = []
    for level in zip(*(name.split(".") for name in names)):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    enclosing = []
    for depth in range(len(common), 0, -1):
        name = ".".join(common[:depth])
        module = model.get_submodule(name)
        if name not in names and not isinstance(module, _CONTAINERS):
            enclosing.append(name)
    return enclosing
