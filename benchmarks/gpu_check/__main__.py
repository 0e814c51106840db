"""``python -m benchmarks.gpu_check``: the prepared GPU check (``--dry-run`` on CPU)."""

from benchmarks.gpu_check.cli import main

if __name__ == "__main__":
    main()
