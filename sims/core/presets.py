"""A result's presets: the named Configs (``quick`` for CI, ``full`` for the paper) and typed overrides.

A result keeps its presets as data, in ``sims/NAME/presets.toml`` beside its ``config.py``: one table per preset
with the fields that differ from the Config's defaults, each commented with why it has its value (the seeds a
claim's power needs, the size a claim is decided at). ``config.py`` reads them with :func:`load_presets`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
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


def tuples(value: Any) -> Any:
    """``value`` with every list, at any depth, turned into a tuple (TOML arrays -> the frozen Configs' tuples).

    >>> tuples([1, [2.0, 3], "a"])
    (1, (2.0, 3), 'a')
    """
    return tuple(tuples(v) for v in value) if isinstance(value, list) else value


def load_presets(config: type, path: str | Path | None = None) -> dict[str, Any]:
    """A result's presets from the TOML file ``path`` (default: ``presets.toml`` beside the module that defines
    ``config``): one table per preset (``[quick]``, ``[full]``, ...), each holding the fields that differ from
    ``config``'s defaults (the full preset is usually an empty table).

    Returns ``{preset name: config(**table)}`` in the file's order, arrays as tuples (:func:`tuples`); each Config
    validates its fields in its ``__post_init__``. ``ValueError`` names the file and the problem when ``path`` is
    not a file, not valid TOML, lacks ``[quick]`` or ``[full]``, or sets a field ``config`` does not have.
    """
    import inspect
    import tomllib

    path = Path(path) if path is not None else Path(inspect.getfile(config)).with_name("presets.toml")
    if not path.is_file():
        raise ValueError(f"path: {path} is not a file (a result's presets are sims/NAME/presets.toml)")
    try:
        tables = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"path: {path} is not valid TOML ({e})") from None
    missing = [p for p in PRESET_NAMES if not isinstance(tables.get(p), dict)]
    if missing:
        raise ValueError(f"path: {path} has no [{missing[0]}] table (a result needs {' and '.join(PRESET_NAMES)})")
    fields = {f.name for f in dataclasses.fields(config)}
    for preset, table in tables.items():
        unknown = sorted(set(table) - fields) if isinstance(table, dict) else [preset]
        if unknown:
            raise ValueError(f"path: {path} [{preset}] sets {unknown}, not fields of {config.__name__}")
    return {preset: config(**{k: tuples(v) for k, v in table.items()}) for preset, table in tables.items()}
