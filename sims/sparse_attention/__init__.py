"""The sparse-attention core on a real diffusion LM: Step-dLLM measured on attention maps a trained model makes.

Papers: Step-dLLM (block-sparse attention for diffusion LMs: masks refreshed at anchor steps, a head-adaptive
block budget) and Louver (sparse attention as halfspace range searching, zero false negatives at a threshold),
NeurIPS 2026. Reproduced: the claims Step-dLLM's method rests on (local consistency of the block masks across
denoising steps, shifts at transitions, heads differing in concentration) and the policies themselves, measured
on a trained tiny diffusion LM instead of LLaDA-1.5 / Dream-7B; Louver's zero-false-negative guarantee for one
flat level of per-block bounds. A reconstruction: the model, its corpus and the policies' scoring (the papers'
models, index and GPU kernels are not used); speed is CPU time of the XLA paths, not the papers' GPU numbers.
Notes: ``docs/papers/sparse_attention.md``.

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
  louver   (``louver``) threshold retrieval on the model's q, k; zero false negatives checked against
           float64 scores. Reproduced: one flat level of per-block ball/box bounds; not the paper's index.
  speed    (``speed``) block-sparse vs the same XLA implementation with every block listed (and the dense XLA path), in
           process CPU time.

The synthetic trajectory of ``jaxwb.theory.sparse_attention`` is used only by unit tests.

Package layout (the result template of ``jaxwb.sims.core.contract``): ``config`` (NAME, TITLE, Config, presets),
``run`` (``run``: the four studies put together), ``claims``, ``figures`` (``plot``, one function per figure),
``mutants`` (MUTANTS); the studies in ``trajectory``, ``policy``, ``louver`` and ``speed``.

Figures (``figures/sparse_attention/``): maps.png (example block-pooled maps around a transition),
overlap.png (overlap per step / by lag, head concentration), policy_budget.png, refresh_period.png,
per_step.png, louver.png, speed.png.
"""

from __future__ import annotations

from jaxwb.sims.sparse_attention.claims import claims
from jaxwb.sims.sparse_attention.config import DISPLAY_ONLY, NAME, PRESETS, TITLE, Config
from jaxwb.sims.sparse_attention.figures import plot
from jaxwb.sims.sparse_attention.mutants import MUTANTS
from jaxwb.sims.sparse_attention.run import run

__all__ = ["DISPLAY_ONLY", "MUTANTS", "NAME", "PRESETS", "TITLE", "Config", "claims", "plot", "run"]
