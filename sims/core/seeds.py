"""The seed sweep: a result's claims at many seeds, so that a verdict is known not to depend on seed 0.

``workbench audit NAME --seeds A:B [--full]`` runs the preset at each seed ``A .. B-1`` in one process (the
compiled programs of the first seed serve the others: a seed is an argument, never a static one), decides each
run's claims as the harness does (:func:`jaxwb.sims.core.claims.evaluate`) and writes
``figures/audit/seeds/<name>.json``: per claim its expectation, its outcome at every seed and its pass rate; per
seed whether every expectation was met. The quick and full sweeps are kept side by side in that file.

A claim is *decided* when its outcome is the same at every swept seed. One that flips is underpowered (its
interval straddles its threshold at some seeds): give it the seeds its effect needs, or claim the bound the data
supports. A claim is expected to fail only if it fails at every swept seed, with its measured reason.

``workbench audit --check`` tells whether a committed sweep is current: the quick sweep's first seed is run again
(the same clean run as the random audit's check) and must give the same statements and outcomes; the full sweep's
seed 0 must be the committed ``figures/<name>/claims.json``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from jaxwb.sims.core.claims import Claim, evaluate
from jaxwb.sims.core.errors import OutputError, WorkbenchError
from jaxwb.sims.core.outputs import run_result

PRESETS = ("quick", "full")


def parse_seeds(text: str) -> list[int]:
    """``"A:B"`` -> ``[A, ..., B-1]`` (0 <= A < B <= 2**32); :class:`WorkbenchError` naming ``--seeds`` otherwise."""
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        a, b = (int(p) for p in parts)
    except ValueError:
        raise WorkbenchError(f"--seeds must be A:B (seeds A to B-1, e.g. 0:10), got {text!r}") from None
    if not 0 <= a < b <= 2**32:
        raise WorkbenchError(f"--seeds must satisfy 0 <= A < B <= 2**32, got {text!r}")
    return list(range(a, b))


def claim_record(c: Claim) -> dict[str, Any]:
    """What a sweep keeps of one claim at one seed."""
    return {"status": c.status, "measured": c.measured, "ci": c.ci}


def sweep(
    module: ModuleType,
    seeds: Sequence[int],
    *,
    preset: str = "quick",
    on_seed: Callable[[int, list[Claim], float], None] | None = None,
) -> dict[str, Any]:
    """Run ``module``'s ``preset`` at each of ``seeds`` and tabulate its claims (see the module docstring).

    Claims are matched across seeds by statement (a statement absent at some seed is recorded as ``None``
    there). ``on_seed(seed, claims, wall_s)`` is called after each seed (progress, partial writes)."""
    import jax

    from jaxwb.sims.core.presets import get_config

    if preset not in PRESETS:
        raise WorkbenchError(f"preset must be one of {', '.join(PRESETS)}, got {preset!r}")
    cfg = get_config(module, preset)
    per_seed: list[list[Claim]] = []
    walls = []
    for seed in seeds:
        t0 = time.perf_counter()
        results = run_result(module, cfg, key=jax.random.key(seed))
        claims = evaluate(module, results, cfg)
        walls.append(round(time.perf_counter() - t0, 2))
        per_seed.append(claims)
        if on_seed is not None:
            on_seed(seed, claims, walls[-1])
    return tabulate(module.NAME, preset, list(seeds), per_seed, walls)


def tabulate(
    name: str, preset: str, seeds: list[int], per_seed: list[list[Claim]], walls: list[float]
) -> dict[str, Any]:
    """The sweep's JSON from the claims of each seed (``per_seed[i]`` at ``seeds[i]``).

    Claims are matched by position when every seed has the same number of them (a statement may quote a number
    that moves with the seed), else by statement (one absent at a seed is ``None`` there)."""
    rows: list[list[Claim | None]]
    if per_seed and all(len(c) == len(per_seed[0]) for c in per_seed):
        rows = [[claims[i] for claims in per_seed] for i in range(len(per_seed[0]))]
    else:
        order: list[str] = list(dict.fromkeys(c.statement for claims in per_seed for c in claims))
        rows = [[next((c for c in claims if c.statement == st), None) for claims in per_seed] for st in order]
    table = []
    for row in rows:
        c0 = next(c for c in row if c is not None)
        statement = c0.statement
        at = [None if c is None else claim_record(c) for c in row]
        met = [r is not None and r["status"] in ("PASS", "XFAIL") for r in at]
        passed = [r is not None and r["status"] in ("PASS", "XPASS") for r in at]
        table.append(
            {
                "statement": statement,
                "kind": c0.kind,
                "comparison": c0.comparison,
                "expected": c0.expected,
                "pass_rate": sum(passed) / len(at),
                "as_expected_rate": sum(met) / len(at),
                "decided": len(set(passed)) == 1,
                "at": at,
            }
        )
    met_all = [all(c.as_expected for c in claims) for claims in per_seed]
    return {
        "result": name,
        "preset": preset,
        "seeds": seeds,
        "met_every_expectation": met_all,
        "met_rate": sum(met_all) / len(met_all) if met_all else 0.0,
        "flipping": [t["statement"] for t in table if not t["decided"]],
        "claims": table,
        "wall_s": walls,
    }


def summary_line(s: dict[str, Any]) -> str:
    """One line: seeds, the share of seeds meeting every expectation, and how many claims flip."""
    seeds = s["seeds"]
    span = f"{seeds[0]}:{seeds[-1] + 1}" if seeds else "none"
    n_met = sum(s["met_every_expectation"])
    flips = len(s["flipping"])
    return (
        f"{s['result']} [{s['preset']}, seeds {span}]: every expectation met at {n_met}/{len(seeds)} seeds; "
        f"{len(s['claims']) - flips} of {len(s['claims'])} claims decided the same at every seed"
        + (f", {flips} flip" if flips else "")
    )


def format_flips(s: dict[str, Any]) -> str:
    """The claims that flip or miss their expectation at some seed, with their pass rate and statuses."""
    lines = []
    for t in s["claims"]:
        if t["decided"] and t["as_expected_rate"] == 1.0:
            continue
        statuses = " ".join("-" if r is None else r["status"] for r in t["at"])
        lines.append(f"  {100 * t['pass_rate']:5.1f}% pass  [{statuses}]  {t['statement']}")
    return "\n".join(lines)


SEEDS_SCHEMA = ("result", "preset", "seeds", "met_every_expectation", "claims")


def sweep_problem(s: Any) -> str | None:
    """Why ``s`` is not a sweep :func:`tabulate` wrote, or None."""
    if not isinstance(s, dict):
        return f"it holds a JSON {type(s).__name__}, not a sweep object"
    missing = [k for k in SEEDS_SCHEMA if k not in s]
    if missing:
        return f"{missing[0]!r} is missing"
    if s["preset"] not in PRESETS:
        return f"'preset' must be one of {', '.join(PRESETS)}, got {s['preset']!r}"
    seeds = s["seeds"]
    if not isinstance(seeds, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds):
        return "'seeds' is not a list of integers"
    if not isinstance(s["claims"], list) or not all(
        isinstance(t, dict)
        and isinstance(t.get("statement"), str)
        and isinstance(t.get("at"), list)
        and len(t["at"]) == len(seeds)
        for t in s["claims"]
    ):
        return "'claims' is not a list of claim records with one entry per seed"
    return None


def load(path: str | Path) -> dict[str, Any]:
    """The committed sweeps in ``path`` (``{"quick": sweep, "full": sweep}``, either may be absent), checked;
    :class:`OutputError` naming the file when it is damaged."""
    from jaxwb.sims.core.outputs import read_json

    data = read_json(path)
    if not isinstance(data, dict) or not set(data) <= set(PRESETS):
        raise OutputError(f"{path}: not a seed sweep (an object with 'quick' and/or 'full'): the file is damaged")
    for preset, s in data.items():
        problem = sweep_problem(s)
        if problem is None and s["preset"] != preset:
            problem = f"its {preset!r} sweep says preset {s['preset']!r}"
        if problem is not None:
            raise OutputError(f"{path}: {preset}: {problem}: the file is damaged")
    return data


def stale(committed: dict[str, Any], claims_at_first_seed: list[Claim] | None, full_claims: list[Claim] | None):
    """Lines saying how a committed sweep no longer matches the code ([] when current).

    ``claims_at_first_seed``: a fresh quick run's claims at the quick sweep's first seed; ``full_claims``: the
    committed full-preset ``claims.json`` (seed 0)."""
    lines = []
    for preset, fresh in (("quick", claims_at_first_seed), ("full", full_claims)):
        s = committed.get(preset)
        if s is None or fresh is None or not s["seeds"]:
            continue
        if preset == "full" and s["seeds"][0] != 0:
            continue
        recorded = [(t["statement"], t["at"][0] and t["at"][0]["status"]) for t in s["claims"] if t["at"][0]]
        now = [(c.statement, c.status) for c in fresh]
        if sorted(recorded) != sorted(now):  # the order in which a result lists its claims is not an outcome
            diff = sorted(set(recorded) ^ set(now))
            example = diff[0] if diff else "a claim listed a different number of times"
            lines.append(f"{preset} sweep, seed {s['seeds'][0]}: {len(diff)} claim(s) differ, e.g. {example}")
    return lines
