"""What a compiled model reports: the execution trace of a call, the sizing report (and
popsim.sizeJob) and the pipeline planner (popsim.plan)."""
