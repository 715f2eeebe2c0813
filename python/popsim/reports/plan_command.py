"""``python -m popsim plan SCRIPT.py:FACTORY --ipus N --global-batch B``: plans a whole job
(popsim.planJob) for people who would rather not write the call.

The factory, a function of the script called with no arguments, returns the
model, an example micro-batch (a tensor or a tuple of the model's inputs) and
the optimizer (None for inference), and optionally the job's other options.
The command prints the plan's report and writes its JSON (the chosen
configuration, the annotations and option calls that run it, every
configuration simulated) to --json FILE and a page with its charts to
--html FILE.
"""

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence, Tuple

from popsim.api.errors import Error, OptionError
from popsim.reports.job_planner import planJob


def _factory(target: str) -> Callable[[], Any]:
    script, separator, name = target.rpartition(":")
    if not separator or not script or not name:
        raise OptionError(f"python -m popsim plan: expected SCRIPT.py:FACTORY, got {target!r}.",
                          option="plan.target")
    path = Path(script)
    if not path.is_file():
        raise OptionError(f"python -m popsim plan: the script {script!r} does not exist.",
                          option="plan.target")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None, "a file path has a spec and a loader"
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))  # the script's own imports, as python runs it
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    factory = getattr(module, name, None)
    if not callable(factory):
        raise OptionError(f"python -m popsim plan: {script} has no function {name!r}.",
                          option="plan.target")
    return factory


def _job(factory: Callable[[], Any], target: str) -> Tuple[Any, Any, Any, Any]:
    made = factory()
    if not isinstance(made, tuple) or len(made) not in (3, 4):
        raise OptionError(
            f"python -m popsim plan: {target} must return (model, micro_batch, optimizer) or "
            f"(model, micro_batch, optimizer, options), got {type(made).__name__}"
            + (f" of {len(made)}" if isinstance(made, tuple) else "") + ".",
            option="plan.target")
    model, micro_batch, optimizer = made[:3]
    return model, micro_batch, optimizer, made[3] if len(made) == 4 else None


def _sizes(text: Optional[str]) -> Optional[List[int]]:
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise OptionError(f"python -m popsim plan: --micro-batch-sizes takes comma-separated "
                          f"ints such as 4,8,16; got {text!r}.",
                          option="plan.micro_batch_sizes") from None


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m popsim",
                                     description="popsim's command line.")
    commands = parser.add_subparsers(dest="command", required=True)
    plan = commands.add_parser(
        "plan", help="plan a whole job on a POD (popsim.planJob)",
        description="Plans a whole job on a POD with popsim.planJob: prints the report and "
                    "writes the plan as JSON.")
    plan.add_argument("target", metavar="SCRIPT.py:FACTORY",
                      help="a function returning (model, micro_batch, optimizer[, options])")
    plan.add_argument("--ipus", type=int, required=True, help="the POD's IPUs (16, 64, ...)")
    plan.add_argument("--global-batch", type=int, required=True,
                      help="samples per weight update (training) or per call (inference)")
    plan.add_argument("--tolerance", type=float, default=0.05,
                      help="how far (relative) the global batch may be from it (0.05)")
    plan.add_argument("--micro-batch-sizes", metavar="N,N,...",
                      help="the micro-batch sizes to try (default: the example's, a half and "
                           "a quarter of it, and twice it)")
    plan.add_argument("--json", metavar="FILE", default="popsim-plan.json",
                      help="where to write the plan as JSON (popsim-plan.json)")
    plan.add_argument("--html", metavar="FILE", default="popsim-plan.html",
                      help="where to write the plan as an HTML page with its charts "
                           "(popsim-plan.html)")
    plan.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args(list(argv))
    try:
        model, micro_batch, optimizer, options = _job(_factory(args.target), args.target)
        result = planJob(model, micro_batch, optimizer, ipus=args.ipus,
                         global_batch=args.global_batch, options=options,
                         micro_batch_sizes=_sizes(args.micro_batch_sizes),
                         tolerance=args.tolerance, progress=not args.no_progress)
    except Error as error:  # popsim's own errors say what to change: no traceback
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(result)
    Path(args.json).write_text(result.to_json() + "\n", encoding="utf-8")
    Path(args.html).write_text(result.to_html(), encoding="utf-8")
    print(f"Wrote the plan to {args.json} and {args.html}.")
    return 0 if result.fits else 1
