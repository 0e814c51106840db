"""The four top-level folders of the repository are one import namespace, ``jaxwb``: ``theory/`` installs as
``jaxwb.theory``, ``models/`` as ``jaxwb.models``, ``pallas_kernels/`` as ``jaxwb.pallas_kernels`` and ``sims/`` as
``jaxwb.sims`` (setuptools' ``package_dir``), so the distribution claims no generic top-level name. Everything
else about the package is in pyproject.toml."""

from setuptools import find_packages, setup

NAMESPACE = "jaxwb"
ROOTS = ("theory", "models", "pallas_kernels", "sims")

setup(
    packages=[f"{NAMESPACE}.{p}" for p in find_packages(include=[f"{r}" for r in ROOTS] + [f"{r}.*" for r in ROOTS])],
    package_dir={f"{NAMESPACE}.{r}": r for r in ROOTS},
)
