"""Simulations: one module per result (Config presets, run, plot, claims), plus the harness and the CLI.

Only the CLI, notebooks and tests import this package.
"""
