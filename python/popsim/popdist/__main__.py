"""python -m popsim.popdist: prints the directory to put on PYTHONPATH so
that `import popdist` (and `import popdist.poptorch`) find popsim's PopDist
API."""

import os

print(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_shims"))
