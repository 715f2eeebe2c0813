"""Runs the benchmarks whose figures the documentation shows and writes their results to
docs/results/*.json, from which the docs' tables are generated (the ``results-table``
directive of docs/_ext/popsim_docs.py), so that no benchmark figure is typed by hand.

- inference.json, training.json: bench_inference.py and bench_training.py for the tutorial's
  MNIST network and ResNet-18, on 1 and 2 host threads, with this CPU's instruction set and
  capped at AVX2 (each row one run, popsim and eager PyTorch in the same process);
- pipeline.json, replication.json (and replication_simulated.json), dataloader.json,
  elementwise.json, ctc.json, half.json, kernels.json: the other benchmarks of docs/performance.md, with
  this CPU's instruction set and capped at AVX2 (CTC also at the x86-64 baseline), one row
  per configuration;
- fidelity.json: benchmarks/fidelity.py, the published IPU jobs sized cost-only;
- plan.json: benchmarks/plan.py, the pipeline planner against hand-written splits;
- plan_job.json: benchmarks/plan.py --jobs, the whole-job planner against Graphcore's
  configurations of the published jobs;
- size_torchvision.json: benchmarks/size_torchvision.py, torchvision's models sized for training
  at their standard input sizes;
- machine.json: the CPU, cores, PyTorch version and date of the run.

    .venv/bin/python benchmarks/record_results.py [--only NAME ...]

Takes about 12 minutes on a 2-core machine; run it on an otherwise idle machine.
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent / "docs" / "results"
THROUGHPUT_RUNS = {"inference": "bench_inference.py", "training": "bench_training.py"}
ISAS = ("native", "avx2")
ALL = ["inference", "training", "pipeline", "replication", "dataloader", "elementwise", "ctc",
       "half", "kernels", "fidelity", "plan", "plan_job", "size_torchvision"]


def run_json(script: str, *arguments: str) -> Any:
    """The JSON a benchmark prints with --json."""
    command = [sys.executable, str(HERE / script), *arguments, "--json"]
    print("running", " ".join(command[1:]), flush=True)
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True,
                          env={**os.environ, "POPSIM_PROGRESS": "0"})
    return json.loads(done.stdout)


def throughput_rows(script: str) -> List[Dict[str, Any]]:
    rows = []
    for model in ("mnist", "resnet18"):
        for threads in (1, 2):
            for isa in ("native", "avx2"):
                row = run_json(script, "--model", model, "--threads", str(threads),
                               "--isa", isa)
                row["isa"] = isa_name(isa)
                rows.append(row)
    return rows


def isa_name(isa: str) -> str:
    return {"native": native_isa(), "avx2": "AVX2", "baseline": "SSE4.1"}[isa]


def pipeline_rows() -> List[Dict[str, Any]]:
    return [{**run_json("bench_pipeline.py", "--isa", isa), "isa": isa_name(isa)}
            for isa in ISAS]


def replication_rows() -> Dict[str, List[Dict[str, Any]]]:
    """Wall-clock rows per ISA and configuration, and the simulated rows (which do not depend
    on the host's ISA) from the first run."""
    wall, simulated = [], []
    for isa in ISAS:
        results = run_json("bench_replication.py", "--isa", isa)["results"]
        wall += [{"configuration": name, "isa": isa_name(isa), **row}
                 for name, row in results["wall"].items()]
        if not simulated:
            simulated = [{"configuration": name, **row}
                         for name, row in results["simulated"].items()]
    return {"replication": wall, "replication_simulated": simulated}


def elementwise_rows() -> List[Dict[str, Any]]:
    rows = []
    for isa in ISAS:
        ops = run_json("bench_elementwise.py", "--isa", isa)["ops"]
        rows += [{"op": name, "isa": isa_name(isa), **row} for name, row in ops.items()]
    return rows


def ctc_rows() -> List[Dict[str, Any]]:
    rows = []
    for isa in ISAS + ("baseline",):
        results = run_json("bench_ctc_loss.py", "--isa", isa)["results"]
        rows += [{"part": name, "isa": isa_name(isa), **row} for name, row in results.items()]
    return rows


def kernel_rows() -> List[Dict[str, Any]]:
    """One row per op: the kernels it runs with this CPU's instruction set and capped at AVX2."""
    rows: Dict[str, Dict[str, Any]] = {}
    for isa in ISAS:
        audit = run_json("kernel_audit.py", "--isa", isa)
        for op, implementations in audit["ops"].items():
            rows.setdefault(op, {"op": op, "native": "-", "avx2": "-"})[isa] = "; ".join(
                implementations)
    return [rows[op] for op in sorted(rows)]


def half_rows() -> List[Dict[str, Any]]:
    return [{**run_json("bench_half.py", "--model", model, "--isa", isa), "isa": isa_name(isa)}
            for model in ("mnist", "resnet18", "mixed_precision") for isa in ISAS]


def native_isa() -> str:
    flags = Path("/proc/cpuinfo").read_text().split()
    return "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE4.1"


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def write(name: str, value: Any) -> None:
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")
    print("wrote", path.relative_to(HERE.parent), flush=True)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", choices=ALL, help="only these results")
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    collected = {"pipeline": pipeline_rows, "elementwise": elementwise_rows, "ctc": ctc_rows,
                 "half": half_rows, "kernels": kernel_rows}
    for name in args.only or ALL:
        if name in THROUGHPUT_RUNS:
            write(name, throughput_rows(THROUGHPUT_RUNS[name]))
        elif name in collected:
            write(name, collected[name]())
        elif name == "replication":
            for file, rows in replication_rows().items():
                write(file, rows)
        elif name == "dataloader":
            write(name, [run_json("bench_dataloader.py")])
        elif name == "plan_job":
            path = RESULTS / f"{name}.json"
            print("running plan.py --jobs", flush=True)
            subprocess.run([sys.executable, str(HERE / "plan.py"), "--jobs", "--json", str(path)],
                           check=True, env={**os.environ, "POPSIM_PROGRESS": "0"})
            print("wrote", path.relative_to(HERE.parent), flush=True)
        else:
            path = RESULTS / f"{name}.json"
            print(f"running {name}.py", flush=True)
            subprocess.run([sys.executable, str(HERE / f"{name}.py"), "--json", str(path)],
                           check=True, env={**os.environ, "POPSIM_PROGRESS": "0"})
            print("wrote", path.relative_to(HERE.parent), flush=True)
    import torch  # after the benchmarks, which cap the ISA before torch loads

    write("machine", {"cpu": cpu_name(), "cores": os.cpu_count(), "isa": native_isa(),
                      "torch": torch.__version__, "date": datetime.date.today().isoformat()})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
