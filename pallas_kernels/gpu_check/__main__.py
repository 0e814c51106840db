"""``python -m jaxwb.pallas_kernels.gpu_check``: the prepared GPU check (``--dry-run`` on CPU)."""

from jaxwb.pallas_kernels.gpu_check.cli import main

if __name__ == "__main__":
    main()
