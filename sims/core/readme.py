"""Keep README.md's results table honest: its claims column is generated from the committed claims.json files.

``workbench claims --readme`` rewrites the last cell of each row between ``<!-- results-table -->`` and the end
of that table as ``passed/total (c check, b bound (l loose), p paper; w wide (j justified), x expected to
fail)``; the other cells are the authors' prose. Only check/bound/paper claims exist (identities are unit
tests), so these counts are what the README reports.
"""

from __future__ import annotations

import re
from pathlib import Path

from jaxwb.sims.core.claims import format_counts
from jaxwb.sims.core.outputs import atomic_write_text, load_claims
from jaxwb.sims.core.paths import FIGURES_DIR, REPO_ROOT

MARKER = "<!-- results-table -->"
_ROW = re.compile(r"^\| \[(?P<name>[a-z0-9_]+)\]\(")


def claims_cell(name: str, figures_dir: Path = FIGURES_DIR) -> str:
    claims = load_claims(name, figures_dir)
    if claims is None:
        return "not run yet"
    return f"{sum(c.passed for c in claims)}/{len(claims)} ({format_counts(claims)})"


def update_results_table(readme: Path = REPO_ROOT / "README.md", figures_dir: Path = FIGURES_DIR) -> list[str]:
    """Rewrite the claims column of the README's results table; returns the names of the rows updated."""
    lines = readme.read_text().split("\n")
    if MARKER not in lines:
        return []
    i = lines.index(MARKER) + 1
    updated = []
    while i < len(lines) and lines[i].startswith("|"):
        m = _ROW.match(lines[i])
        if m:
            cells = lines[i].rstrip().rstrip("|").split(" | ")
            cells[-1] = claims_cell(m.group("name"), figures_dir)
            lines[i] = " | ".join(cells) + " |"
            updated.append(m.group("name"))
        i += 1
    atomic_write_text(readme, "\n".join(lines))
    return updated


RANDOM_MARKER = "<!-- random-audit -->"
RANDOM_END = "<!-- /random-audit -->"


def random_audit_table(figures_dir: Path = FIGURES_DIR) -> str:
    """The markdown table of ``figures/audit/random/*.json``: per result, mechanical mutants caught /
    non-equivalent with the 95% Wilson interval, the equivalent ones and those caught by the run raising."""
    from jaxwb.sims.core.mutate import load_random_audit

    lines = [
        "| result | caught / non-equivalent | 95% Wilson | equivalent | caught by raising | drawn from |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    from jaxwb.sims.core import registry

    folder = figures_dir / "audit" / "random"
    for name in sorted({*registry.result_names(), *(f.stem for f in folder.glob("*.json"))}):
        path = folder / f"{name}.json"
        if not path.exists():
            lines.append(f"| {name} | not run yet on its current quick preset | | | | |")
            continue
        s = load_random_audit(path)
        if s.get("refused"):
            lines.append(f"| {s['result']} | not judged (clean quick run fails) | | | | |")
            continue
        lo, hi = s.get("wilson_95", [float("nan"), float("nan")])
        partial = f" (incomplete: {len(s['mutants'])} of {s['n']} judged)" if s.get("complete") is False else ""
        lines.append(
            f"| {s['result']} | {s['caught']}/{s['non_equivalent']}{partial} | {100 * lo:.0f}-{100 * hi:.0f}% | "
            f"{s['equivalent']}{f' (+{s["not_applied"]} not applied)' if s.get('not_applied') else ''} | "
            f"{s.get('caught_by_error', 0)} | {s['sites']} sites, {s['functions']} functions |"
        )
    return "\n".join(lines)


def update_random_audit_table(readme: Path = REPO_ROOT / "README.md", figures_dir: Path = FIGURES_DIR) -> bool:
    """Rewrite the README's block between ``<!-- random-audit -->`` and ``<!-- /random-audit -->``; False when the
    README has no such block."""
    text = readme.read_text()
    if RANDOM_MARKER not in text or RANDOM_END not in text:
        return False
    head, rest = text.split(RANDOM_MARKER, 1)
    _, tail = rest.split(RANDOM_END, 1)
    atomic_write_text(readme, f"{head}{RANDOM_MARKER}\n{random_audit_table(figures_dir)}\n{RANDOM_END}{tail}")
    return True
