"""What the end-to-end tests of every result check alike: the files a run writes (against the committed
full-preset run's, ``figures/NAME/manifest.json``), its claims' outcomes, and a Config refusing bad fields."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from jaxwb.sims.core import paths
from jaxwb.sims.core.claims import Claim, format_claims


def assert_outputs(out_dir: Path, name: str, *, preset: str = "quick", all_figures: bool = True) -> dict:
    """The run of result ``name`` in ``out_dir`` wrote its manifest, data and claims and its figures, each
    non-empty; its figures are those of the committed full-preset run (``all_figures=False``: some of them, as a
    smaller run may draw fewer) and its manifest names ``preset``. Returns the run's manifest."""
    manifest = json.loads((out_dir / "manifest.json").read_text())
    assert manifest["preset"] == preset
    committed = json.loads((paths.FIGURES_DIR / name / "manifest.json").read_text())["figures"]
    drawn = manifest["figures"]
    if all_figures:
        assert sorted(drawn) == sorted(committed), (drawn, committed)
    else:
        assert drawn and set(drawn) <= set(committed), f"a figure the full preset does not draw: {drawn}"
    for fname in (*paths.OUTPUT_FILES, *drawn):
        assert (out_dir / fname).stat().st_size > 0, fname
    return manifest


def assert_as_expected(name: str, claims: Sequence[Claim]) -> None:
    """Every claim's outcome is its expectation (passes, or fails as expected); the claims table otherwise."""
    assert all(c.as_expected for c in claims), format_claims(name, claims)


def assert_config_refuses(cfg: Any, cases: Iterable[tuple]) -> None:
    """For every ``(field, value)`` or ``(field, value, match)`` of ``cases``, ``dataclasses.replace(cfg,
    field=value)`` raises ``ValueError`` whose message matches ``match`` (default: the field's name)."""
    for field, value, *match in cases:
        with pytest.raises(ValueError, match=match[0] if match else field):
            dataclasses.replace(cfg, **{field: value})
