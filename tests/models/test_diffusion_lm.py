"""The tiny masked-diffusion LM: shapes, bidirectionality, attention hook, objective, schedule, sampling, training."""

from __future__ import annotations

import inspect

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxwb.models import corpus
from jaxwb.models import diffusion_lm as dl
from jaxwb.models import train as tr
from jaxwb.pallas_kernels.attention import AttentionBlockSizes, block_sparse_attention, mask_to_block_lists

CFG = dl.DLMConfig(d_model=32, n_layers=2, n_heads=4, ctx=32)
fwd = eqx.filter_jit(lambda m, t: m(t))


@pytest.fixture(scope="module")
def model():
    return dl.DiffusionLM(CFG, key=jax.random.key(0))


def test_config_validation():
    with pytest.raises(ValueError, match="d_model"):
        dl.DLMConfig(d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="ctx"):
        dl.DLMConfig(ctx=0)


def test_shapes_and_bad_input(model):
    x = jnp.arange(CFG.ctx, dtype=jnp.int32) % 257
    logits = fwd(model, x)
    assert logits.shape == (CFG.ctx, dl.BYTES) and logits.dtype == jnp.float32
    assert eqx.filter_jit(lambda m, x: jax.vmap(m)(x))(model, jnp.zeros((3, CFG.ctx), jnp.int32)).shape == (
        3,
        CFG.ctx,
        256,
    )
    qkv = eqx.filter_jit(lambda m, x: m.qkv(x))(model, x)
    assert len(qkv) == CFG.n_layers and all(a.shape == (CFG.ctx, 4, 8) for t in qkv for a in t)
    with pytest.raises(ValueError, match="1-D"):
        model(jnp.zeros((2, 4), jnp.int32))
    with pytest.raises(ValueError, match="ctx"):
        model(jnp.zeros(CFG.ctx + 1, jnp.int32))


def test_bidirectional(model):
    """Changing the last token changes the logits at position 0 (a causal model could not)."""
    x = jnp.full(CFG.ctx, 65, jnp.int32)
    a, b = fwd(model, x), fwd(model, x.at[-1].set(dl.MASK))
    assert float(jnp.max(jnp.abs(a[0] - b[0]))) > 1e-4


def test_attention_hook_dense_and_block_sparse_agree(model):
    x = jax.random.randint(jax.random.key(1), (CFG.ctx,), 0, 257)
    dense = fwd(model, x)
    hooked = eqx.filter_jit(lambda m, x, attn: m(x, attention=attn))  # attn is static (a function)
    np.testing.assert_allclose(hooked(model, x, dl.dense_attention), dense, rtol=1e-5, atol=1e-5)
    nb = CFG.ctx // 8
    cnt, idx = mask_to_block_lists(jnp.ones((1, CFG.n_heads, nb, nb), bool), nb)

    def full_blocks(layer, q, k, v):
        return block_sparse_attention(
            q[None], k[None], v[None], cnt, idx, block_sizes=AttentionBlockSizes(8, 8), implementation="xla"
        )[0]

    np.testing.assert_allclose(hooked(model, x, full_blocks), dense, rtol=1e-4, atol=1e-4)


def test_mask_tokens_rate_and_loss(model):
    x = jnp.zeros((64, 128), jnp.int32)
    xt, masked = dl.mask_tokens(x, jnp.full(64, 0.3), key=jax.random.key(2))
    assert abs(float(masked.mean()) - 0.3) < 0.02
    assert bool(jnp.all((xt == dl.MASK) == masked))
    loss = eqx.filter_jit(lambda m, x, k: dl.diffusion_loss(m, x, key=k))(model, x[:4, :32], jax.random.key(3))
    assert loss.shape == () and bool(jnp.isfinite(loss)) and float(loss) > 0


def test_key_is_keyword_only():
    for fn in (dl.mask_tokens, dl.diffusion_times, dl.diffusion_loss, dl.masked_accuracy, dl.unmask_step, dl.generate):
        assert inspect.signature(fn).parameters["key"].kind is inspect.Parameter.KEYWORD_ONLY, fn.__name__
    assert inspect.signature(dl.DiffusionLM.__init__).parameters["key"].kind is inspect.Parameter.KEYWORD_ONLY
    with pytest.raises(TypeError):
        dl.DiffusionLM(CFG, jax.random.key(0))


def test_diffusion_times_low_discrepancy():
    """One t per stratum [(b-1)/B, b/B) of (eps, 1] (after the affine map), every t in (eps, 1]; over draws each
    t_b is uniform (mean 1/2 within Monte Carlo error)."""
    eps, B = 1e-3, 16
    ts = np.stack([np.asarray(dl.diffusion_times(B, key=jax.random.key(i), eps=eps)) for i in range(200)])
    assert np.all((ts > eps) & (ts <= 1.0))
    u = 1.0 - (ts - eps) / (1.0 - eps)  # back to [0, 1)
    assert all(sorted(np.floor(row * B).astype(int)) == list(range(B)) for row in u)
    assert abs(ts.mean() - (1 + eps) / 2) < 4 * (1 / np.sqrt(12)) / np.sqrt(200)  # per-row mean is near exact


def test_schedule():
    region, count = dl.schedule(64, 16, 8, 24)
    assert region.shape == (8, 64) and count.sum() == 48
    for t in range(8):
        lo = 16 + (t // 4) * 24
        assert region[t].sum() == 24 and region[t, lo : lo + 24].all()
    assert dl.transitions(64, 16, 8, 24) == (4,)
    with pytest.raises(ValueError, match="block_len"):
        dl.schedule(64, 16, 8, 20)
    with pytest.raises(ValueError, match="steps"):
        dl.schedule(64, 16, 7, 24)
    with pytest.raises(ValueError, match="prompt_len"):
        dl.schedule(64, 64, 8, 24)


def test_generate_fills_every_mask_keeps_prompt(model):
    prompt = jnp.arange(8, dtype=jnp.int32) + 97
    out, states = eqx.filter_jit(lambda m, p: dl.generate(m, p, CFG.ctx, steps=6, block_len=8))(model, prompt)
    assert out.shape == (CFG.ctx,) and states.shape == (6, CFG.ctx)
    assert bool(jnp.all(out != dl.MASK)) and bool(jnp.all(out[:8] == prompt))
    masked = np.asarray((states == dl.MASK).sum(axis=1))
    assert masked[0] == CFG.ctx - 8 and np.all(np.diff(masked) < 0)  # every step commits tokens


def test_loss_decreases_on_a_tiny_run():
    train, _ = corpus.load_corpus(max_bytes=20_000)
    m0 = dl.DiffusionLM(CFG, key=jax.random.key(0))
    tc = tr.TrainConfig(steps=60, batch_size=8, lr=1e-2, warmup=5)
    _, losses, diverged = tr.fit(
        m0,
        tr.adamw_schedule(tc),
        train,
        steps=60,
        batch_size=8,
        key=jax.random.key(1),
        chunk=60,
        batch_loss=dl._batch_loss,
    )
    losses = np.asarray(losses)
    assert not diverged and losses.shape == (60,)
    assert losses[-15:].mean() < 0.8 * losses[:5].mean()


def test_unmask_step_remasking():
    """Both remasking rules commit exactly ``count`` masked positions inside the region; random needs a key."""
    x = jnp.full((16,), dl.MASK, jnp.int32).at[:3].set(7)
    logits = jax.random.normal(jax.random.key(0), (16, 256))
    region = jnp.arange(16) >= 4
    for remasking in dl.REMASKING:
        y = dl.unmask_step(x, logits, region, 5, key=jax.random.key(1), temperature=1.0, remasking=remasking)
        new = (x == dl.MASK) & (y != dl.MASK)
        assert int(new.sum()) == 5 and not bool(jnp.any(new & ~region))
    with pytest.raises(ValueError, match="key"):
        dl.unmask_step(x, logits, region, 5, remasking="random")
    with pytest.raises(ValueError, match="remasking"):
        dl.unmask_step(x, logits, region, 5, remasking="greedy")
