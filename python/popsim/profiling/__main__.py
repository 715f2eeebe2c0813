"""python -m popsim.profiling DIR: prints the summary of each model profile in DIR."""

import argparse
import sys
from typing import Optional, Sequence

from popsim.profiling._profile import ProfileNotFoundError, load_all


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m popsim.profiling",
        description="Summarise popsim profiles: per-IPU utilisation, idle (bubble) fraction, "
                    "stage balance, memory against the limit, and advice.")
    parser.add_argument("directory", help="the directory given to opts.enableProfiling (or "
                                          "POPSIM_PROFILE_DIR), or one model's subdirectory")
    args = parser.parse_args(argv)
    try:
        profiles = load_all(args.directory)
    except (ProfileNotFoundError, ValueError) as error:
        print(f"popsim.profiling: {error}", file=sys.stderr)
        return 2
    print("\n\n".join(profile.summary() for profile in profiles))
    return 0


if __name__ == "__main__":
    sys.exit(main())
