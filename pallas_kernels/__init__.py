"""Pallas kernels with their pure-jnp references: quant/ and attention/."""
