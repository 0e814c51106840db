"""``python -m benchmarks.workbench_all``: every full preset on one accelerator, one result per process, each with
its own time limit, the record saved after every result, and each claim's outcome compared with the committed
CPU run (``figures/<name>/claims.json``). Writes ``figures/workbench_all/gpu.json`` (or ``--record``).

``--dry-run`` runs the smallest result's quick preset on the CPU into a temporary folder: the suite's check that
the script works where no accelerator is lent.
"""
