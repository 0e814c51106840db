"""Training the tiny LM: random-window batches, cross-entropy, an optax loop as ``lax.scan`` over steps.

``train_scan`` is pure (jit/vmap-able: vmap it over learning rates and momenta for a sweep); it freezes the
parameters at the first non-finite or blown-up loss and reports ``diverged`` instead of propagating NaN.
``fit`` runs it as jitted chunks under a tqdm bar. ``trained_model`` trains on demand and caches the weights
in ``jaxwb.models.cache.cache_dir() / "tiny_lm"`` (git-ignored), keyed by a hash of the configuration.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import tempfile
from functools import partial
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from filelock import FileLock
from jaxtyping import Array, Float, Int

from jaxwb.models import corpus
from jaxwb.models.cache import cache_dir
from jaxwb.models.tiny_lm import LMConfig, TinyLM
from jaxwb.theory import validate as v


def get_batch(
    data: Int[Array, " N"], batch_size: int, ctx: int, *, key: jax.Array
) -> tuple[Int[Array, "B ctx"], Int[Array, "B ctx"]]:
    """``batch_size`` random windows of ``data``: inputs ``x[B, ctx]`` and next-token targets ``y[B, ctx]``.

    ``data`` a 1-D integer token array with at least ``ctx + 2`` tokens; every check is static (jit-safe)."""
    v.prng_key("key", key)
    v.array("data", data, ndim=1, integer=True)
    v.positive_int("batch_size", batch_size)
    v.positive_int("ctx", ctx)
    if data.shape[0] < ctx + 2:
        raise ValueError(f"data must have at least ctx + 2 = {ctx + 2} tokens, got {data.shape[0]}")
    v.prng_key("key", key)
    starts = jax.random.randint(key, (batch_size,), 0, data.shape[0] - ctx - 1)
    win = jax.vmap(lambda s: jax.lax.dynamic_slice(data, (s,), (ctx + 1,)))(starts)
    return win[:, :-1], win[:, 1:]


def loss_fn(model: TinyLM, x: Int[Array, "B T"], y: Int[Array, "B T"]) -> Float[Array, ""]:
    """Mean next-token cross-entropy (nats/token) of ``model`` on ``x[B, T]`` -> ``y[B, T]``."""
    logits = jax.vmap(model)(x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def eval_windows(data: np.ndarray, ctx: int, n_windows: int) -> tuple[Int[Array, "n ctx"], Int[Array, "n ctx"]]:
    """Deterministic evaluation set: the first ``n_windows`` non-overlapping windows of ``data`` (a 1-D integer
    token array; fewer windows when ``data`` holds fewer than ``n_windows``, at least one)."""
    v.array("data", data, ndim=1, integer=True)
    v.positive_int("ctx", ctx)
    v.positive_int("n_windows", n_windows)
    n = min(n_windows, (len(data) - 1) // ctx)
    if n < 1:
        raise ValueError(f"data must have at least ctx + 1 = {ctx + 1} tokens, got {len(data)}")
    x = np.asarray(data[: n * ctx]).reshape(n, ctx)
    y = np.asarray(data[1 : n * ctx + 1]).reshape(n, ctx)
    return jnp.asarray(x), jnp.asarray(y)


def evaluate(model: TinyLM, x: Int[Array, "n T"], y: Int[Array, "n T"], chunk: int = 64) -> Float[Array, ""]:
    """Mean cross-entropy on the evaluation windows (nats/token), computed in chunks of windows."""
    n = x.shape[0]
    m = n // chunk * chunk
    parts = []
    if m:
        xs, ys = x[:m].reshape(-1, chunk, x.shape[1]), y[:m].reshape(-1, chunk, y.shape[1])
        parts.append(jax.lax.map(lambda ab: loss_fn(model, *ab), (xs, ys)) * chunk)
    if n > m:
        parts.append(loss_fn(model, x[m:], y[m:])[None] * (n - m))
    return jnp.sum(jnp.concatenate(parts)) / n


def train_scan(
    model: TinyLM,
    optimizer: optax.GradientTransformation,
    data: Int[Array, " N"],
    *,
    key: jax.Array,
    steps: int,
    batch_size: int,
    blowup: float = 2.0,
    state=None,
    batch_loss=None,
):
    """``steps`` optimizer steps as one ``lax.scan``. Pure: jit it, vmap it over optimizer hyper-parameters.

    ``state`` = (model, opt_state, diverged, key) from a previous call resumes. The run is flagged diverged (and
    its parameters frozen) at the first step whose loss is non-finite or above ``blowup`` times the first loss.
    ``batch_loss(model, data, key, batch_size) -> scalar`` replaces the default next-token loss on random windows
    (e.g. the masked-diffusion loss of ``jaxwb.models.diffusion_lm``).
    Returns ``(state, losses[steps])``; losses after divergence are NaN.
    """
    v.prng_key("key", key)
    params, static = eqx.partition(model, eqx.is_inexact_array)
    ctx = model.config.ctx
    if state is None:
        state = (params, optimizer.init(params), jnp.asarray(False), key, jnp.asarray(jnp.inf))
    else:
        state = (eqx.partition(state[0], eqx.is_inexact_array)[0], *state[1:])

    if batch_loss is None:

        def batch_loss(m, data, kb, batch_size):
            x, y = get_batch(data, batch_size, ctx, key=kb)
            return loss_fn(m, x, y)

    def step(carry, _):
        p, opt_state, diverged, k, ref = carry
        k, kb = jax.random.split(k)
        loss, g = jax.value_and_grad(lambda q: batch_loss(eqx.combine(q, static), data, kb, batch_size))(p)
        ref = jnp.where(jnp.isinf(ref), loss, ref)
        updates, new_opt = optimizer.update(g, opt_state, p)
        new_p = optax.apply_updates(p, updates)
        bad = diverged | ~jnp.isfinite(loss) | (loss > blowup * ref)
        keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(bad, b, a), new, old)
        return (keep(new_p, p), keep(new_opt, opt_state), bad, k, ref), jnp.where(bad, jnp.nan, loss)

    (p, opt_state, diverged, key, ref), losses = jax.lax.scan(step, state, None, length=steps)
    return (eqx.combine(p, static), opt_state, diverged, key, ref), losses


def fit(
    model: TinyLM,
    optimizer: optax.GradientTransformation,
    data,
    *,
    steps: int,
    batch_size: int,
    key: jax.Array,
    chunk: int = 200,
    desc: str | None = None,
    batch_loss=None,
):
    """Train for ``steps`` steps as jitted ``lax.scan`` chunks under a tqdm bar (``desc=None`` hides it).
    ``batch_loss``: as in :func:`train_scan` (None: next-token loss).

    Returns ``(model, losses[steps], diverged)``.
    """
    v.prng_key("key", key)
    from tqdm.auto import tqdm

    v.positive_int("steps", steps)
    v.positive_int("chunk", chunk)
    data = jnp.asarray(data)

    @partial(eqx.filter_jit, donate="none")
    def run(state, n):
        return train_scan(
            state[0], optimizer, data, key=key, steps=n, batch_size=batch_size, state=state, batch_loss=batch_loss
        )

    params, _ = eqx.partition(model, eqx.is_inexact_array)
    state = (model, optimizer.init(params), jnp.asarray(False), key, jnp.asarray(jnp.inf))
    losses = []
    with tqdm(total=steps, desc=desc, disable=desc is None) as bar:
        done = 0
        while done < steps:
            n = min(chunk, steps - done)
            state, ls = run(state, n)  # type: ignore[call-arg, arg-type, misc]  # eqx.filter_jit under partial: stub
            losses.append(ls)  # type: ignore[has-type]  # (the same)
            done += n
            bar.update(n)
    return state[0], jnp.concatenate(losses), bool(state[2])


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    steps: int = 1500
    batch_size: int = 32
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup: int = 50
    corpus_bytes: int | None = None  # truncate the corpus (None: all of it)
    seed: int = 0

    def __post_init__(self):
        for name in ("steps", "batch_size", "warmup"):
            v.positive_int(name, getattr(self, name))
        v.positive("lr", self.lr)
        v.nonnegative("weight_decay", self.weight_decay)


def adamw_schedule(tc: TrainConfig) -> optax.GradientTransformation:
    """AdamW with linear warmup and cosine decay to 10% of ``tc.lr``, global-norm clipping at 1."""
    sched = optax.warmup_cosine_decay_schedule(0.0, tc.lr, min(tc.warmup, tc.steps), tc.steps, tc.lr * 0.1)
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, weight_decay=tc.weight_decay))


def weights_dir() -> Path:
    """Where trained weights are kept: ``cache_dir() / "tiny_lm"`` (the workbench's one cache folder)."""
    return cache_dir() / "tiny_lm"


def _cache_key(mc: LMConfig, tc: TrainConfig, tag: str = "") -> str:
    parts = [dataclasses.asdict(mc), dataclasses.asdict(tc), corpus.CORPUS_FILE.stat().st_size, jax.__version__]
    blob = json.dumps(parts + [tag] if tag else parts, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def cache_path(mc: LMConfig, tc: TrainConfig, *, tag: str = "") -> Path:
    """Where :func:`trained_model` keeps (or will keep) the weights trained with ``mc``/``tc``/``tag``."""
    return weights_dir() / f"{tag + '-' if tag else ''}{_cache_key(mc, tc, tag)}.eqx"


def is_cached(mc: LMConfig, tc: TrainConfig, *, tag: str = "") -> bool:
    """Whether :func:`trained_model` would load these weights from the cache instead of training."""
    return cache_path(mc, tc, tag=tag).exists()


@contextlib.contextmanager
def _cache_lock(path: Path):
    """An exclusive lock on ``path``'s weights while they are trained or loaded, so that processes sharing the
    cache (pytest-xdist workers, a CLI run beside a notebook) train one configuration once: the second waits for
    the first and then loads its weights. A ``filelock.FileLock`` on ``<weights>.lock`` (released by the OS if
    the holder dies; one lock object per call, so threads of one process exclude each other too). Each writer
    still writes its own temporary file and one ``os.replace``, so the cache entry is never a mix of two."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path.with_name(path.name + ".lock"), thread_local=False):
        yield


def _load_cached(path: Path, skeleton):
    """``(model, losses)`` from the cache file, or None when it is missing, corrupt or stale (then: retrain)."""
    if not path.exists():
        return None
    try:
        with path.open("rb") as f:
            losses = np.load(f)
            model = eqx.tree_deserialise_leaves(f, skeleton)
        return model, jnp.asarray(losses)
    except Exception:  # a corrupt or stale cache entry: retrain
        return None


def _save_cached(path: Path, model, losses) -> None:
    """Write the weights through a temporary file of this process and one ``os.replace`` (never half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, np.asarray(losses))
            eqx.tree_serialise_leaves(f, model)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def trained_model(
    mc: LMConfig,
    tc: TrainConfig,
    *,
    use_cache: bool = True,
    desc: str | None = None,
    model_cls=TinyLM,
    batch_loss=None,
    tag: str = "",
):
    """Train ``TinyLM(mc)`` with AdamW per ``tc`` on the shipped corpus, or load it from the cache.

    ``model_cls``, ``batch_loss`` and ``tag`` (part of the cache key) train another model family with its own
    loss through the same loop and cache (``jaxwb.models.diffusion_lm``); the defaults are the tiny causal LM.
    Processes sharing the cache train each configuration once (a file lock; the others wait and load).
    Returns ``(model, losses)`` (losses: the per-step training losses, float32[steps]).
    """
    path = cache_path(mc, tc, tag=tag)
    skeleton = model_cls(mc, key=jax.random.key(tc.seed))
    if not use_cache:
        return _train(skeleton, tc, desc=desc, batch_loss=batch_loss)
    cached = _load_cached(path, skeleton)
    if cached is not None:
        return cached
    with _cache_lock(path):
        cached = _load_cached(path, skeleton)  # trained by another process while this one waited
        if cached is not None:
            return cached
        model, losses = _train(skeleton, tc, desc=desc, batch_loss=batch_loss)
        _save_cached(path, model, losses)
    return model, losses


def _train(skeleton, tc: TrainConfig, *, desc: str | None, batch_loss):
    train, _ = corpus.load_corpus(max_bytes=tc.corpus_bytes)
    model, losses, diverged = fit(
        skeleton,
        adamw_schedule(tc),
        train,
        steps=tc.steps,
        batch_size=tc.batch_size,
        key=jax.random.key(tc.seed + 1),
        desc=desc,
        batch_loss=batch_loss,
    )
    if diverged:
        raise RuntimeError(f"training diverged with {tc}")
    return model, losses
