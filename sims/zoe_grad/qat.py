"""zoe_grad: QAT of the tiny LM with STE and the continuous surrogates (5)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from jaxwb.models import corpus
from jaxwb.models import train as tr
from jaxwb.models.tiny_lm import TinyLM, linear_weights, replace_linear_weights
from jaxwb.pallas_kernels.quant.fake_quant import fake_quant
from jaxwb.sims.zoe_grad.config import Config

# ---------------------------------------------------------------------------------------------------------
# 5. QAT on the tiny LM
# ---------------------------------------------------------------------------------------------------------


class QATModel(eqx.Module):
    """The tiny LM with every block matmul weight fake-quantized in the forward (``arm="fp"``: no quantization)."""

    inner: TinyLM
    arm: str = eqx.field(static=True)
    format: str = eqx.field(static=True)
    bits: int = eqx.field(static=True)
    block: int = eqx.field(static=True)
    sigma: float = eqx.field(static=True)

    @property
    def config(self):
        return self.inner.config

    def __call__(self, tokens):
        if self.arm == "fp":
            return self.inner(tokens)
        surrogate = self.arm if self.arm != "ptq" else "ste"
        kw = {"bits": self.bits, "block_size": self.block} if self.format == "int" else {}
        ws = {
            k: fake_quant(w, fmt=self.format, surrogate=surrogate, sigma=self.sigma, **kw)
            for k, w in linear_weights(self.inner).items()
            if k != "embed"
        }
        return replace_linear_weights(self.inner, ws)(tokens)


def qat_wrap(model, cfg: Config, arm: str) -> QATModel:
    return QATModel(model, arm, cfg.qat_format, cfg.qat_bits, cfg.qat_block, cfg.qat_sigma)


def run_qat(cfg: Config, key) -> dict:
    model, pre_losses = tr.trained_model(cfg.model, cfg.pretrain, desc=None)
    train, val = corpus.load_corpus(max_bytes=cfg.corpus_bytes)
    x, y = tr.eval_windows(val, cfg.ctx, cfg.eval_windows)
    data = jnp.asarray(train)
    opt = optax.adam(cfg.qat_lr)
    ev = eqx.filter_jit(lambda m: tr.evaluate(m, x, y))
    out = {"fp": ev(model), "ptq": ev(qat_wrap(model, cfg, "ptq")), "pretrain_losses": pre_losses}
    keys = jax.random.split(key, cfg.qat_seeds)  # the same data order for every arm (paired comparison)

    def finetune(arm):
        f = eqx.filter_jit(
            lambda k: tr.train_scan(
                qat_wrap(model, cfg, arm), opt, data, key=k, steps=cfg.qat_steps, batch_size=cfg.qat_batch
            )[0]
        )
        states = eqx.filter_vmap(f)(keys)
        inner = states[0].inner
        quant = eqx.filter_vmap(lambda m: tr.evaluate(qat_wrap(m, cfg, "ptq"), x, y))(inner)
        return quant, bool(jnp.any(states[2]))

    diverged = {}
    out["fp_ptq"], diverged["fp_ptq"] = finetune("fp")
    for arm in cfg.qat_surrogates:
        out[arm], diverged[arm] = finetune(arm)
    out["diverged"] = jnp.asarray([diverged[a] for a in ("fp_ptq", *cfg.qat_surrogates)])
    return out
