"""The planners' last refinement: more memory for the matmuls and convolutions
that availableMemoryProportion made run in serial passes, from the spare memory
of a configuration that fits."""

from typing import Any, Dict, Optional

from popsim.reports.plan_report import PipelinePlan


def raised_proportions(plan: PipelinePlan) -> Optional[Dict[int, float]]:
    """For each IPU of a verified plan whose matmuls or convolutions ran in passes, an
    available memory proportion that gives their temporaries 90% of the IPU's spare
    memory on top of their budget (fewer passes); None when no IPU's would rise."""
    raised = {}
    for ipu in plan.report.ipus:
        if ipu.ipu in plan.passes_budgets:
            spare = (ipu.capacity_bytes - ipu.memory_bytes) / ipu.capacity_bytes
            raised[ipu.ipu] = round(min(1.0, plan.passes_budgets[ipu.ipu] + 0.9 * spare), 2)
    if any(value > plan.passes_budgets[ipu] for ipu, value in raised.items()):
        return raised
    return None


def passes_budgets(executor: Any) -> Dict[int, float]:
    """For each IPU of a cost-only run whose matmuls or convolutions ran in serial
    passes, its budget for temporaries as a share of its memory (what raising
    its available memory proportion would add to)."""
    program = executor._program
    steps = (step.to_dict() for step in program.program())
    in_passes = {step["ipu"] for step in steps if step["passes"] > 1}
    return {entry["ipu"]: entry["temporary_budget"] / entry["capacity"]
            for entry in program.first.memory_report().to_dict()["ipus"]
            if entry["ipu"] in in_passes}
