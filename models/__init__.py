"""Small Equinox models, the shipped-corpus loader and optax training loops."""
