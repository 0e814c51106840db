"""Claims of the sparse-attention result: every one compares a measurement with something independent of it.

Per-prompt quantities are decided over prompts: a mean paired difference with its Student-t interval
(``Claim.from_samples``; ``paired_claim``: the interval strictly above zero), or a sign test (the fraction of
prompts where A beats B strictly, with its one-sided 95% Clopper-Pearson lower bound, must exceed 1/2: what a
method with no effect would give).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from jaxwb.sims.core.claims import Claim
from jaxwb.sims.sparse_attention.config import Config


def sign_claim(statement: str, diffs, *, source: str = "paper") -> Claim:
    """Sign test: ``diffs [n] > 0`` strictly on more than half of the prompts, at one-sided 95%."""
    d = np.asarray(diffs, np.float64).ravel()
    n = d.size
    wins = int(np.sum(d > 0))
    frac = wins / n if n else float("nan")
    lower = float(stats.beta.ppf(0.05, wins, n - wins + 1)) if wins > 0 else 0.0
    return Claim(statement, 0.5, frac, 0.0, "ge", source=source, kind="check", ci=max(frac - lower, 0.0), n_seeds=n)


def spearman(a, b) -> float:
    ra = np.argsort(np.argsort(a)).astype(float)
    rb = np.argsort(np.argsort(b)).astype(float)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    den = np.sqrt((ra**2).sum() * (rb**2).sum())
    return float((ra * rb).sum() / den) if den > 0 else 0.0


def row(cfg: Config, period: int, budget: float) -> int:
    """Index of (period, budget) in the period-major policy grid."""
    return list(cfg.periods).index(period) * len(cfg.budgets) + list(cfg.budgets).index(budget)


# the smallest positive float: a paired difference "> 0" must have its whole interval strictly above zero (a
# policy identical to its comparator gives differences exactly 0 with a zero-width interval, and must fail)
STRICTLY_POSITIVE = float(np.finfo(np.float64).tiny)


def paired_claim(statement: str, diffs, *, source: str = "paper") -> Claim:
    """Mean of the paired per-prompt differences ``diffs [n]`` > 0: its 95% Student-t interval lies strictly
    above zero."""
    return Claim.from_samples(statement, STRICTLY_POSITIVE, diffs, 0.0, "ge", kind="check", source=source)


def end_to_end_claims(results, cfg: Config) -> list[Claim]:
    """The policy comparisons end to end, along the dense trajectory (every step from the dense run's own state,
    so one step's difference does not carry into the next): KL(dense || sparse) of the token distributions, and
    the held-out bytes' NLL and accuracy under teacher-forced denoising; paired differences over prompts (the same
    prompts, states and keys for both policies), mean over steps per prompt."""
    pol = results["policy"]
    first, P, rho = max(cfg.periods), cfg.main_period, cfg.main_budget
    r_first, r_main = row(cfg, first, rho), row(cfg, P, rho)
    m = {
        (a, f): np.asarray(pol[a][f], np.float64).mean(-1)
        for a in ("uniform", "concentration")
        for f in ("kl", "dnll", "dacc")
    }  # [R, N]
    refresh = f"with anchor refresh every {P} steps than with the first-step-only mask (uniform budget rho={rho:g}"
    adaptive = (
        f"with the head-adaptive budget than with the uniform one at equal density (refresh every {P}, rho={rho:g}"
    )
    tail = "; paired over prompts, 95% t-interval above 0)"
    tf = "teacher-forced denoising of the held-out continuation along the dense run's unmasking order"
    u, c = "uniform", "concentration"
    return [
        paired_claim(
            f"End to end along the dense trajectory: KL(dense || sparse) of the denoiser's token distributions at the "
            f"still-masked positions is lower {refresh}{tail}",
            m[(u, "kl")][r_first] - m[(u, "kl")][r_main],
        ),
        paired_claim(
            f"End to end ({tf}): the held-out bytes' NLL rises less over dense attention {refresh}{tail}",
            m[(u, "dnll")][r_first] - m[(u, "dnll")][r_main],
        ),
        paired_claim(
            f"End to end ({tf}): the held-out bytes' argmax accuracy is higher {refresh}{tail}",
            m[(u, "dacc")][r_main] - m[(u, "dacc")][r_first],
        ),
        paired_claim(
            f"End to end along the dense trajectory: KL(dense || sparse) of the denoiser's token distributions at the "
            f"still-masked positions is lower {adaptive}{tail}",
            m[(u, "kl")][r_main] - m[(c, "kl")][r_main],
        ),
        paired_claim(
            f"End to end ({tf}): the held-out bytes' NLL rises less over dense attention {adaptive}{tail}",
            m[(u, "dnll")][r_main] - m[(c, "dnll")][r_main],
        ),
        paired_claim(
            f"End to end ({tf}): the held-out bytes' argmax accuracy is higher {adaptive}{tail}",
            m[(c, "dacc")][r_main] - m[(u, "dacc")][r_main],
        ),
    ]


def claims(results, cfg: Config) -> list[Claim]:
    return [
        *quality_claims(results, cfg),
        *map_claims(results, cfg),
        *output_error_claims(results, cfg),
        *end_to_end_claims(results, cfg),
        *louver_claims(results, cfg),
    ]


def quality_claims(results, cfg: Config) -> list[Claim]:
    """The diffusion LM denoises (masked-token accuracy, per-step NLL), and sampling avoids the argmax decoder's
    collapse onto whitespace."""
    q = results["quality"]
    tx = {k: {f: np.asarray(x, np.float64) for f, x in v.items()} for k, v in q["text"].items()}
    return [
        sign_claim(
            f"The diffusion LM denoises: masked-token accuracy at mask ratio {cfg.eval_ratio:g} exceeds the "
            "unigram baseline (always the most frequent byte) on the same positions (sign test over held-out "
            "windows)",
            np.asarray(q["acc"]) - np.asarray(q["unigram_acc"]),
            source="reconstruction",
        ),
        sign_claim(
            "The diffusion LM denoises at every step: teacher-forced on the dense runs' unmasking order, its NLL of "
            "the still-masked held-out bytes is below the training byte marginals' on the same positions "
            "(mean over steps, sign test over prompts)",
            np.asarray(q["unigram_step_nll"]).mean(-1) - np.asarray(q["step_nll"]).mean(-1),
            source="reconstruction",
        ),
        sign_claim(
            f"Sampling (temperature {cfg.temperature:g}, {cfg.remasking.replace('_', '-')} remasking) fixes the argmax "
            "decoder's collapse onto whitespace: the generated bytes' whitespace fraction is closer to the held-out "
            "continuation's than the argmax (low-confidence) decoder's is (same prompts, sign test)",
            np.abs(tx["argmax"]["whitespace"] - tx["held_out"]["whitespace"])
            - np.abs(tx["sampled"]["whitespace"] - tx["held_out"]["whitespace"]),
            source="reconstruction",
        ),
    ]


def map_claims(results, cfg: Config) -> list[Claim]:
    """What Step-dLLM's argument rests on: local consistency of the block masks, the shift at transitions, heads
    that differ in concentration."""
    st = {k: np.asarray(v) for k, v in results["maps"].items()}
    hs = results["head_spread"]
    k = cfg.main_k
    return [
        Claim.from_samples(
            f"Attention is locally consistent: top-{k} block-mask overlap between consecutive steps exceeds the "
            f"overlap between steps >= {cfg.far_lag} apart (difference > 0, over prompts)",
            0.0,
            st["within"] - st["far"],
            0.0,
            "ge",
            kind="check",
        ),
        Claim.from_samples(
            f"Consecutive-step top-{k} block masks overlap more than chance (the next step's map shuffled over "
            "key blocks)",
            0.0,
            st["within"] - st["null"],
            0.0,
            "ge",
            kind="check",
        ),
        Claim.from_samples(
            "Attention shifts at transitions: block-mask overlap across a decoding-block transition is below the "
            "within-block consecutive-step overlap",
            0.0,
            st["within"] - st["across"],
            0.0,
            "ge",
            kind="check",
        ),
        Claim(
            f"Heads differ in concentration: the variance over heads of their top-{k} block mass exceeds the 95% "
            "quantile of its head-label permutation null",
            hs["null_q95"],
            hs["stat"],
            0.0,
            "ge",
            kind="check",
            n_seeds=cfg.n_prompts,
        ),
    ]


def output_error_claims(results, cfg: Config) -> list[Claim]:
    """The policies compared by attention-output error along the dense trajectory (sign tests over prompts), and
    the head-adaptive allocation's blocks against the heads' concentration."""
    pol = results["policy"]
    first, P, rho = max(cfg.periods), cfg.main_period, cfg.main_budget
    err = {a: np.asarray(pol[a]["err"]).mean(axis=-1) for a in ("uniform", "concentration")}  # [R, N, T]
    r_first, r_main, r_one = row(cfg, first, rho), row(cfg, P, rho), row(cfg, 1, rho)
    stale = np.asarray(pol["stale"]["err"]).mean(axis=-1)[0]  # [N, T]
    err_global = np.asarray(pol["global"]["err"]).mean(axis=-1)[0]  # [N, T]
    blocks = np.asarray(pol["blocks_per_head"])  # [N, T, nl, H] (concentration policy, P=1, main rho)
    conc = np.asarray(pol["head_concentration"])  # [N, T, nl, H]
    rho_s = [
        np.mean(
            [
                spearman(conc[n, t, layer], blocks[n, t, layer])
                for t in range(cfg.steps)
                for layer in range(cfg.n_layers)
            ]
        )
        for n in range(cfg.n_prompts)
    ]
    return [
        sign_claim(
            f"Anchor refresh (every {P} steps, uniform budget rho={rho:g}) has lower attention-output error than "
            "the first-step-only mask (sign test over prompts)",
            err["uniform"][r_first].mean(-1) - err["uniform"][r_main].mean(-1),
        ),
        sign_claim(
            f"Refreshing the mask at every step (uniform budget rho={rho:g}) has lower attention-output error than "
            "the first-step-only mask (sign test over prompts)",
            err["uniform"][r_first].mean(-1) - err["uniform"][r_one].mean(-1),
        ),
        sign_claim(
            f"Attention shifts, so old masks cost accuracy: a mask refreshed every step has lower output error "
            f"than a mask {cfg.far_lag} steps old (uniform budget rho={rho:g}, steps >= {cfg.far_lag}, sign test "
            "over prompts)",
            stale[:, cfg.far_lag :].mean(-1) - err["uniform"][r_one][:, cfg.far_lag :].mean(-1),
        ),
        sign_claim(
            f"Head-adaptive budget has lower attention-output error than the uniform budget at equal density "
            f"(refresh every {P}, rho={rho:g}, sign test over prompts)",
            err["uniform"][r_main].mean(-1) - err["concentration"][r_main].mean(-1),
        ),
        sign_claim(
            f"Mass-greedy allocation (the largest pooled importances over all heads and rows, at equal density plus "
            f"the best block of any empty row) has lower attention-output error than the uniform budget (refresh "
            f"every {P}, rho={rho:g}, sign test over prompts): blocks are worth most where the uncovered mass is",
            err["uniform"][r_main].mean(-1) - err_global.mean(-1),
            source="reconstruction",
        ),
        sign_claim(
            "Head-adaptive budget gives more concentrated heads more blocks (Spearman(concentration, blocks) > 0, "
            "sign test over prompts)",
            np.asarray(rho_s),
        ),
    ]


def louver_claims(results, cfg: Config) -> list[Claim]:
    """Louver's guarantee: zero false negatives against float64 scores."""
    lv = results["louver"]
    fn = sum(int(np.sum(np.asarray(lv[b][f]))) for b in ("ball", "box") for f in ("fn_block", "fn_key"))
    return [
        Claim(
            "Louver retrieval has zero false negatives: no key with q.k >= tau (q.k in float64 from the float32 "
            "inputs) in a skipped block or outside the retrieved keys (ball and box bounds, every tau, layer, "
            "prompt)",
            0.0,
            fn,
            0.0,
            "abs",
            kind="check",
        )
    ]
