"""``python -m popsim``: popsim's command line (``python -m popsim plan --help``)."""

import sys

from popsim.reports.plan_command import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
