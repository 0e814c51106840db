"""Real attention trajectories: the trained diffusion LM denoises held-out prompts; every step's maps recorded.

``dense_runs``: LLaDA-style semi-autoregressive decoding with dense attention, sampling with one explicit key
per prompt; the input of every step (``states [N, T, L]``) is kept. ``path_nll``: the dense model's NLL of a
run's output along the run's own decoding order; ``step_nll``: the teacher-forced per-step NLL of the held-out
bytes vs the byte marginals; ``text_stats``: what the generated text looks like (whitespace, distinct bytes).
``record_maps``: for every (prompt, step, layer, head) the dense attention
pooled to ``block x block`` tiles (``true [N, T, nl, H, Qb, Kb]``, rows sum to 1) and Step-dLLM's cheap
pooled-Q/K importance (``imp``, same shape), recomputed from the states (teacher forcing: bit-identical to the
run). ``map_statistics``: what the paper's argument rests on, per prompt (block-mask overlap between steps
near, far, across a transition and against a shuffled null; mass in the top-k blocks per head).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.models import corpus
from jaxwb.models import diffusion_lm as dl
from jaxwb.sims.sparse_attention import pretrain
from jaxwb.sims.sparse_attention.config import Config
from jaxwb.theory import sparse_attention as sa


def get_model(cfg: Config) -> dl.DiffusionLM:
    """The trained tiny diffusion LM of ``cfg``: with ``cfg.denoiser == "train"`` trained on first use, then loaded
    from the weight cache; with ``"shipped"`` the quick preset's weights shipped in the package
    (``pretrain.load_shipped``: configuration and sha256 checked)."""
    if cfg.denoiser == "shipped":
        return pretrain.load_shipped(cfg, "quick")
    return dl.trained_diffusion_lm(cfg.model, cfg.train, desc="train diffusion LM")[0]


WHITESPACE = (9, 10, 32)  # tab, newline, space


def held_out(cfg: Config, n: int, *, key) -> np.ndarray:
    """``n`` distinct random non-overlapping windows of ``seq_len`` bytes of the held-out split: int32 [n, L].

    Only code-dense windows are eligible: those whose whitespace fraction (tab, newline, space) is at most its
    ``cfg.max_whitespace_quantile`` quantile over all held-out windows (1.0: every window). The stdlib corpus is
    ~37% whitespace (indentation), and a window that is mostly indentation makes both the denoiser and the
    unigram baseline look alike."""
    _, val = corpus.load_corpus()
    nwin = len(val) // cfg.seq_len
    win = np.asarray(val[: nwin * cfg.seq_len]).reshape(nwin, cfg.seq_len)
    ws = np.isin(win, WHITESPACE).mean(axis=1)
    eligible = np.flatnonzero(ws <= np.quantile(ws, cfg.max_whitespace_quantile))
    if n > eligible.size:
        raise ValueError(f"asked for {n} held-out windows, only {eligible.size} eligible ones exist")
    idx = np.sort(eligible[np.asarray(jax.random.choice(key, eligible.size, (n,), replace=False))])
    return win[idx].astype(np.int32)


@eqx.filter_jit
def _accuracy(model, x, ratio, key):
    return dl.masked_accuracy(model, x, ratio, key=key)


def denoising_quality(model, cfg: Config, *, key) -> dict:
    """Masked-token accuracy per held-out window at ``eval_ratio`` vs the unigram baseline (always predict the
    most frequent training byte), on the same masked positions."""
    kx, km = jax.random.split(key)
    x = jnp.asarray(held_out(cfg, cfg.eval_windows, key=kx))
    train, _ = corpus.load_corpus()
    mode = int(np.argmax(np.bincount(train, minlength=256)))
    acc = _accuracy(model, x, cfg.eval_ratio, km)
    _, masked = dl.mask_tokens(x, jnp.full((x.shape[0],), cfg.eval_ratio), key=km)  # same positions
    uni = jnp.sum(masked & (x == mode), axis=1) / jnp.maximum(jnp.sum(masked, axis=1), 1)
    return {"acc": acc, "unigram_acc": uni}


def decode_keys(n: int, *, key) -> jax.Array:
    """One explicit sampling key per prompt (the dense run of prompt i and every sparse run of it share key i)."""
    return jax.random.split(key, n)


def dense_runs(model, truth: np.ndarray, cfg: Config, keys, *, temperature=None, remasking=None):
    """Decode every prompt ``truth[:, :prompt_len]`` densely, prompt i with ``keys[i]`` at ``temperature`` with
    ``remasking`` (defaults: ``cfg``'s; temperature 0 = argmax): (final [N, L], states [N, T, L])."""
    temp = cfg.temperature if temperature is None else temperature
    remask = cfg.remasking if remasking is None else remasking

    @eqx.filter_jit
    def go(m, prompts, keys):
        def one(p, k):
            return dl.generate(
                m, p, cfg.seq_len, steps=cfg.steps, block_len=cfg.gen_block, key=k, temperature=temp, remasking=remask
            )

        return jax.vmap(one)(prompts, keys)

    return go(model, jnp.asarray(truth[:, : cfg.prompt_len]), keys)


def committed(states, final):
    """Which positions each step commits: ``bool [..., T, L]`` for states [..., T, L] and final [..., L]."""
    nxt = jnp.concatenate([states[..., 1:, :], final[..., None, :]], axis=-2)
    return (states == dl.MASK) & (nxt != dl.MASK)


def path_nll(model, states, final):
    """The dense model's NLL of a run's own output along its own decoding order, nats per generated byte:
    ``-(1/G) sum_t sum_{i committed at t} log p_dense(final_i | states_t)`` for states [T, L], final [L]
    (each committed byte scored by the dense model given exactly the state the run had when it chose it)."""
    logp = jax.vmap(lambda x: jax.nn.log_softmax(model(x), axis=-1))(states)  # [T, L, 256]
    lp = jnp.take_along_axis(logp, jnp.broadcast_to(final, states.shape)[..., None], axis=-1)[..., 0]
    c = committed(states, final)
    return -jnp.sum(jnp.where(c, lp, 0.0)) / jnp.maximum(jnp.sum(c), 1)


def path_nlls(model, states, final):
    """``path_nll`` over any leading axes: states [..., T, L], final [..., L] -> [...]."""

    @eqx.filter_jit
    def go(m, s, f):
        lead = f.shape[:-1]
        s2, f2 = s.reshape(-1, *s.shape[-2:]), f.reshape(-1, f.shape[-1])
        return jax.lax.map(lambda a: path_nll(m, *a), (s2, f2)).reshape(lead)

    return go(model, jnp.asarray(states), jnp.asarray(final))


def unigram_logp() -> np.ndarray:
    """log p of each byte under the training split's byte frequencies (add-one smoothed): float64 [256]."""
    train, _ = corpus.load_corpus()
    c = np.bincount(np.asarray(train), minlength=256).astype(np.float64) + 1.0
    return np.log(c / c.sum())


def step_nll(model, states, truth, cfg: Config):
    """The denoiser's NLL per denoising step, teacher-forced: state t of the run with its committed positions
    holding the *held-out* bytes (the run's unmasking order, the true text), NLL of the held-out bytes at the
    still-masked positions. Returns (model [N, T], unigram [N, T]): the same positions under the training
    split's byte frequencies (the baseline a model that learned nothing but the byte marginals reaches)."""
    truth = jnp.asarray(truth)
    tf = jnp.where(states == dl.MASK, dl.MASK, truth[:, None, :])  # [N, T, L]
    where = tf == dl.MASK
    uni = jnp.asarray(-unigram_logp(), jnp.float32)[truth]  # [N, L]

    @eqx.filter_jit
    def go(m, tf, where):
        def one(x, w, t):
            ce = -jnp.take_along_axis(jax.nn.log_softmax(m(x), axis=-1), t[:, None], axis=-1)[:, 0]
            return jnp.sum(jnp.where(w, ce, 0.0)) / jnp.maximum(jnp.sum(w), 1)

        return jax.vmap(lambda xs, ws, t: jax.vmap(lambda x, w: one(x, w, t))(xs, ws))(tf, where, truth)

    den = jnp.maximum(jnp.sum(where, axis=-1), 1)
    return go(model, tf, where), jnp.sum(jnp.where(where, uni[:, None, :], 0.0), axis=-1) / den


def text_stats(tokens, cfg: Config) -> dict:
    """Per sequence [N] over the generated span: whitespace fraction, number of distinct bytes, longest run of
    one repeated byte."""
    g = np.asarray(tokens)[:, cfg.prompt_len :]
    runs = []
    for row in g:
        edges = np.flatnonzero(np.diff(row) != 0)
        runs.append(int(np.max(np.diff(np.concatenate([[-1], edges, [row.size - 1]])))))
    return {
        "whitespace": np.isin(g, WHITESPACE).mean(axis=1),
        "distinct": np.asarray([np.unique(r).size for r in g]),
        "longest_run": np.asarray(runs),
    }


def heads_first(x):
    """[L, H, D] -> [H, L, D]."""
    return jnp.transpose(x, (1, 0, 2))


def _maps_one(model, x, block):
    """Per layer: dense attention pooled to blocks and pooled-Q/K importance, each [nl, H, Qb, Kb]."""
    true, imp = [], []
    for q, k, _ in model.qkv(x):
        qh, kh = heads_first(q), heads_first(k)
        true.append(sa.block_attention_mass(qh, kh, block))
        imp.append(sa.block_importance(qh, kh, block_q=block, block_k=block))
    return jnp.stack(true), jnp.stack(imp)


def step_qkv(model, xs):
    """Every layer's q, k, v, heads first, for states xs [N, L]: float32 [N, nl, 3, H, L, Dh]."""

    @eqx.filter_jit
    def go(m, xs):
        one = lambda x: jnp.stack([jnp.stack([heads_first(a) for a in qkv]) for qkv in m.qkv(x)])
        return jax.vmap(one)(xs)

    return go(model, xs)


def record_maps(model, states, cfg: Config):
    """``true, imp [N, T, nl, H, Qb, Kb]`` for states [N, T, L]."""

    @eqx.filter_jit
    def go(m, s):
        return jax.vmap(jax.vmap(lambda x: _maps_one(m, x, cfg.block)))(s)

    return go(model, states)


def topk_masks(maps, k: int):
    """Top-k blocks per row (ties to the lower index), bool, same shape as ``maps [..., Qb, Kb]``."""
    rank = jnp.argsort(jnp.argsort(-maps, axis=-1, stable=True), axis=-1, stable=True)
    return rank < k


def map_statistics(true, cfg: Config, *, key) -> dict:
    """Per prompt (axis 0): overlaps of top-k block masks (k = ``main_k``) averaged over layers, heads, rows.

    ``within``   consecutive steps t -> t+1 inside a decoding block (t+1 not a transition)
    ``across``   t -> t+1 where t+1 is a transition (decoding moves to the next block)
    ``far``      pairs of steps at least ``far_lag`` apart
    ``null``     t -> t+1 (within) with step t+1's map shuffled over key blocks (independent per row): chance
    ``topk_mass [N, T, nl, H]``: mass in the top-k blocks, averaged over rows (head concentration; the head-spread
    test and the figure average it over steps).
    ``overlap_lag [N, T]``: overlap of step t with step 0..T-1 averaged over t (the lag profile, for the figure).
    """
    T = cfg.steps
    true = np.asarray(true)
    m = _topk_np(true, cfg.main_k)  # [N, T, nl, H, Qb, Kb]
    # overlap |a & b| / |a| (``jaxwb.theory.sparse_attention.mask_overlap``), in numpy: these are many small arrays
    ov = lambda a, b: ((a & b).sum((-2, -1)) / np.maximum(a.sum((-2, -1)), 1)).mean(axis=(-2, -1))
    cons = ov(m[:, :-1], m[:, 1:])  # [N, T-1]: t -> t+1
    trans = np.zeros(T - 1, bool)
    trans[[t - 1 for t in cfg.transitions]] = True
    # null: shuffle each row of step t+1's map over key blocks before taking its top-k
    rng = np.random.default_rng(int(jax.random.randint(key, (), 0, 2**31 - 1)))
    shuffled = np.take_along_axis(true[:, 1:], rng.random(true[:, 1:].shape).argsort(axis=-1), axis=-1)
    null = ov(m[:, :-1], _topk_np(shuffled, cfg.main_k))[:, ~trans]
    pairs = [(t, s) for t in range(T) for s in range(t + cfg.far_lag, T)]
    ta, sb = (np.asarray(x) for x in zip(*pairs, strict=True))
    far = ov(m[:, ta], m[:, sb])
    lag = np.stack([ov(m[:, : T - d], m[:, d:]).mean(axis=1) for d in range(T)], axis=1)  # [N, T]
    return {
        "within": cons[:, ~trans].mean(axis=1),
        "across": cons[:, trans].mean(axis=1),
        "far": far.mean(axis=1),
        "null": null.mean(axis=1),
        "per_step": cons,
        "overlap_lag": lag,
        "topk_mass": np.asarray(sa.topk_mass(jnp.asarray(true), cfg.main_k)),
    }


def _topk_np(maps, k: int):
    """``topk_masks`` in numpy (same ranks: stable sort, ties to the lower index)."""
    rank = np.argsort(np.argsort(-maps, axis=-1, kind="stable"), axis=-1, kind="stable")
    return rank < k


def head_spread_test(topk_mass, n_perm: int, *, seed: int = 0) -> dict:
    """Do heads differ in concentration beyond prompt-to-prompt noise? A permutation test.

    Statistic: variance over heads (all layers) of the per-head mean (over prompts) top-k mass. Null: the head
    labels are exchangeable within each prompt (shuffled independently per prompt), which keeps every
    prompt's values but destroys any head identity. Returns the statistic, the null's mean and 95% quantile and
    the one-sided permutation p-value.
    """
    x = np.asarray(topk_mass, np.float64).reshape(topk_mass.shape[0], -1)  # [N, heads]
    stat = float(np.var(x.mean(axis=0)))
    rng = np.random.default_rng(seed)
    null = np.empty(n_perm)
    for i in range(n_perm):
        xs = np.take_along_axis(x, rng.random(x.shape).argsort(axis=1), axis=1)
        null[i] = np.var(xs.mean(axis=0))
    return {
        "stat": stat,
        "null_mean": float(null.mean()),
        "null_q95": float(np.quantile(null, 0.95)),
        "p_value": float((1 + np.sum(null >= stat)) / (1 + n_perm)),
    }
