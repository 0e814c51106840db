"""river_valley_lm's claims and the summaries they are decided on (bisected edges, edge-of-stability sharpness).

See the package docstring for what each claim measures and why the quadratic ones are expected to fail.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxwb.models import corpus
from jaxwb.sims.core.claims import Claim, mean_ci
from jaxwb.sims.river_valley_lm.config import Config
from jaxwb.sims.river_valley_lm.run import eos_rows
from jaxwb.theory import river_valley as rv


def grid_edge(lrs, ok):
    """Largest lr of the contiguous run of ``ok`` grid points starting at the smallest lr (NaN if none)."""
    ok = np.asarray(ok)
    if not ok[0]:
        return float("nan")
    n = np.argmin(ok) if not ok.all() else len(ok)
    return float(lrs[n - 1])


def linear_river_ratio(beta: float, steps: int) -> float:
    """HB / GD displacement after ``steps`` steps on a linear river (constant gradient g, v_0 = 0): from
    x_t = x_0 - (lr g/(1-beta)) [t - beta(1-beta^t)/(1-beta)] (``shared/papers/river_valley.md``) and GD's lr g t."""
    return (steps - beta * (1.0 - beta**steps) / (1.0 - beta)) / ((1.0 - beta) * steps)


def edges(results) -> np.ndarray:
    """Loss map: per beta and seed, the largest grid lr (units of 2/lambda_max(init)) before the first divergence
    [n_beta, map_seeds] (NaN if the smallest grid lr already diverges)."""
    s = results["sgd"]
    mults, div = np.asarray(s["lr_mult"]), np.asarray(s["diverged"])  # [L], [L, B, S]
    return np.array([[grid_edge(mults, ~div[:, j, k]) for k in range(div.shape[2])] for j in range(div.shape[1])])


def tracker_vs_lanczos(results) -> np.ndarray:
    """|tracked (warm-started Lanczos) - fresh Lanczos| / fresh Lanczos for lambda_max at the middle and the end of
    every EoS run [2, n_rows, n_seeds]."""
    e = results["eos"]
    lam = np.asarray(e["lam"], np.float64)  # [R, S, T]
    pw = np.stack([lam[..., int(e["mid"])], lam[..., -1]])
    lz = np.stack([np.asarray(e["lanczos_mid"], np.float64), np.asarray(e["lanczos_end"], np.float64)])
    return np.abs(pw - lz) / np.abs(lz)


def seed_edges(results) -> np.ndarray:
    """Bisected divergence edges [n_beta, n_seeds] in units of 2/lambda_max(init) of each seed: sqrt(lo hi);
    NaN where the bracket's low end already diverges, +inf where its high end still trains."""
    e = results["edges"]
    lo, hi = np.asarray(e["lo"], np.float64), np.asarray(e["hi"], np.float64)
    edge = np.sqrt(lo * hi)
    edge = np.where(np.asarray(e["lo_ok"]), edge, np.nan)
    return np.where(np.asarray(e["hi_div"]), edge, np.inf)


def eos_sharpness(results, cfg: Config) -> np.ndarray:
    """lr * lambda_max(H(theta_t)) per EoS row and seed: median over the second half of the tracked points
    [n_rows, n_seeds] (NaN if the run's loss went non-finite)."""
    e = results["eos"]
    lam = np.asarray(e["lam"], np.float64)  # [R, S, T]
    lr = np.asarray(e["lr"], np.float64)[..., None]
    x = lr * lam
    half = x[..., x.shape[-1] // 2 :]
    med = np.median(half, axis=-1)
    ok = np.all(np.isfinite(np.asarray(e["loss"])), axis=-1)
    return np.where(ok, med, np.nan)


def unigram_cross_entropy(train_tok, eval_tok, vocab: int) -> float:
    """Cross-entropy (nats/token) on ``eval_tok`` of the add-one-smoothed unigram model fitted on ``train_tok``,
    computed as H(q) + KL(q || p) with ``scipy.stats.entropy`` (q: the empirical distribution of ``eval_tok``, p:
    (count + 1) / (N + vocab)); shares no code with ``jaxwb.models.corpus.unigram_entropy``."""
    from scipy import stats

    n_tr = np.zeros(vocab)
    u, c = np.unique(np.asarray(train_tok), return_counts=True)
    n_tr[u] = c
    q = np.zeros(vocab)
    u, c = np.unique(np.asarray(eval_tok), return_counts=True)
    q[u] = c
    p = (n_tr + 1.0) / (n_tr.sum() + vocab)
    return float(stats.entropy(q) + stats.entropy(q, p))


TRACK_TOL = 1e-3  # float32 Lanczos agreement (relative) of the tracker and a fresh Lanczos
GAP_RATIO = 2.0  # a "visible" valley/river gap: lambda_k / lambda_{k+1} at least this

# Known disagreements (``expected="fail"``, see ``docs/papers/river_valley_lm.md``): what the full preset measures
# and why the claim fails there. The quick preset reaches the same regime and fails them for the same reasons.
WHY_EDGE_NARROWS = (
    "measured: momentum narrows the raw-lr divergence edge on this model (full preset, 5 seeds: GD ~10x, beta=0.5 "
    "~7x, beta=0.9 ~3.4x of 2/lambda_max(init)); GD trains ~10x past its quadratic threshold while heavy ball "
    "does not gain the quadratic factor 1+beta on top of it"
)
WHY_GD_EDGE = (
    "measured: GD's edge is ~10x (2^3.3) the quadratic threshold 2/lambda_max(init); the loss is not quadratic at "
    "init: lambda_max(theta_t) moves along the run (edge_of_stability.png), so the threshold at init does not "
    "set the stable lr"
)
WHY_EOS = (
    "measured: full-batch runs at 2 x 2/lambda_max(init) keep lr * lambda_max(theta_t) oscillating between ~2 and "
    "~10 step to step, second-half median ~3.6 for GD and HB beta=0.5 alike while the loss falls: the sharpness does "
    "not settle at the quadratic edge 2(1+beta) in {steps} steps"
)
WHY_GAP = (
    "measured: no gap in the top of the spectrum at init (largest consecutive ratio 1.25 +- 0.11 among the top "
    "20, lambda_1/lambda_20 = 4-8): the valley dimension is not identified by the spectrum on this model"
)
WHY_UNDECIDED = (
    "undecided, not contradicted: in the full preset too the interval over 5 seeds straddles the threshold "
    "({what}); the effect, if any, is below the seed-to-seed noise at this size"
)


def edge_claims(results: dict, cfg: Config) -> list[Claim]:
    """Divergence edges, bisected, over seeds (mini-batch SGD, cfg.steps steps): the raw-lr edge ratio (the
    paper's stability claim), the effective-lr gain edge(beta)/((1-beta) edge(GD)) beside the quadratic theory's
    (1+beta)/(1-beta) (its river-speed claim), and GD's edge beside its quadratic threshold."""
    out = []
    ed = seed_edges(results)  # [B, S]
    lo, hi = cfg.edge_bracket
    res_oct = np.log2(hi / lo) / 2**cfg.edge_iters  # final bracket width in octaves
    j0 = cfg.betas.index(0.0)
    for j, b in enumerate(cfg.betas):
        if b == 0:
            continue
        m, h, n = mean_ci(np.log2(ed[j] / ed[j0]))
        ci = h + res_oct  # seed interval + bisection resolution of the two edges (half a bracket each)
        eff = m - float(np.log2(1.0 - b))  # log2 of the effective-lr gain edge(b)/((1-b) edge(GD))
        theory = float(np.log2(float(rv.hb_threshold(1.0, b)) / float(rv.gd_threshold(1.0)) / (1.0 - b)))
        common = dict(kind="check", ci=ci, n_seeds=max(n, 2))
        # orderings of two measured edges (paired per seed): decided on the interval of the per-seed log ratio,
        # widened by the bisection resolution; they report their margin in half-widths, not a slack against 0
        out.append(
            Claim(
                f"momentum widens the stable raw lr range: edge(beta={b:g}) > edge(GD) (log2 ratio per seed, "
                f"bisected, {n} seeds)",
                0.0, m, 0.0, "ge", source="paper", expected="fail", reason=WHY_EDGE_NARROWS, is_ordering=True,
                **common,
            )
        )  # fmt: skip
        out.append(
            Claim(
                f"quadratic theory: effective-lr gain at the divergence edge edge(beta={b:g})/((1-beta) edge(GD)) "
                f"= (1+beta)/(1-beta) = {2**theory:.3g} (raw-lr ratio 1+beta; log2, 25% tolerance)",
                theory, eff, float(np.log2(1.25)), "abs", source="theory", expected="fail", reason=WHY_EDGE_NARROWS,
                **common,
            )
        )  # fmt: skip
        why = WHY_UNDECIDED.format(what="log2 gain ~0.6 +- 0.8")
        undecided = {} if b >= 0.9 else {"expected": "fail", "reason": why}
        out.append(
            Claim(
                f"heavy ball's effective-lr edge exceeds GD's: edge(beta={b:g})/(1-beta) > edge(GD) (log2 ratio "
                f"per seed; river speed at the edge; bisected, {n} seeds)",
                0.0, eff, 0.0, "ge", source="paper", is_ordering=True, **undecided, **common,
            )
        )  # fmt: skip
    m, h, n = mean_ci(np.log2(ed[j0]))
    out.append(
        Claim(
            "GD's bisected lr edge = quadratic threshold 2/lambda_max(init) (log2 of edge in units of it, "
            "25% tolerance)",
            0.0, m, float(np.log2(1.25)), "abs", source="theory", kind="check", ci=h + res_oct / 2,
            n_seeds=max(n, 2), expected="fail", reason=WHY_GD_EDGE,
        )
    )  # fmt: skip
    return out


def eos_claims(results: dict, cfg: Config) -> list[Claim]:
    """Edge of stability: lr * lambda_max(theta_t) in the second half of full-batch runs."""
    out = []
    sh = eos_sharpness(results, cfg)
    for r, (label, b, mult) in enumerate(eos_rows(cfg)):
        pred = float(rv.hb_threshold(1.0, b))  # 2(1+beta): the quadratic edge of lr * lambda
        if mult * 2.0 < pred * 0.999:
            continue  # started below its edge: reported in the figure, not claimed
        m, h, n = mean_ci(sh[r])
        out.append(
            Claim(
                f"edge of stability, full batch, {label} x 2/lambda_max(init): lr * lambda_max(theta_t) "
                f"hovers at 2(1+beta) = {pred:g} (median of the 2nd half, 20% tolerance)",
                pred,
                m,
                0.2,
                "rel",
                source="theory",
                kind="check",
                ci=h,
                n_seeds=max(n, 2),
                expected="fail",
                reason=WHY_EOS.format(steps=cfg.eos_steps),
            )
        )
    return out


def spectrum_claims(results: dict, cfg: Config) -> list[Claim]:
    """A valley/river gap in the top of the spectrum; the lambda_max tracker against a fresh Lanczos."""
    out = []
    # --- valley/river split: a gap in the top of the spectrum ---
    spec = np.asarray(results["hessian"]["spectrum"], np.float64)  # [S, K]
    ratios = np.where(spec[:, 1:] > 0, spec[:, :-1] / np.where(spec[:, 1:] > 0, spec[:, 1:], 1.0), np.nan)
    ratios = np.where(np.isfinite(ratios), ratios, 1.0)  # a pair reaching lambda <= 0 is not a valley gap
    m, h, n = mean_ci(np.max(ratios, axis=1))
    out.append(
        Claim(
            f"valley/river gap: largest lambda_k/lambda_(k+1) among the top {cfg.spectrum_k} Hessian "
            f"eigenvalues at init >= {GAP_RATIO:g}",
            GAP_RATIO,
            m,
            0.0,
            "ge",
            source="paper",
            kind="check",
            ci=h,
            n_seeds=max(n, 2),
            expected="fail",
            reason=WHY_GAP,
        )
    )

    # --- tracker (warm-started Lanczos every eos_every steps) against a fresh Lanczos at two points of each EoS run
    # An agreement of two estimators of one number (two-sided, |gap| = 0): neither a bound nor an ordering. The
    # tolerance is float32 Lanczos precision, not the 5% that any EoS claim could absorb: the two agree to ~1e-7 at
    # most points, the worst point of the full preset to 3.6e-4 (a near-degenerate top pair at the end of a run).
    out.append(
        Claim(
            f"lambda_max tracking: {cfg.track_iters} warm-started Lanczos steps every {cfg.eos_every} "
            f"steps = independent Lanczos ({cfg.lanczos_iters} steps, random start) at mid-run and at the end of "
            f"every EoS run (largest relative gap, within +-{TRACK_TOL:g})",
            0.0,
            float(np.max(tracker_vs_lanczos(results))),
            TRACK_TOL,
            "abs",
            kind="check",
        )
    )
    return out


def over_seeds(statement, predicted, samples, comparison, **kw) -> Claim:
    """A check on the mean over seeds of ``samples`` (95% interval), zero tolerance."""
    m, h, n = mean_ci(samples)
    return Claim(statement, predicted, m, 0.0, comparison, kind="check", ci=h, n_seeds=max(n, 2), **kw)


def ordering(statement, larger, smaller, **kw) -> Claim:
    """``larger > smaller`` per seed, decided on the interval of the paired differences (``Claim.ordering``);
    ``expected`` / ``reason`` / ``source`` as for a Claim."""
    expect = {k: kw.pop(k) for k in ("expected", "reason") if k in kw}
    return dataclasses.replace(Claim.ordering(statement, larger, smaller, **kw), **expect)


def mechanism_claims(results: dict, cfg: Config) -> list[Claim]:
    """Mechanism checks over seeds: full-batch trajectories, loss map, AdamW grid, valley/river split."""
    out = []
    d = results["decomposition"]
    loss = np.asarray(d["loss"], np.float64)  # [2 (HB, GD), S, T]
    ms = f"{cfg.map_seeds} seeds"
    out.append(
        ordering(
            f"same lr {cfg.decomp_lr_mult:g} x 2/lambda_max, full batch: HB beta={cfg.decomp_beta:g} ends "
            f"lower than GD (GD - HB final loss per seed, nats; {cfg.n_seeds} seeds)",
            loss[1, :, -1],
            loss[0, :, -1],
        )
    )
    s = results["sgd"]
    best = np.nanmin(np.asarray(s["final_loss"], np.float64), axis=0)  # [B, S]
    bmax = int(np.argmax(np.asarray(s["beta"])))
    out.append(
        ordering(
            f"SGD grid: best final val loss with beta={cfg.betas[bmax]:g} <= GD's (GD - HB per seed, nats; {ms})",
            best[0],
            best[bmax],
            expected="fail",
            reason=WHY_UNDECIDED.format(what="~0.04 +- 0.08 nats"),
        )
    )
    abest = np.nanmin(np.asarray(results["adam"]["final_loss"], np.float64), axis=0)  # [B1, S]
    out.append(
        ordering(
            f"AdamW check: best final val loss with beta1={cfg.adam_beta1s[-1]:g} <= beta1="
            f"{cfg.adam_beta1s[0]:g}'s (difference per seed, nats; {ms})",
            abest[0],
            abest[-1],
            expected="fail",
            reason=WHY_UNDECIDED.format(what="~-0.02 +- 0.04 nats"),
        )
    )
    k, n_p = cfg.top_k, int(d["n_params"])
    gfrac = np.asarray(d["grad_frac_top"], np.float64)  # [S]
    out.append(
        over_seeds(
            f"valley: gradient fraction in the top-{k} Hessian directions / random-subspace share k/P",
            100.0,
            gfrac / (k / n_p),
            "ge",
            source="reconstruction",
        )
    )
    out.append(
        ordering(
            f"river: HB displacement fraction in the top-{k} directions <= the gradient's (difference per seed)",
            gfrac,
            np.asarray(d["disp_frac_top"], np.float64)[0],
            source="reconstruction",
        )
    )
    lr_only = np.asarray(d["loss_river_only"], np.float64)
    m, h, n = mean_ci((loss[0, :, 0] - lr_only[0, :, -1]) / (loss[0, :, 0] - loss[0, :, -1]))
    out.append(
        Claim(
            "HB: the river part of d_T alone keeps >= 90% of the loss decrease (L0-L(river))/(L0-L_T)",
            1.0,
            m,
            0.1,
            "ge",
            source="reconstruction",
            kind="check",
            ci=h,
            n_seeds=max(n, 2),
            expected="fail",
            reason=WHY_UNDECIDED.format(what="~0.9 +- 0.16 against 0.9"),
        )
    )
    return out


UNIGRAM_TOL = 1e-10  # float64 rounding of two sums over <= 4e4 validation bytes taken in different orders
DESCENT_MIN = 1e-3  # nats: a decrease float32 evaluation of the loss resolves (~1e-6) with room; 0 = no training


def baseline_claims(results: dict, cfg: Config) -> list[Claim]:
    """The loss scale the study is read on: the unigram baseline the figures draw (recomputed independently from
    the corpus) and descent from the initial loss below GD's quadratic threshold (mini-batch, every map seed)."""
    out = []
    train_tok, val_tok = corpus.load_corpus(max_bytes=cfg.corpus_bytes)
    ref = unigram_cross_entropy(train_tok, val_tok, corpus.tokenizer.VOCAB_SIZE)
    out.append(
        Claim(
            f"unigram baseline: the run's cross-entropy of the add-one-smoothed byte unigram model on the validation "
            f"split = H(q) + KL(q||p) by scipy.stats.entropy from independent counts ({ref:.4f} nats/byte; "
            f"float64 rounding, +-{UNIGRAM_TOL:g})",
            ref, float(results["unigram_loss"]), UNIGRAM_TOL, "abs", source="theory", kind="check",
            wide_reason="two float64 evaluations of one closed form: they agree to rounding (~1e-15), no noise "
            "sets a scale; the tolerance is the rounding bound of the sums",
        )
    )  # fmt: skip
    s = results["sgd"]
    j0 = cfg.betas.index(0.0)
    init = np.asarray(results["init_loss"], np.float64)[: cfg.map_seeds]
    final = np.asarray(s["final_loss"], np.float64)[0, j0]  # smallest grid lr, GD, per seed
    lo = float(np.asarray(s["lr_mult"])[0])
    out.append(
        ordering(
            f"descent below the quadratic threshold: mini-batch GD at lr = {lo:g} x 2/lambda_max(init) lowers the "
            f"validation loss in {cfg.steps} steps: L(init) - L_T > {DESCENT_MIN:g} nats (per seed, "
            f"{cfg.map_seeds} seeds)",
            init, final, source="theory", at_least=DESCENT_MIN,
        )
    )  # fmt: skip
    return out


def claims(results: dict, cfg: Config) -> list[Claim]:
    return [
        *baseline_claims(results, cfg),
        *edge_claims(results, cfg),
        *eos_claims(results, cfg),
        *spectrum_claims(results, cfg),
        *mechanism_claims(results, cfg),
    ]
