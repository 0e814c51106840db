"""``run`` of the sparse-attention result: the trained diffusion LM's dense runs and their maps (``trajectory``),
the mask policies scored along them and free-running sparse decoding (``policy``), Louver (``louver``) and the
block-sparse speed study (``speed``)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.sparse_attention import louver, policy, speed, trajectory
from jaxwb.sims.sparse_attention.config import Config
from jaxwb.theory import sparse_attention as sa

POLICIES = ("uniform", "concentration", "oracle", "stale", "global")


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
    texts = {"sampled": final, "argmax": argmax_final, "held_out": truth}
    quality["text"] = {name: trajectory.text_stats(t, cfg) for name, t in texts.items()}
    true, imp = trajectory.record_maps(model, states, cfg)
    maps = trajectory.map_statistics(true, cfg, key=k_null)
    head_spread = trajectory.head_spread_test(maps["topk_mass"].mean(axis=1), cfg.n_perm)  # per head: mean over steps
    pol = policy_results(model, states, truth, true, imp, cfg)
    mid_qkv = trajectory.step_qkv(model, states[:, mid_step(cfg)])  # [N, nl, 3, H, L, Dh]
    reference = reference_inputs(mid_qkv, true, pol.pop("mid_mask"), pol.pop("mid_greedy"), cfg)
    online = online_results(model, truth, keys, final, states, cfg)
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
        "reference": reference,
        "louver": louver.louver_study(mid_qkv, cfg),
        "speed": speed.speed_study(cfg, key=k_speed),
    }


def policy_results(model, states, truth, true, imp, cfg: Config) -> dict:
    """Every policy and reference scored along the dense trajectory (``policy.score_offline``): per policy its
    ``err``, ``kl``, ``dnll``, ``dacc`` and block ``density``; the head-adaptive allocation's blocks per head and
    the heads' concentration; the dense model's teacher-forced NLL and accuracy."""
    masks = policy.offline_masks(imp, true, cfg)
    # the same policies on the teacher-forced trajectory (held-out bytes at the committed positions), their
    # masks from that trajectory's own pooled q, k
    true_tf, imp_tf = trajectory.record_maps(model, policy.teacher_forced_states(states, truth), cfg)
    masks_tf = policy.offline_masks(imp_tf, true_tf, cfg)
    del true_tf, imp_tf
    sizes = [masks[n].shape[0] for n in POLICIES]
    cat = lambda m: jnp.concatenate([m[n] for n in POLICIES])
    scores = policy.score_offline(model, states, truth, cat(masks), cat(masks_tf), cfg)
    pol: dict[str, Any] = {}
    start = 0
    for n, s in zip(POLICIES, sizes, strict=True):
        pol[n] = {f: scores[f][start : start + s] for f in ("err", "kl", "dnll", "dacc")}
        pol[n]["density"] = jnp.mean(masks[n], axis=(1, 2, 3, 4, 5, 6))
        start += s
    r_one = policy.policy_grid(cfg)[0].tolist().index(1) * len(cfg.budgets) + list(cfg.budgets).index(cfg.main_budget)
    pol["blocks_per_head"] = jnp.mean(masks["concentration"][r_one], axis=(-2, -1))  # [N, T, nl, H]
    pol["head_concentration"] = sa.head_concentration(imp.reshape(-1, *imp.shape[-3:])).reshape(imp.shape[:4])
    pol["dense_nll"], pol["dense_acc"] = scores["dense_nll"], scores["dense_acc"]
    pol["mid_mask"] = np.asarray(masks["uniform"])[
        r_one, :, mid_step(cfg)
    ]  # [N, nl, H, Qb, Kb], for ``reference_inputs``
    a = greedy_step(cfg)  # the mass-greedy reference's mask at that anchor and the importance it was selected from
    pol["mid_greedy"] = {"mask": np.asarray(masks["global"])[0, :, a], "importance": np.asarray(imp)[:, a]}
    return pol


def mid_step(cfg: Config) -> int:
    """The denoising step at which the pipeline is checked against the float64 references (``reference``)."""
    return cfg.steps // 2


def greedy_step(cfg: Config) -> int:
    """The anchor step of the main refresh period at or before :func:`mid_step`: the mass-greedy reference's mask
    there is selected from that step's own importance."""
    return mid_step(cfg) // cfg.main_period * cfg.main_period


def reference_inputs(qkv, true, mask, greedy, cfg: Config) -> dict:
    """What the float64 references (``jaxwb.sims.sparse_attention.reference``) are checked on, at the middle step
    of every prompt's dense run: every layer's q, k, v (heads first, [N, nl, H, L, Dh]), the recorded block
    attention maps there (``true [N, nl, H, Qb, Kb]``) and the uniform-budget mask refreshed at every step at the
    main budget (``mask``, bool, same shape: the mask behind ``policy/uniform/err`` of that row and step), from
    ``qkv`` [N, nl, 3, H, L, Dh] (``trajectory.step_qkv`` at that step); and, at :func:`greedy_step`, the
    mass-greedy reference's mask behind ``policy/global`` (``greedy_mask``) with the pooled importance it was
    selected from (``greedy_importance``, both [N, nl, H, Qb, Kb])."""
    qkv = np.asarray(qkv)  # numpy slices: no eager jax op (each one compiles)
    return {
        "q": qkv[:, :, 0],
        "k": qkv[:, :, 1],
        "v": qkv[:, :, 2],
        "true": np.asarray(true)[:, mid_step(cfg)],
        "mask": mask,
        "greedy_mask": greedy["mask"],
        "greedy_importance": greedy["importance"],
    }


def online_results(model, truth, keys, final, states, cfg: Config) -> dict:
    """Free-running sparse decoding (reported, not decided on) at every refresh period and the main budget, per
    allocation in ``cfg.online_allocs``: agreement with the dense run, accuracy against the held-out text, and
    the dense model's NLL of the output along the run's own order minus the dense run's; plus the coupling check
    (every block kept reproduces the dense text)."""
    gen = np.arange(cfg.seq_len) >= cfg.prompt_len
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
    return online
