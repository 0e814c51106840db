"""One layer, end to end: codebook (scales chosen from the float weight BEFORE any solve), solver, codes.

``quantize_layer(w, h, fmt, method)`` is what ``jaxwb.pallas_kernels.quantize_model(..., method=...)`` and the
``mpq`` result call: ``fmt`` "int" (INT-``bits``, groups of ``group``) or a kernel format ("nvfp4", "mxfp4"),
``method`` one of :data:`METHODS`.
"""

from __future__ import annotations

from jaxtyping import Array, ArrayLike, Float, Int

from jaxwb.theory.mpq.codebooks import Codebook, fp4_codebook, int_codebook
from jaxwb.theory.mpq.message_passing import mpq
from jaxwb.theory.mpq.solvers import gptq, ldlq, rtn

METHODS = ("rtn", "gptq", "ldlq", "mpq")


def make_codebook(w: Float[ArrayLike, "m d"], fmt: str, *, bits: int = 4, group: int = 32) -> Codebook:
    """The codebook of ``w`` in ``fmt`` ("int": :func:`int_codebook`; "nvfp4"/"mxfp4": :func:`fp4_codebook`)."""
    if fmt == "int":
        return int_codebook(w, bits=bits, group=group)
    if fmt in ("nvfp4", "mxfp4"):
        return fp4_codebook(w, fmt)
    raise ValueError(f"fmt must be 'int', 'nvfp4' or 'mxfp4', got {fmt!r}")


def quantize_layer(
    w: Float[ArrayLike, "m d"],
    h: Float[ArrayLike, "d d"] | None,
    fmt: str,
    method: str,
    *,
    bits: int = 4,
    group: int = 32,
    beta: float = 4.0,
    iters: int = 30,
    rho: float = 0.5,
    block: int = 1,
) -> tuple[Int[Array, "m d"], Codebook]:
    """Codes of ``w`` by ``method`` on the damped proxy Hessian ``h`` (unused by "rtn", may be None) and the
    codebook they index. MPQ's ``beta`` (relative), ``iters``, ``rho`` and ``block`` as in
    :func:`jaxwb.theory.mpq.message_passing.mpq`."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    book = make_codebook(w, fmt, bits=bits, group=group)
    if method == "rtn":
        return rtn(w, book), book
    if h is None:
        raise ValueError(f"h (the proxy Hessian) is required for method={method!r}")
    if method == "gptq":
        return gptq(w, h, book), book
    if method == "ldlq":
        return ldlq(w, h, book), book
    return mpq(w, h, book, beta=beta, iters=iters, rho=rho, block=block), book
