"""Config fields from the command line: typed ``--set FIELD=VALUE`` parsing and ``workbench run NAME --help``.

Every value is parsed from the declared type of the Config field (``int``, ``float``, ``bool``, ``str``,
``tuple[float, float]``, ``tuple[int, ...]``, nested tuples, ``X | None``, ``Literal[...]``); a value that does not
fit raises :class:`~sims.core.errors.WorkbenchError` naming the field and the expected type. Floats must be finite
unless the preset's own value of that field is not (NaN is never accepted). The Config's ``__post_init__`` then
validates ranges; its ``ValueError`` is reported as a user error too (it is about the user's input).

One-line field docs come from the Config's source: the comment at the end of the field's line, else the section
comment above it (``# phase diagram``), else ``field(metadata={"doc": ...})``.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import re
import types
import typing
from collections.abc import Sequence
from typing import Any

from jaxwb.sims.core.errors import WorkbenchError
from jaxwb.sims.core.presets import get_config

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def type_name(tp) -> str:
    """``tuple[float, float]``, ``int | None``, ... as the user reads them."""
    if tp is type(None):
        return "None"
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__name__
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is tuple:
        inner = ", ".join("..." if a is Ellipsis else type_name(a) for a in args)
        return f"tuple[{inner}]"
    return str(tp).replace("typing.", "")


def _nonfinite_allowed(default) -> bool:
    if isinstance(default, float):
        return not math.isfinite(default)
    if isinstance(default, (tuple, list)):
        return any(_nonfinite_allowed(d) for d in default)
    return False


class _Mismatch(Exception):
    pass


def _convert(value, tp, allow_nonfinite: bool):
    """Convert a literal (already parsed, or a raw string at the top level) to ``tp``; raise _Mismatch."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if type(None) in args and (value is None or (isinstance(value, str) and value.lower() == "none")):
            return None
        for a in args:
            if a is type(None):
                continue
            try:
                return _convert(value, a, allow_nonfinite)
            except _Mismatch:
                continue
        raise _Mismatch
    if origin is typing.Literal:
        if value in args:
            return value
        raise _Mismatch
    if origin is tuple:
        if isinstance(value, str):
            value = _literal(value)
        if not isinstance(value, (tuple, list)):
            if len(args) == 2 and args[1] is Ellipsis:
                value = (value,)  # one value for a variable-length tuple
            else:
                raise _Mismatch
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(v, args[0], allow_nonfinite) for v in value)
        if args and len(value) != len(args):
            raise _Mismatch
        return tuple(_convert(v, a, allow_nonfinite) for v, a in zip(value, args or [Any] * len(value), strict=True))
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise _Mismatch
    if tp is int:
        if isinstance(value, bool):
            raise _Mismatch
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
            try:
                f = float(value)
            except ValueError:
                raise _Mismatch from None
            if math.isfinite(f) and f.is_integer():
                return int(f)
        raise _Mismatch
    if tp is float:
        if isinstance(value, bool):
            raise _Mismatch
        if isinstance(value, (int, float)):
            f = float(value)
        elif isinstance(value, str):
            try:
                f = float(value.strip())
            except ValueError:
                raise _Mismatch from None
        else:
            raise _Mismatch
        if math.isnan(f) or (math.isinf(f) and not allow_nonfinite):
            raise _NonFinite(value)
        return f
    if tp is str:
        if isinstance(value, str):
            return value
        raise _Mismatch
    if tp is Any:
        return value
    raise _Mismatch


class _NonFinite(_Mismatch):
    def __init__(self, value):
        self.value = value


def _literal(text: str):
    """A Python literal from ``text``; ``0.1,0.2`` (no brackets) is a tuple; a bare word stays a string."""
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    if "," in text and not text.startswith(("(", "[")):
        return tuple(p.strip() for p in text.split(",") if p.strip())
    return text


def parse_value(field: str, text: str, tp, default=None):
    """Parse the command-line ``text`` for the Config field ``field`` of declared type ``tp``."""
    allow = _nonfinite_allowed(default)
    try:
        if tp is str or (
            typing.get_origin(tp) is typing.Literal and all(isinstance(a, str) for a in typing.get_args(tp))
        ):
            value = text.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            return _convert(value, tp, allow)
        if typing.get_origin(tp) is tuple:
            return _convert(text, tp, allow)
        if typing.get_origin(tp) in (typing.Union, types.UnionType, typing.Literal):
            return _convert(_literal(text) if text.strip().lower() != "none" else None, tp, allow)
        return _convert(text, tp, allow)
    except _NonFinite as err:
        raise WorkbenchError(
            f"--set {field}={text}: {field} must be a finite {type_name(tp)} (got {err.value!r})"
        ) from None
    except _Mismatch:
        n = ""
        args = typing.get_args(tp)
        if typing.get_origin(tp) is tuple and args and args[-1] is not Ellipsis:
            n = f" ({len(args)} values, e.g. {field}=" + ",".join(["1"] * len(args)) + ")"
        raise WorkbenchError(f"--set {field}={text}: {field} expects {type_name(tp)}{n}") from None


def field_types(cfg_or_cls) -> dict[str, Any]:
    cls = cfg_or_cls if isinstance(cfg_or_cls, type) else type(cfg_or_cls)
    try:
        return typing.get_type_hints(cls)
    except Exception:
        return {f.name: type(getattr(cfg_or_cls, f.name, None)) for f in dataclasses.fields(cls)}


def split_overrides(items: Sequence[str]) -> dict[str, str]:
    """``["lam=50", "lr_range=0.1,0.2"]`` -> ``{"lam": "50", "lr_range": "0.1,0.2"}`` (raw text)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise WorkbenchError(f"--set expects FIELD=VALUE, got {item!r}")
        if not text.strip():
            raise WorkbenchError(f"--set {name.strip()}=: no value given")
        out[name.strip()] = text
    return out


def typed_overrides(cfg, items: Sequence[str], result: str = "") -> dict[str, Any]:
    """Parse ``--set`` items against the fields of the Config instance ``cfg``."""
    raw = split_overrides(items)
    names = [f.name for f in dataclasses.fields(cfg)]
    unknown = [k for k in raw if k not in names]
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise WorkbenchError(
            f"unknown config field {unknown[0]!r} for {result or type(cfg).__name__}{hint}; "
            f"see `workbench run {result or 'NAME'} --help`"
        )
    hints = field_types(cfg)
    return {k: parse_value(k, v, hints.get(k, Any), getattr(cfg, k)) for k, v in raw.items()}


def apply_overrides(module, preset: str, items: Sequence[str]):
    """The preset's Config with the typed ``--set`` items applied and validated (``__post_init__``)."""

    cfg = get_config(module, preset)
    values = typed_overrides(cfg, items, module.NAME)
    if not values:
        return cfg
    try:
        return dataclasses.replace(cfg, **values)
    except (ValueError, TypeError) as err:  # the Config's own validation of the user's values
        msg = " ".join(str(err).split())
        raise WorkbenchError(f"--set: {msg}") from None


_FIELD_LINE = re.compile(r"^\s*(\w+)\s*:\s*[^=#]+(?:=.*?)?(?:#\s*(?P<doc>.*))?$")


def field_docs(cls) -> dict[str, str]:
    """One-line docs per field from the Config's source (inline comment, else the section comment above)."""
    docs: dict[str, str] = {}
    for f in dataclasses.fields(cls):
        if "doc" in f.metadata:
            docs[f.name] = str(f.metadata["doc"])
    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):
        return docs
    names = {f.name for f in dataclasses.fields(cls)}
    section = ""
    for line in lines[1:]:
        stripped = line.strip()
        if stripped.startswith("#"):
            section = stripped.lstrip("#").strip()
            continue
        if not stripped:
            section = ""
            continue
        m = _FIELD_LINE.match(line)
        if m and m.group(1) in names and m.group(1) not in docs:
            doc = (m.group("doc") or "").strip()
            docs[m.group(1)] = doc or (f"({section})" if section else "")
    return docs


def describe_config(module, preset: str = "full") -> str:
    """The table ``workbench run NAME --help`` prints: field, type, full and quick defaults, doc."""
    full = module.PRESETS[preset]
    quick = module.PRESETS.get("quick", full)
    hints = field_types(full)
    docs = field_docs(type(full))
    rows = []
    for f in dataclasses.fields(full):
        fv, qv = getattr(full, f.name), getattr(quick, f.name)
        default = repr(fv) if fv == qv else f"{fv!r} (quick: {qv!r})"
        rows.append((f.name, type_name(hints.get(f.name, Any)), default, docs.get(f.name, "")))
    wn = max(len(r[0]) for r in rows)
    wt = max(len(r[1]) for r in rows)
    out = [f"Config fields of {module.NAME} (set with --set FIELD=VALUE; defaults of the full preset):"]
    for name, tname, default, doc in rows:
        line = f"  {name:<{wn}}  {tname:<{wt}}  = {default}"
        if doc:
            line += f"    {doc}"
        out.append(line)
    return "\n".join(out)
