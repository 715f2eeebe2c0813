"""Where profiles live: DIR/<kind>[_<n>]/ with fixed file names.

Each model that profiles into DIR gets its own subdirectory, named after its
kind: the first training model of the process writes into DIR/training, the
next one into DIR/training_1, and so on (likewise 'inference'). A new process
starts counting again, so re-running a script overwrites its last profile.
"""

import os
import re
import threading
from typing import Dict, List, Optional, Tuple

TRACE_FILE = "trace.json"
MEMORY_FILE = "memory.json"
REPORT_FILE = "report.html"

KINDS = ("training", "inference")
# A model's directory: its kind ("training", "inference") or its Options.modelName, then "_N"
# for the N-th further model of that name in the process.
_MODEL_DIR_NAME = re.compile(r"^(.+?)(_[0-9]+)?$")

# (real path of DIR, kind) -> models of that kind given a subdirectory
_claimed: Dict[Tuple[str, str], int] = {}
_claim_lock = threading.Lock()


def claim_model_directory(root: str, kind: str, model_name: Optional[str] = None) -> str:
    """The next free subdirectory of `root` for a model of `kind` (named
    `model_name`, Options.modelName, if given), created."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    base = model_name or kind
    key = (os.path.realpath(root), base)
    with _claim_lock:
        index = _claimed.get(key, 0)
        _claimed[key] = index + 1
    name = base if index == 0 else f"{base}_{index}"
    path = os.path.join(root, name)
    os.makedirs(path, exist_ok=True)
    return path


def is_model_directory(path: str) -> bool:
    return any(os.path.isfile(os.path.join(path, name)) for name in (TRACE_FILE, MEMORY_FILE))


def model_directories(root: str) -> List[str]:
    """The model profile directories in `root` (itself, if it is one), sorted:
    'training' before 'training_1' before 'training_10'. A subdirectory named by
    Options.modelName counts too, by its name."""
    if is_model_directory(root):
        return [root]
    if not os.path.isdir(root):
        return []
    found = []
    for name in os.listdir(root):
        match = _MODEL_DIR_NAME.match(name)
        path = os.path.join(root, name)
        if match and is_model_directory(path):
            index = int(match.group(2)[1:]) if match.group(2) else 0
            found.append(((match.group(1), index), path))
    return [path for _, path in sorted(found)]
