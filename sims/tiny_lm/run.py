"""``run`` of the tiny-LM study: train ``seeds`` models per size, measure perplexity under each quantized variant
(``one_model``); the per-layer study (``layer_study``) and the engines' TV/KL (``engine_distances``) on the first
size's seed-0 model."""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.models import corpus, tokenizer
from jaxwb.models import train as tr
from jaxwb.models.tiny_lm import TinyLM, cast, linear_weights, replace_linear_weights, sample
from jaxwb.sims.tiny_lm import quant, reference
from jaxwb.sims.tiny_lm.config import ENGINES, FORMATS, PROMPT, WA_FORMATS, Config
from jaxwb.theory import tv_distance as tvd


@eqx.filter_jit
def eval_loss(model, x, y):
    """Mean next-byte cross-entropy (nats/byte) of ``model`` on windows ``x, y: int[n, ctx]`` (jitted)."""
    return tr.evaluate(model, x, y)


@eqx.filter_jit
def chunk_losses(model, xs, ys):
    """Mean next-byte cross-entropy (nats/byte) of ``model`` per chunk of windows ``xs, ys: int[chunks, n, ctx]``
    (jitted; ``lax.map`` over the chunks)."""
    return jax.lax.map(lambda ab: tr.loss_fn(model, *ab), (xs, ys))


def chunked(x, y, n: int):
    """Windows ``x, y: int[N, ctx]`` as chunks of ``n`` (``[N // n, n, ctx]``): the first chunk is the one the NumPy
    reference recomputes (``reference.variant_loss_np``)."""
    return x.reshape(-1, n, x.shape[-1]), y.reshape(-1, n, y.shape[-1])


def ppl_and_check(model, xs, ys) -> tuple[float, float]:
    """Validation perplexity exp(mean next-byte cross-entropy) on the chunked windows ``xs, ys`` (``chunked``),
    and the mean loss on the first chunk."""
    losses = np.asarray(chunk_losses(model, xs, ys), np.float64)
    return float(np.exp(losses.mean())), float(losses[0])


def ppl(model, xs, ys) -> float:
    """Validation perplexity on the chunked windows ``xs, ys`` (``chunked``)."""
    return ppl_and_check(model, xs, ys)[0]


def reduction(p_fp, p_nv, p_rz):
    """Fraction of NVFP4's perplexity loss removed by RaZeR: 1 - (ppl_RaZeR - ppl_fp) / (ppl_NVFP4 - ppl_fp)."""
    return 1.0 - (np.asarray(p_rz) - np.asarray(p_fp)) / (np.asarray(p_nv) - np.asarray(p_fp))


def as_ar_model(model: TinyLM, prompt: str = PROMPT) -> tvd.ARModel:
    """``model`` as an autoregressive model of theory.tv_distance: sequences continuing ``prompt``.

    Position t's next-token log-probs are the model's on ``prompt + tokens[:t]`` (teacher forcing, one forward
    pass over the window; the window must fit in ctx).
    """
    pr = jnp.asarray(tokenizer.encode(prompt))

    def all_fn(params, tokens):
        b, n = tokens.shape
        inp = jnp.concatenate([jnp.broadcast_to(pr, (b, pr.shape[0])), tokens[:, :-1]], axis=1)
        return jax.nn.log_softmax(jax.vmap(params)(inp)[:, pr.shape[0] - 1 :], axis=-1)

    def step_fn(params, tokens, t):
        return all_fn(params, tokens)[:, t]

    return tvd.ARModel(step_fn, model, 256, all_fn=all_fn)


def engine_distances(engine_a: TinyLM, engine_b: TinyLM, *, key: jax.Array, n: int, m: int) -> dict:
    """TV(A, B) (logit access, plain estimator) and KL(A || B) from the same m sequences x ~ A of length n.

    Returns value and standard error of each (per-sequence Z averaged; stderr = std(Z)/sqrt(m))."""
    d = tvd.decode(as_ar_model(engine_a), as_ar_model(engine_b), jnp.zeros((m,), bool), key=key, n=n, m=m)
    z_tv = tvd.logit_z_from_decoded(d, "plain")
    z_kl = jnp.sum(d.lp - d.lq, axis=1)
    se = lambda z: jnp.std(z, ddof=1) / np.sqrt(m)
    return {"tv": jnp.mean(z_tv), "tv_se": se(z_tv), "kl": jnp.mean(z_kl), "kl_se": se(z_kl)}


def format_key(key: jax.Array, fmt: str) -> jax.Array:
    """The key of format ``fmt`` (one of FORMATS) under a model's key: its perplexities and the layer study."""
    return jax.random.fold_in(key, FORMATS.index(fmt))


def one_model(model: TinyLM, cfg: Config, xs, ys, *, key: jax.Array) -> dict:
    """Every perplexity of one trained model on the chunked windows ``xs, ys``: float32, weight-only per format,
    W4A4, outlier channels; and for each variant of ``reference.VARIANTS`` its loss on the first chunk (``check_*``)
    beside the float64 NumPy reference's (``check_np_*``)."""
    out = {}
    out["fp"], out["check_fp"] = ppl_and_check(model, xs, ys)
    for fmt in FORMATS:
        qm = quant.quantized_model(model, fmt, key=format_key(key, fmt), rht_group=cfg.rht_group)
        out[fmt], out[f"check_{fmt}"] = ppl_and_check(qm, xs, ys)
    for fmt in WA_FORMATS:
        qm = quant.quantized_model(model, fmt, key=key, activations=True)
        out[f"wa_{fmt}"], out[f"check_wa_{fmt}"] = ppl_and_check(qm, xs, ys)
    x0, y0 = np.asarray(xs[0]), np.asarray(ys[0])
    for v in reference.VARIANTS:
        out[f"check_np_{v}"] = reference.variant_loss_np(model, v, x0, y0)
    out.update(outlier_ppl(model, cfg, xs, ys, key=jax.random.fold_in(key, 77)))
    return out


def outlier_ppl(model: TinyLM, cfg: Config, xs, ys, *, key: jax.Array) -> dict:
    """NVFP4 / RaZeR weight-only perplexity of ``model`` with outlier channels (``quant.with_outlier_channels``),
    ``cfg.outlier_draws`` independent draws of the channels, draw j evaluated on the chunks j, j + draws, ... of
    the windows (every window once: the perplexity over the whole set, each share under its own draw). The float
    model with outlier channels is the float model (a unit test), so its perplexity is ``fp``."""
    n = cfg.outlier_draws
    losses: dict[str, list[np.ndarray]] = {fmt: [] for fmt in WA_FORMATS}
    for j in range(n):
        ch = quant.outlier_channels(model.config.d_model, cfg.outlier_channels, key=jax.random.fold_in(key, j))
        mo = quant.with_outlier_channels(model, ch, cfg.outlier_scale)
        for fmt in WA_FORMATS:
            losses[fmt].append(np.asarray(chunk_losses(quant.quantized_model(mo, fmt, key=key), xs[j::n], ys[j::n])))
    return {f"outlier_{fmt}": float(np.exp(np.concatenate(v).astype(np.float64).mean())) for fmt, v in losses.items()}


def layer_study(model: TinyLM, cfg: Config, xs, ys, *, key: jax.Array) -> dict:
    """Per-layer relative weight MSE and the perplexity when only that layer is quantized (fake-quantized
    float32 weights: the per-layer cost of the weight format alone)."""
    names = quant.block_names(model)
    full = linear_weights(model)
    mse, lppl = {}, {}
    for fmt in FORMATS:
        q = quant.quantized_weights(model, fmt, key=format_key(key, fmt), rht_group=cfg.rht_group)
        mse[fmt] = jnp.stack([jnp.sum((q[n] - full[n]) ** 2) / jnp.sum(full[n] ** 2) for n in names])
        lppl[fmt] = jnp.asarray([ppl(replace_linear_weights(model, {n: q[n]}), xs, ys) for n in names])
    return {"layer_rel_mse": mse, "layer_ppl": lppl, "layer_names": np.array(names)}


def kernel_check(model: TinyLM, cfg: Config, x, *, key: jax.Array) -> dict:
    """The fast quantizers against independent references on this model's tensors (``reference``): code and
    scale-byte mismatches per block format against the specification (block weights by input width; the first
    block's attention input on 8 eval windows, quantized per token), value mismatches of what the quantized
    layers and the activation quantizer compute against the independent round trip of
    ``theory.quantization.fp4_formats``, and RHT-4's per-layer relative MSE from a float64 NumPy implementation
    with the layer study's signs and dithers."""
    ws = quant.block_weights(model)
    stacks = reference.by_width(ws)
    mism = {f: sum(reference.code_mismatches(w, f) for w in stacks) for f in ("nvfp4", "mxfp4", "razer_weight")}
    h = jax.vmap(jax.vmap(model.blocks[0].norm1))(model.embed[x[:8]]).reshape(-1, model.embed.shape[1])
    for f in ("nvfp4", "razer_activation"):
        mism[f"{f} (activations)"] = reference.code_mismatches(h, f, per_row=True)
    decoded = {
        label: reference.layer_decode_mismatches(quant.quantized_model(model, fmt, key=key), ws, label)
        for fmt, label in (("nvfp4", "NVFP4"), ("razer", "RaZeR (weight)"), ("mxfp4", "MXFP4"))
    }
    for fmt, label in (("nvfp4", "NVFP4"), ("razer_activation", "RaZeR (act.)")):
        fq = functools.partial(quant.quantize_activations, fmt=fmt)
        decoded[f"{label} activations"] = reference.activation_decode_mismatches(h, fq, label)
    k_rht = format_key(key, "rht4")  # the layer study's RHT-4 randomness
    w_hat = quant.quantized_weights(model, "rht4", key=k_rht, rht_group=cfg.rht_group)
    keys = quant.layer_keys(model, k_rht)
    rht = [reference.rht_group_errors(w, w_hat[n], keys[n], group=cfg.rht_group) for n, w in ws.items()]
    return {
        "mismatches": {f: jnp.asarray(m) for f, m in mism.items()},
        "decoded_mismatches": {f: jnp.asarray(m) for f, m in decoded.items()},
        "rht4_group_error": jnp.asarray(max(r[0] for r in rht)),
        "rht4_ties": jnp.asarray(sum(r[1] for r in rht)),
        "rht4_groups": jnp.asarray(sum(r[2] for r in rht)),
    }


def run(cfg: Config, *, key: jax.Array) -> dict:
    train_tok, val_tok = corpus.load_corpus(max_bytes=cfg.corpus_bytes)
    x, y = tr.eval_windows(val_tok, cfg.ctx, cfg.eval_windows)
    xs, ys = chunked(x, y, cfg.check_windows)
    rows, fp_loss, train_losses = [], [], []
    first: TinyLM | None = None
    for s, mc in enumerate(cfg.models):
        per_size, losses_s, fpl = [], [], []
        for seed in range(cfg.seeds):
            model, losses = tr.trained_model(
                mc, cfg.train_config(s, seed), desc=f"train tiny LM d={mc.d_model} seed {seed}"
            )
            if first is None:
                first = model
            losses_s.append(np.asarray(losses))
            per_size.append(one_model(model, cfg, xs, ys, key=jax.random.fold_in(key, 1000 * s + seed)))
            fpl.append(float(np.log(per_size[-1]["fp"])))
        rows.append(per_size)
        fp_loss.append(fpl)
        train_losses.append(losses_s)
    keys = list(rows[0][0])
    table = {k: jnp.asarray([[r[k] for r in per_size] for per_size in rows]) for k in keys}  # [sizes, seeds]
    out = {
        "unigram_loss": jnp.asarray(corpus.unigram_entropy(train_tok, val_tok)),
        "fp_loss": jnp.asarray(fp_loss),
        "train_losses": jnp.asarray(train_losses),
        "d_models": jnp.asarray(cfg.d_models),
        "fp_ppl": table["fp"],
        "ppl": {f: table[f] for f in FORMATS},
        "ppl_wa": {f: table[f"wa_{f}"] for f in WA_FORMATS},
        "ppl_outlier": {f: table[f"outlier_{f}"] for f in WA_FORMATS},
        "loss_check": {v: table[f"check_{v}"] for v in reference.VARIANTS},
        "loss_check_np": {v: table[f"check_np_{v}"] for v in reference.VARIANTS},
    }
    out["reduction"] = {
        "weight": jnp.asarray(reduction(table["fp"], table["nvfp4"], table["razer"])),
        "wa": jnp.asarray(reduction(table["fp"], table["wa_nvfp4"], table["wa_razer"])),
        "outlier": jnp.asarray(reduction(table["fp"], table["outlier_nvfp4"], table["outlier_razer"])),
    }
    out["bits"] = {f: jnp.asarray(quant.bits_per_weight(f, cfg.d_models[0], cfg.rht_group)) for f in FORMATS}
    assert first is not None  # cfg.models is non-empty (rows[0] above)
    model = first
    out.update(layer_study(model, cfg, xs, ys, key=key))
    out["kernel_check"] = kernel_check(model, cfg, x, key=key)
    # engines: the same model served in float32 (A) and as B = bfloat16 compute / 4-bit weights (drop-in layers)
    engines = {
        "float32": model,
        "bfloat16": cast(model, jnp.bfloat16),
        "nvfp4 weights": quant.quantized_model(model, "nvfp4", key=key),
        "razer weights": quant.quantized_model(model, "razer", key=key),
    }
    assert tuple(engines) == ENGINES
    k_tv = jax.random.fold_in(key, 99)
    out["engines"] = {
        name: engine_distances(model, eng, key=k_tv, n=cfg.tv_n, m=cfg.tv_m) for name, eng in engines.items()
    }
    prompt = tokenizer.encode(PROMPT)
    out["sample"] = sample(model, prompt, cfg.sample_tokens, key=key, temperature=0.8)
    out["sample_nvfp4"] = sample(engines["nvfp4 weights"], prompt, cfg.sample_tokens, key=key, temperature=0.8)
    return out
