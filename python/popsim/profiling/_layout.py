"""Where profiles live: DIR/<kind>[_<n>]/ with fixed file names.

Each model that profiles into DIR gets its own subdirectory, named after its
kind: the first training model of the process writes into DIR/training, the
next one into DIR/training_1, and so on (likewise 'inference'). A new process
starts counting again, so re-running a script overwrites its last profile. The
core claims the directories and writes the files (csrc/profile/profile_writer.h);
this module finds them again.
"""

import os
import re
from typing import List

TRACE_FILE = "trace.json"
MEMORY_FILE = "memory.json"
REPORT_FILE = "report.html"

# A model's directory: its kind ("training", "inference") or its Options.modelName, then "_N"
# for the N-th further model of that name in the process.
_MODEL_DIR_NAME = re.compile(r"^(.+?)(_[0-9]+)?$")


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
