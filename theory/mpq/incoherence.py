"""Incoherence processing (random Hadamard rotations on both sides of the weight), as QuIP / QuIP# compose it
with a rounding solver and as the MPQ seed abstract says MPQ composes with it ("incoherence processing (random
Hadamard rotations)").

For a layer y = W x with W (m, d) and proxy Hessian H (d, d): with orthogonal U (m, m) and V (d, d),
    W~ = U W V^T,   H~ = V H V^T,   quantize W~ against H~ (any solver, any codebook of W~),   W_q = U^T Q~ V.
The layer objective is unchanged by the rotations: tr((W - W_q) H (W - W_q)^T) = tr((W~ - Q~) H~ (W~ - Q~)^T)
(Chee et al., QuIP, NeurIPS 2023, Sec. 4 and Alg. 1; Tseng et al., QuIP#, ICML 2024, Sec. 3: the random Hadamard
transform, RHT). What changes is what rounding sees: the rotated weight's entries and H~'s diagonal are spread
evenly (incoherent), so per-group scales and one-coordinate-at-a-time solvers lose less.

The RHT of size n is S_n = Had_n diag(s) / sqrt(n) with s Rademacher and Had_n a Hadamard matrix (entries +-1,
Had Had^T = n I): Sylvester's for n a power of two, and for n = 2^a (q + 1) the Kronecker product of Sylvester's
2^a with Paley's construction I of order q + 1 (q a prime = 3 mod 4: 12, 20, 24, 44, 48, 60, ...; QuIP# pads
or uses such small Hadamard factors the same way), which covers e.g. the tiny LM's 192 outputs (12 x 16).

Checked (``ValueError`` naming the parameter): ``n`` a positive integer of a supported form; ``w`` (m, d) and ``h``
(d, d) finite and real, ``h`` symmetric; keys PRNG keys; ``q`` (m, d) finite; ``u`` (m, m) and ``v`` (d, d)
finite, real and orthogonal to 1e-4 (max |u u^T - I|).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from jaxwb.theory import validate as val
from jaxwb.theory.mpq import checks as c

ORTHO_TOL = 1e-4  # max |u u^T - I| accepted by :func:`coherent`


def _is_prime(q: int) -> bool:
    return q >= 2 and all(q % p for p in range(2, int(q**0.5) + 1))


def _paley(q: int) -> np.ndarray:
    """Paley construction I: a Hadamard matrix of order q + 1 for a prime q = 3 mod 4 (entries +-1)."""
    r = np.arange(q)
    squares = {int(x * x % q) for x in range(1, q)}
    chi = np.array([0] + [1 if k in squares else -1 for k in range(1, q)])
    jac = chi[(r[None, :] - r[:, None]) % q]  # Jacobsthal matrix Q_ij = chi(j - i), antisymmetric
    s = np.zeros((q + 1, q + 1), np.int64)
    s[0, 1:] = 1
    s[1:, 0] = -1
    s[1:, 1:] = jac
    return s + np.eye(q + 1, dtype=np.int64)


def _factor(n: int) -> tuple[int, int] | None:
    """(2^a, b) with n = 2^a b and b = 1 or b = q + 1 for a prime q = 3 mod 4 (the smallest such b), else None."""
    best = None
    for a in range(n.bit_length()):
        if n % (2**a):
            break
        b = n // 2**a
        if b == 1 or (b % 4 == 0 and _is_prime(b - 1) and (b - 1) % 4 == 3):
            best = (2**a, b)  # a rises, b falls: the last one found is the smallest b
    return best


@functools.cache
def _hadamard_np(n: int) -> np.ndarray:
    two, b = _factor(n)  # type: ignore[misc]
    syl = np.ones((1, 1), np.int64)
    while syl.shape[0] < two:
        syl = np.block([[syl, syl], [syl, -syl]])
    return np.kron(syl, _paley(b - 1) if b > 1 else np.ones((1, 1), np.int64))


def hadamard(n: int) -> Float[Array, "n n"]:
    """The orthonormal Hadamard matrix Had_n / sqrt(n) (float32), Sylvester's for n = 2^a, Sylvester's 2^a
    Kronecker Paley's order q + 1 for n = 2^a (q + 1), q a prime = 3 mod 4 (module docstring).

    Checked: ``n`` a positive integer of one of those forms (e.g. 1, 2, 4, 12, 20, 24, 44, 192, 768; not 6, 28
    or 36)."""
    c.int_option("n", n)
    if _factor(int(n)) is None:
        raise ValueError(
            f"n must be 2^a or 2^a (q + 1) with q a prime = 3 mod 4 (a Sylvester x Paley Hadamard size, e.g. 12, "
            f"20, 24, 44, 192), got {n!r}"
        )
    return jnp.asarray(_hadamard_np(int(n)) / np.sqrt(n), jnp.float32)


def rht(n: int, *, key: jax.Array) -> Float[Array, "n n"]:
    """The random Hadamard transform S = Had_n diag(s) / sqrt(n), s Rademacher from ``key`` (orthogonal).

    Checked: ``n`` as :func:`hadamard`; ``key`` a PRNG key."""
    val.prng_key("key", key)
    had = hadamard(n)
    return had * jax.random.rademacher(key, (int(n),), dtype=jnp.float32)[None, :]


def incoherent(w: Float[ArrayLike, "m d"], h: Float[ArrayLike, "d d"], *, key: jax.Array, sides: str = "both") -> dict:
    """Incoherence processing of a layer: U = RHT(m), V = RHT(d) from ``key`` (independent signs), and
    ``w`` = U W V^T, ``h`` = V H V^T (``sides="both"``, QuIP#), or U = I (``sides="inputs"``: the inputs only).
    Returns ``w``, ``h`` (symmetrised), ``u``, ``v``; undo with :func:`coherent`.

    Checked: ``w`` a finite real (m, d) array, ``h`` a finite real symmetric (d, d) array, m and d supported by
    :func:`hadamard` (m only with ``sides="both"``), ``key`` a PRNG key, ``sides`` "both" or "inputs"."""
    c.array("w", w, ndim=2)
    m, d = np.shape(w)
    c.hessian("h", h, d, definite="symmetric", why=" (d = w.shape[1])")
    val.prng_key("key", key)
    if not isinstance(sides, str) or sides not in ("both", "inputs"):
        raise ValueError(f"sides must be one of ('both', 'inputs'), got {sides!r}")
    if _factor(int(d)) is None:
        raise ValueError(f"w.shape[1] must be a size hadamard supports (2^a or 2^a (q + 1)), got {d}")
    if sides == "both" and _factor(int(m)) is None:
        raise ValueError(f"w.shape[0] must be a size hadamard supports (2^a or 2^a (q + 1)), got {m}")
    ku, kv = jax.random.split(key)
    vv = rht(int(d), key=kv)
    u = rht(int(m), key=ku) if sides == "both" else jnp.eye(int(m), dtype=jnp.float32)
    wt = u @ c.as_float(w) @ vv.T
    ht = vv @ c.as_float(h) @ vv.T
    return {"w": wt, "h": 0.5 * (ht + ht.T), "u": u, "v": vv}


def _orthogonal(x):
    xp = np if isinstance(x, np.ndarray) else jnp
    return xp.max(xp.abs(x @ x.T - xp.eye(x.shape[0]))) <= ORTHO_TOL


def coherent(q: Float[ArrayLike, "m d"], u: Float[ArrayLike, "m m"], v: Float[ArrayLike, "d d"]) -> Float[Array, "m d"]:
    """The quantized weight in the layer's own basis: U^T Q~ V (the inverse of :func:`incoherent`'s rotation).

    Checked: ``q`` a finite real (m, d) array; ``u`` (m, m) and ``v`` (d, d) finite, real and orthogonal
    (max |u u^T - I| <= 1e-4)."""
    c.array("q", q, ndim=2)
    m, d = np.shape(q)
    for name, a, n in (("u", u, m), ("v", v, d)):
        c.array(name, a, ndim=2)
        c.shape_is(name, a, (n, n), f" (q has shape {(m, d)})")
        val.check(name, a, _orthogonal, f"orthogonal (max |{name} {name}^T - I| <= {ORTHO_TOL:g})")
    return c.as_float(u).T @ c.as_float(q) @ c.as_float(v)
