"""Entry point of ``python -m benchmarks.workbench_all`` (see the package docstring)."""

import sys

from benchmarks.workbench_all.driver import main

if __name__ == "__main__":
    sys.exit(main())
