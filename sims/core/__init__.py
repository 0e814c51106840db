"""The machinery every result runs through: harness (claims, execution, outputs), registry, CLI, sweep, style."""
