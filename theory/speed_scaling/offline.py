"""Exact offline profiles: the YDS optimum (Yao, Demers, Shenker 1995) and the exact AVR profile."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import ArrayLike, Float

from jaxwb.theory.speed_scaling.model import YDS, Profile, check_instance


@jax.jit
def yds_jit(release, deadline, work):
    """The jitted YDS algorithm behind ``yds`` (no input checks)."""
    n = release.shape[0]
    dtype = jnp.result_type(release, deadline, work, float)
    release, deadline, work = (jnp.asarray(a, dtype) for a in (release, deadline, work))
    edges = jnp.sort(jnp.concatenate([release, deadline]))
    seg_len = jnp.diff(edges)
    pos_r = jnp.searchsorted(edges, release, side="left")
    pos_d = jnp.searchsorted(edges, deadline, side="left")
    by_r = jnp.argsort(release, stable=True)  # job at release-rank p
    by_d = jnp.argsort(deadline, stable=True)  # job at deadline-rank q
    rank_r = jnp.argsort(by_r)
    rank_d = jnp.argsort(by_d)
    # W[p, q] = sum_j w_j [rank_r(j) >= p] [rank_d(j) <= q]: one (n, n) x (n, n) product per round
    ranks = jnp.arange(n)
    after_r = (rank_r[:, None] >= ranks[None, :]).astype(dtype)
    before_d = (rank_d[:, None] <= ranks[None, :]).astype(dtype)

    def body(state):
        alive, covered, seg_speed, job_speed, crit, rnd = state
        # collapsed coordinate of every edge: edges[0] + uncovered length before it
        U = edges[0] + jnp.concatenate([jnp.zeros(1, dtype), jnp.cumsum(jnp.where(covered, 0.0, seg_len))])
        rc, dc = U[pos_r], U[pos_d]
        # W[p, q] = work of alive jobs with release-rank >= p and deadline-rank <= q
        W = after_r.T @ (jnp.where(alive, work, 0.0)[:, None] * before_d)
        a, b = rc[by_r], dc[by_d]
        length = b[None, :] - a[:, None]
        ok = (length > 0) & alive[by_r][:, None] & alive[by_d][None, :]
        dens = jnp.where(ok, W / jnp.where(ok, length, 1.0), -1.0)
        flat = jnp.argmax(dens)
        p, q = flat // n, flat % n
        g, A, B = dens[p, q], a[p], b[q]
        inside = alive & (rc >= A) & (dc <= B)
        seg_in = (~covered) & (U[:-1] >= A) & (U[1:] <= B) & (seg_len > 0)
        return (
            alive & ~inside,
            covered | seg_in,
            jnp.where(seg_in, g, seg_speed),
            jnp.where(inside, g, job_speed),
            crit.at[rnd].set(g),
            rnd + 1,
        )

    def cond(state):
        return jnp.any(state[0]) & (state[5] < n)

    z = jnp.zeros(n, dtype)
    state = (work > 0, jnp.zeros(2 * n - 1, bool), jnp.zeros(2 * n - 1, dtype), z, z, jnp.int32(0))
    _, _, seg_speed, job_speed, crit, rnd = lax.while_loop(cond, body, state)
    return YDS(Profile(edges, seg_speed), job_speed, crit, rnd)


def yds(release: Float[ArrayLike, " n"], deadline: Float[ArrayLike, " n"], work: Float[ArrayLike, " n"]) -> YDS:
    """Exact YDS optimum of the instance (release, deadline, work), each of shape (n,).

    Each round extracts the max-density interval [r_i, d_k] (densities of all O(n^2) candidate intervals from
    one 2-D prefix sum over (release rank, deadline rank), so a round is O(n^2) and the algorithm O(n^3) in
    the worst case of n rounds), assigns its density to the uncovered elementary segments it covers, removes
    its jobs and collapses it (collapsed coordinates = uncovered length before each edge). Returns ``YDS``;
    the optimal energy is ``energy(yds(...).profile, alpha)``. Not the O(n^2 log n) algorithm of Li, Yao and
    Yao (2006)."""
    check_instance(release, deadline, work)
    return yds_jit(jnp.asarray(release), jnp.asarray(deadline), jnp.asarray(work))


def avr_profile(
    release: Float[ArrayLike, " n"], deadline: Float[ArrayLike, " n"], work: Float[ArrayLike, " n"]
) -> Profile:
    """Exact AVR profile on the sorted release/deadline times: s = sum of densities w_j / (d_j - r_j) of the
    jobs whose window covers the elementary segment. edges (2n,), speed (2n - 1,)."""
    check_instance(release, deadline, work)
    release, deadline, work = (jnp.asarray(a, jnp.result_type(a, float)) for a in (release, deadline, work))
    edges = jnp.sort(jnp.concatenate([release, deadline]))
    dens = work / (deadline - release)
    cover = (release[None, :] <= edges[:-1, None]) & (deadline[None, :] >= edges[1:, None])
    return Profile(edges, cover.astype(dens.dtype) @ dens)
