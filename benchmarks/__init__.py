"""Repository tooling for measuring the kernels on hardware (not part of the installed ``jaxwb`` package).

Run from the repository root: ``python -m benchmarks.gpu_check`` (see :mod:`benchmarks.gpu_check`).
"""
