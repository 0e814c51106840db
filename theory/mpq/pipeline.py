"""One layer, end to end: codebook (scales chosen from the float weight BEFORE any solve), solver, codes.

``quantize_layer(w, h, fmt, method)`` is what ``jaxwb.pallas_kernels.quantize_model(..., method=...)`` and the
``mpq`` result call: ``fmt`` "int" (INT-``bits``, groups of ``group``) or a kernel format ("nvfp4", "mxfp4"),
``method`` one of :data:`METHODS`.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from jaxwb.theory.mpq import checks as c
from jaxwb.theory.mpq.codebooks import Codebook, fp4_codebook, int_codebook
from jaxwb.theory.mpq.message_passing import ANNEAL, BETA, ITERS, RHO, check_mpq_options, mpq
from jaxwb.theory.mpq.solvers import gptq, ldlq, rtn

METHODS = ("rtn", "gptq", "ldlq", "mpq")


def make_codebook(w: Float[ArrayLike, "m d"], fmt: str, *, bits: int = 4, group: int = 32) -> Codebook:
    """The codebook of ``w`` in ``fmt`` ("int": :func:`int_codebook`; "nvfp4"/"mxfp4": :func:`fp4_codebook`).

    Checked: ``fmt`` one of those; ``w``, ``bits``, ``group`` as the codebook checks them (``bits`` and ``group``
    only for "int")."""
    if not isinstance(fmt, str):
        raise ValueError(f"fmt must be 'int', 'nvfp4' or 'mxfp4', got {fmt!r}")
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
    beta: float = BETA,
    iters: int = ITERS,
    rho: float = RHO,
    anneal: float = ANNEAL,
    precision: str = "diagonal",
    start: str = "best",
    block: int = 1,
) -> tuple[Int[Array, "m d"], Codebook]:
    """Codes of ``w`` by ``method`` on the damped proxy Hessian ``h`` (unused by "rtn", may be None) and the
    codebook they index. MPQ's ``beta`` (relative), ``iters``, ``rho``, ``anneal``, ``precision``, ``start`` and
    ``block`` as in :func:`jaxwb.theory.mpq.message_passing.mpq`, with its defaults (diagonal VAMP annealed from
    beta/100 to beta = 1024 over 30 iterations, rho 0.5, start "best").

    Checked: ``method`` one of :data:`METHODS`; ``w``, ``fmt``, ``bits``, ``group`` as :func:`make_codebook`;
    ``h`` required by every method but "rtn" and then symmetric positive definite (d, d) (for "rtn" it may be
    None, else it must be a finite (d, d) array); ``beta`` finite and > 0, ``iters`` and ``block`` positive
    integers, ``rho`` and ``anneal`` in (0, 1], ``precision`` and ``start`` one of their names, whichever the
    method (MPQ's options are checked for every method, so that a wrong value is never silently ignored)."""
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    check_mpq_options(beta, iters, rho, anneal, precision, start)
    c.int_option("block", block)
    book = make_codebook(w, fmt, bits=bits, group=group)
    if method == "rtn":
        if h is not None:
            c.hessian("h", h, np.shape(w)[1], definite=None, why=" (d = w.shape[1])")
        return rtn(w, book), book
    if h is None:
        raise ValueError(f"h (the proxy Hessian) is required for method={method!r}")
    if method == "gptq":
        return gptq(w, h, book), book
    if method == "ldlq":
        return ldlq(w, h, book), book
    return (
        mpq(w, h, book, beta=beta, iters=iters, rho=rho, anneal=anneal, precision=precision, start=start, block=block),
        book,
    )
