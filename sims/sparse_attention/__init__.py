"""The sparse-attention core on a real diffusion LM: Step-dLLM measured on attention maps a trained model makes.

Spec: ``shared/papers/sparse_attention.md``; notes: ``docs/papers/sparse_attention.md``.

A tiny masked-diffusion LM (``jaxwb.models.diffusion_lm``: bidirectional, LLaDA objective, trained on the shipped
byte corpus and cached) decodes held-out prompts by semi-autoregressive iterative unmasking, sampling at
``cfg.temperature`` with ``cfg.remasking`` and one explicit key per prompt (the argmax decoder collapses onto
whitespace; it is run only for that comparison); every step's per-layer, per-head attention is recorded, pooled
to the kernel's blocks. Denoising quality: masked-token accuracy, the per-step teacher-forced NLL of the
held-out bytes vs the byte marginals, and the generated text's statistics. Four studies:
  maps     (``trajectory``) what Step-dLLM's argument rests on, per prompt: top-k block-mask overlap between
           consecutive steps vs distant steps vs a shuffled null; its drop at the transitions (decoding moves
           to the next block); how concentrated each head is (permutation test over head labels).
  policy   (``policy``) first-step-only vs anchor-refreshed masks (refresh-period sweep), uniform vs
           head-adaptive budget at equal density, scored along the dense trajectory: attention-output error;
           end to end with ``block_sparse_attention`` in every layer, KL(dense || sparse) of the per-step token
           distributions on the dense run's states, and the held-out bytes' NLL / accuracy under teacher-forced
           denoising of the real continuation (sparse minus dense). Reported, not decided on: free-running
           sparse decoding with the dense run's key (agreement with the dense run, which sits at a divergence
           floor; the dense model's NLL of the sparse output).
  louver   (``louver_speed``) threshold retrieval on the model's q, k; zero false negatives checked against
           float64 scores. Reproduced: one flat level of per-block ball/box bounds; not the paper's index.
  speed    block-sparse vs the same XLA implementation with every block listed (and the dense XLA path), in
           process CPU time.

The synthetic trajectory of ``jaxwb.theory.sparse_attention`` is used only by unit tests.

Figures (``figures/sparse_attention/``): maps.png (example block-pooled maps around a transition),
overlap.png (overlap per step / by lag, head concentration), policy_budget.png, refresh_period.png,
per_step.png, louver.png, speed.png.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.core.audit import Mutant
from jaxwb.sims.sparse_attention import louver_speed, policy, trajectory
from jaxwb.sims.sparse_attention.claims import claims
from jaxwb.sims.sparse_attention.config import PRESETS, Config
from jaxwb.sims.sparse_attention.figures import plot
from jaxwb.theory import sparse_attention as sa

NAME = "sparse_attention"
TITLE = "Sparse attention on a trained diffusion LM: Step-dLLM masks on real trajectories, Louver, speed"

__all__ = ["MUTANTS", "NAME", "PRESETS", "TITLE", "Config", "claims", "plot", "run"]


def run(cfg: Config, *, key: jax.Array) -> dict:
    k_eval, k_prompt, k_null, k_speed, k_dec = jax.random.split(key, 5)
    model = trajectory.get_model(cfg)
    quality = trajectory.denoising_quality(model, cfg, key=k_eval)
    truth = trajectory.held_out(cfg, cfg.n_prompts, key=k_prompt)
    keys = trajectory.decode_keys(cfg.n_prompts, key=k_dec)
    final, states = trajectory.dense_runs(model, truth, cfg, keys)
    # the deterministic decoder (argmax, low-confidence remasking) for comparison: it collapses onto whitespace
    argmax_final, _ = trajectory.dense_runs(model, truth, cfg, keys, temperature=0.0, remasking="low_confidence")
    quality["step_nll"], quality["unigram_step_nll"] = trajectory.step_nll(model, states, truth, cfg)
    gen = np.arange(cfg.seq_len) >= cfg.prompt_len
    texts = {"sampled": final, "argmax": argmax_final, "held_out": truth}
    quality["text"] = {name: trajectory.text_stats(t, cfg) for name, t in texts.items()}
    true, imp = trajectory.record_maps(model, states, cfg)
    maps = trajectory.map_statistics(true, cfg, key=k_null)
    head_spread = trajectory.head_spread_test(maps["topk_mass"], cfg.n_perm)

    masks = policy.offline_masks(imp, true, cfg)
    # the same policies on the teacher-forced trajectory (held-out bytes at the committed positions), their
    # masks from that trajectory's own pooled q, k
    true_tf, imp_tf = trajectory.record_maps(model, policy.teacher_forced_states(states, truth), cfg)
    masks_tf = policy.offline_masks(imp_tf, true_tf, cfg)
    del true_tf, imp_tf
    names = ("uniform", "concentration", "oracle", "stale", "global")
    sizes = [masks[n].shape[0] for n in names]
    cat = lambda m: jnp.concatenate([m[n] for n in names])
    scores = policy.score_offline(model, states, truth, cat(masks), cat(masks_tf), cfg)
    pol, start = {}, 0
    for n, s in zip(names, sizes, strict=True):
        pol[n] = {f: scores[f][start : start + s] for f in ("err", "kl", "dnll", "dacc")}
        pol[n]["density"] = jnp.mean(masks[n], axis=(1, 2, 3, 4, 5, 6))
        start += s
    r_one = policy.policy_grid(cfg)[0].tolist().index(1) * len(cfg.budgets) + list(cfg.budgets).index(cfg.main_budget)
    pol["blocks_per_head"] = jnp.mean(masks["concentration"][r_one], axis=(-2, -1))  # [N, T, nl, H]
    pol["head_concentration"] = sa.head_concentration(imp.reshape(-1, *imp.shape[-3:])).reshape(imp.shape[:4])
    pol["dense_nll"], pol["dense_acc"] = scores["dense_nll"], scores["dense_acc"]

    periods = jnp.asarray(cfg.periods, jnp.int32)
    budgets = jnp.full(periods.shape, cfg.main_budget, jnp.float32)
    dense_path = trajectory.path_nlls(model, states, final)  # [N]
    online = {"dense_accuracy": jnp.mean((final == truth)[:, gen], axis=-1), "dense_path_nll": dense_path}
    for a in cfg.online_allocs:
        p_a, b_a = periods, budgets
        if a == "uniform":  # plus one row keeping every block: it must reproduce the dense text (coupling check)
            p_a, b_a = jnp.append(periods, 1), jnp.append(budgets, 1.0)
        out, out_states = policy.online_runs(model, truth, keys, p_a, b_a, cfg, alloc=a)  # [R, N, (T,) L]
        if a == "uniform":
            online["every_block_agreement"] = jnp.mean((out[-1] == final)[:, gen], axis=-1)  # [N]
            out, out_states = out[:-1], out_states[:-1]
        online[a] = {
            "agreement": jnp.mean((out == final[None])[..., gen], axis=-1),
            "accuracy": jnp.mean((out == truth[None])[..., gen], axis=-1),
            "dpath_nll": trajectory.path_nlls(model, out_states, out) - dense_path[None],
        }
    n_show = min(3, cfg.n_prompts)
    return {
        "quality": quality,
        "sample": {
            "prompt_and_text": final[0],
            "truth": jnp.asarray(truth[0]),
            "states": states[0],
            "texts": {name: jnp.asarray(t[:n_show]) for name, t in texts.items()},
        },
        "maps": maps,
        "example_maps": true[0, :, -1],  # [T, H, Qb, Kb]: last layer of prompt 0
        "head_spread": {k: np.float64(v) for k, v in head_spread.items()},
        "policy": pol,
        "online": online,
        "louver": louver_speed.louver_study(model, states, cfg),
        "speed": louver_speed.speed_study(cfg, key=k_speed),
    }


def _uniform_budgets(f):
    def head_budgets(importance, budget):
        kb = importance.shape[-1]
        return jnp.full((importance.shape[0],), jnp.clip(jnp.round(budget * kb).astype(jnp.int32), 1, kb))

    return head_budgets


MUTANTS = [
    Mutant(
        "anchor_refresh_disabled",
        "jaxwb.theory.sparse_attention:anchor_steps",
        lambda f: lambda num_steps, period: f(num_steps, num_steps),
        "anchor refresh disabled: only step 0 computes a mask, every policy is first-step-only",
    ),
    Mutant(
        "head_budget_uniform",
        "jaxwb.theory.sparse_attention:head_budgets",
        _uniform_budgets,
        "head-adaptive budget replaced by the uniform round(rho Kb) blocks for every head",
    ),
    Mutant(
        "mask_from_wrong_step",
        "jaxwb.theory.sparse_attention:mask_trajectory",
        lambda f: lambda imp, anchors, budget, **kw: f(imp[::-1], anchors, budget, **kw),
        "the mask of step t computed from step T-1-t's maps (step index confused with diffusion time)",
    ),
]
