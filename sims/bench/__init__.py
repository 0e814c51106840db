"""Kernel benchmarks for ``workbench bench``: one module per op family (``bench(quick: bool) -> [BenchRow]``)."""
