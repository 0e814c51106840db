"""A result's presets: the named Configs (``quick`` for CI, ``full`` for the paper) and typed overrides."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from jaxwb.sims.core.errors import WorkbenchError

PRESET_NAMES = ("quick", "full")


def quick_from_env() -> bool:
    """True when ``WORKBENCH_QUICK`` is set to a non-empty, non-"0" value (CI, notebook tests)."""
    return os.environ.get("WORKBENCH_QUICK", "") not in ("", "0")


def get_config(module: ModuleType, preset: str, **overrides):
    """The module's preset ``Config`` with ``overrides`` (already typed values) applied (``dataclasses.replace``,
    so the Config's own ``__post_init__`` validation runs and raises ``ValueError`` naming a bad field). The CLI
    parses ``--set`` text through :func:`jaxwb.sims.core.config.apply_overrides` instead."""
    if preset not in module.PRESETS:
        raise WorkbenchError(f"unknown preset {preset!r} for {module.NAME}; choose from {sorted(module.PRESETS)}")
    cfg = module.PRESETS[preset]
    if not overrides:
        return cfg
    fields = {f.name for f in dataclasses.fields(cfg)}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise WorkbenchError(f"unknown config field(s) {unknown} for {module.NAME}; fields: {sorted(fields)}")
    return dataclasses.replace(cfg, **overrides)


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """Parse ``["lam=50", "speed_betas=(0.5, 0.9)"]`` into ``{"lam": 50, "speed_betas": (0.5, 0.9)}`` (untyped).

    Values are Python literals (numbers, tuples, strings, True/False); anything else is kept as a string. For
    values typed from the Config's field annotations use :func:`jaxwb.sims.core.config.typed_overrides`.
    """
    import ast

    out = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise WorkbenchError(f"--set expects FIELD=VALUE, got {item!r}")
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            value = text.strip()
        out[name.strip()] = tuple(value) if isinstance(value, list) else value
    return out
