"""river_valley_lm: the mutants, plausible bugs each of which some claim must catch
(``workbench audit river_valley_lm``)."""

from __future__ import annotations

from jaxwb.sims.core.audit import Mutant


def _momentum_twice(f):
    return lambda v, g, beta: f(f(v, g, beta), g, beta)


def _momentum_sign_flipped(f):
    return lambda v, g, beta: f(-v, g, beta)


def _momentum_as_ema(f):
    return lambda v, g, beta: f(v, (1.0 - beta) * g, beta)


def _ritz_ascending(f):
    def lanczos(op, dim, *, key, iters, k):
        ev, vec = f(op, dim, key=key, iters=iters, k=iters)
        return ev[::-1][:k], vec[:, ::-1][:, :k]

    return lanczos


def _targets_not_shifted(f):
    def get_batch(data, batch_size, ctx, *, key):
        x, _ = f(data, batch_size, ctx, key=key)
        return x, x

    return get_batch


def _loss_summed_over_positions(f):
    def loss_fn(model, x, y):
        return f(model, x, y) * x.shape[-1]

    return loss_fn


def _attention_scale(f):
    def flash_attention(q, k, v, *, is_causal, scale, **kw):
        return f(q, k, v, is_causal=is_causal, scale=scale / q.shape[2], **kw)

    return flash_attention


def _hvp_scaled(f):
    return lambda fn, x, u: 0.95 * f(fn, x, u)


def _threshold_shifted(f):
    return lambda lam, beta: f(lam, beta) * (1.1 + beta) / (1.0 + beta)


MUTANTS = [
    Mutant(
        "momentum_applied_twice",
        "jaxwb.sims.river_valley_lm.dynamics:hb_velocity",
        _momentum_twice,
        "heavy-ball velocity accumulated twice per step: v <- beta (beta v + g) + g",
    ),
    Mutant(
        "momentum_sign_flipped",
        "jaxwb.sims.river_valley_lm.dynamics:hb_velocity",
        _momentum_sign_flipped,
        "heavy-ball velocity with the momentum term's sign flipped: v <- g - beta v",
    ),
    Mutant(
        "momentum_as_ema",
        "jaxwb.sims.river_valley_lm.dynamics:hb_velocity",
        _momentum_as_ema,
        "velocity as an exponential moving average v <- beta v + (1-beta) g (optax's ema for its trace): the step "
        "along a flat direction is lr, not lr/(1-beta)",
    ),
    Mutant(
        "ritz_pairs_ascending",
        "jaxwb.theory.hessian:lanczos_top",
        _ritz_ascending,
        "Lanczos Ritz pairs kept in eigh's ascending order: the 'top' Hessian directions are the bottom ones",
    ),
    Mutant(
        "targets_not_shifted",
        "jaxwb.models.train:get_batch",
        _targets_not_shifted,
        "target alignment: the batch's targets are its inputs, not the stream shifted by one",
    ),
    Mutant(
        "loss_summed_over_positions",
        "jaxwb.models.train:loss_fn",
        _loss_summed_over_positions,
        "loss normalisation: the cross-entropy summed over the window's positions instead of averaged",
    ),
    Mutant(
        "attention_scale_per_head",
        "jaxwb.models.tiny_lm:flash_attention",
        _attention_scale,
        "attention scale 1/sqrt(d h) instead of 1/sqrt(d/h): the scores divided by the number of heads",
    ),
    Mutant(
        "hvp_five_percent_low",
        "jaxwb.theory.hessian:hvp",
        _hvp_scaled,
        "Hessian eigenvalue estimation: every Hessian-vector product 5% low (lambda_max, the lr units, the spectrum)",
    ),
    Mutant(
        "quadratic_threshold_shifted",
        "jaxwb.theory.river_valley:hb_threshold",
        _threshold_shifted,
        "the quadratic threshold 2(1.1+beta)/lambda instead of 2(1+beta)/lambda",
    ),
]
