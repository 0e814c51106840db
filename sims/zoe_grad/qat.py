"""zoe_grad: QAT of the tiny LM with STE and the continuous surrogates (5)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxwb.models import corpus
from jaxwb.models import train as tr
from jaxwb.models.reference_np import float64_params
from jaxwb.models.tiny_lm import TinyLM, linear_weights, replace_linear_weights
from jaxwb.pallas_kernels.quant.fake_quant import fake_quant
from jaxwb.sims.zoe_grad import reference
from jaxwb.sims.zoe_grad.config import Config

# ---------------------------------------------------------------------------------------------------------
# 5. QAT on the tiny LM
# ---------------------------------------------------------------------------------------------------------


class QATModel(eqx.Module):
    """The tiny LM with every block matmul weight fake-quantized in the forward by the arm ``arms[index]``
    (``"fp"``: no quantization; ``"ptq"``: the quantized forward, STE backward; else a ``fake_quant`` surrogate).

    ``index`` is an int32 scalar array (traced under jit): one compiled fine-tune serves every arm, the arm chosen
    by ``jax.lax.switch`` (only the chosen branch runs when ``index`` is not batched)."""

    inner: TinyLM
    index: jax.Array
    arms: tuple = eqx.field(static=True)
    format: str = eqx.field(static=True)
    bits: int = eqx.field(static=True)
    block: int = eqx.field(static=True)
    sigma: float = eqx.field(static=True)

    @property
    def config(self):
        return self.inner.config

    def quantized(self, arm: str, ws: dict) -> dict:
        """The block weights ``ws`` (name -> [out, in]) as the arm ``arm`` sees them in its forward. INT-b blocks
        are independent (absmax per block of ``block`` along the last axis, no tensor-wide scale), so for INT all
        weights' blocks go through one ``fake_quant`` call (one op to trace per arm instead of one per weight)."""
        if arm == "fp":
            return ws
        surrogate = arm if arm != "ptq" else "ste"
        if self.format != "int":
            return {k: fake_quant(w, fmt=self.format, surrogate=surrogate, sigma=self.sigma) for k, w in ws.items()}
        blocks = jnp.concatenate([w.reshape(-1, self.block) for w in ws.values()])
        q = fake_quant(blocks, fmt="int", bits=self.bits, surrogate=surrogate, sigma=self.sigma, block_size=self.block)
        ends = np.cumsum([w.size // self.block for w in ws.values()])[:-1]
        return {k: b.reshape(w.shape) for (k, w), b in zip(ws.items(), jnp.split(q, ends), strict=True)}

    def __call__(self, tokens):
        ws = {k: w for k, w in linear_weights(self.inner).items() if k != "embed"}
        branches = [lambda w, a=a: self.quantized(a, w) for a in self.arms]
        return replace_linear_weights(self.inner, jax.lax.switch(self.index, branches, ws))(tokens)


def qat_wrap(model, cfg: Config, arm: str) -> QATModel:
    """``model`` wrapped with the one arm ``arm`` ("fp", "ptq" or a surrogate of ``fake_quant``)."""
    return QATModel(
        model, jnp.asarray(0, jnp.int32), (arm,), cfg.qat_format, cfg.qat_bits, cfg.qat_block, cfg.qat_sigma
    )


def qat_arms(cfg: Config) -> tuple[str, ...]:
    """The fine-tuned arms in order: the float control ("fp", evaluated after PTQ as ``fp_ptq``), then the
    surrogates."""
    return ("fp", *cfg.qat_surrogates)


def reference_check(model, cfg: Config, val) -> dict:
    """The pretrained model's validation loss, float and INT-quantized, on the ``cfg.eval_windows`` evaluation
    windows, recomputed by the independent NumPy forward (``reference``): ``fp_np``, ``ptq_np`` (scalars)."""
    p = float64_params(model)
    q = reference.quantized_arrays(p, cfg.qat_bits, cfg.qat_block)
    arch = {"n_heads": model.config.n_heads, "rope_base": model.config.rope_base}
    n = cfg.eval_windows
    return {
        "fp_np": jnp.asarray(reference.eval_loss_np(p, val, cfg.ctx, n, **arch)),
        "ptq_np": jnp.asarray(reference.eval_loss_np(q, val, cfg.ctx, n, **arch)),
    }


def run_qat(cfg: Config, key) -> dict:
    """From the pretrained float tiny LM: fine-tune every arm of :func:`qat_arms` for ``cfg.qat_steps`` Adam steps
    on ``cfg.qat_seeds`` data orders (the same ``qat_seeds`` keys for every arm: paired seeds), then evaluate
    each fine-tuned model quantized (PTQ of its float weights). Returns the validation mean log-losses: ``fp``,
    ``ptq`` (scalars: the pretrained model, float and quantized), ``fp_ptq`` and one per surrogate (each
    [qat_seeds]), ``pretrain_losses`` [pretrain_steps], ``diverged`` (bool [1 + len(qat_surrogates)]) and
    ``check`` (:func:`reference_check`: ``fp`` and ``ptq`` recomputed in NumPy)."""
    model, pre_losses = tr.trained_model(cfg.model, cfg.pretrain, desc=None)
    train, val = corpus.load_corpus(max_bytes=cfg.corpus_bytes)
    x, y = tr.eval_windows(val, cfg.ctx, cfg.eval_windows)
    data = jnp.asarray(train)
    opt = optax.adam(cfg.qat_lr)
    arms = qat_arms(cfg)
    out = {"pretrain_losses": pre_losses, "check": reference_check(model, cfg, val)}
    # tr.evaluate (models/train.py) is annotated TinyLM but only calls model(tokens): a QATModel is accepted
    fp_and_ptq = lambda m: tuple(
        tr.evaluate(a, x, y)  # type: ignore[arg-type]
        for a in (m, qat_wrap(m, cfg, "ptq"))
    )
    out["fp"], out["ptq"] = eqx.filter_jit(fp_and_ptq)(model)
    keys = jax.random.split(key, cfg.qat_seeds)  # the same data order for every arm (paired comparison)
    wrapped = QATModel(
        model, jnp.asarray(0, jnp.int32), arms, cfg.qat_format, cfg.qat_bits, cfg.qat_block, cfg.qat_sigma
    )

    @eqx.filter_jit
    def finetune(index, keys):
        """Every seed of the arm ``arms[index]`` in turn (``lax.map``: on CPU cheaper to trace and to run than a
        vmap over seeds): PTQ log-losses [qat_seeds] and the divergence flags [qat_seeds]."""
        start = eqx.tree_at(lambda m: m.index, wrapped, index)

        def one(k):
            state = tr.train_scan(start, opt, data, key=k, steps=cfg.qat_steps, batch_size=cfg.qat_batch)[0]
            ptq_model = qat_wrap(state[0].inner, cfg, "ptq")
            return tr.evaluate(ptq_model, x, y), state[2]  # type: ignore[arg-type]  # QATModel: as for fp_and_ptq

        return jax.lax.map(one, keys)

    diverged = []
    for i, arm in enumerate(arms):
        quant, div = finetune(jnp.asarray(i, jnp.int32), keys)
        out["fp_ptq" if arm == "fp" else arm] = quant
        diverged.append(jnp.any(div))
    out["diverged"] = jnp.stack(diverged)
    return out
