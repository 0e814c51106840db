"""The shipped corpus: Python standard-library source text, committed compressed as ``models/data/``.

``build_corpus()`` concatenates the source of a fixed list of pure-Python stdlib modules (read from the running
interpreter's files, so it depends on the Python version); it was run once and its output committed as
``models/data/stdlib_corpus.txt.xz`` so every machine trains on the identical bytes. ``load_corpus()`` only
reads that file: no network, no dependence on the local Python.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import lzma
from pathlib import Path

import numpy as np

from jaxwb.models import tokenizer

DATA_DIR = Path(__file__).resolve().parent / "data"
CORPUS_FILE = DATA_DIR / "stdlib_corpus.txt.xz"

# Pure-Python stdlib modules present in every CPython 3.10+; fixed order.
MODULES = (
    "textwrap",
    "string",
    "bisect",
    "heapq",
    "colorsys",
    "fnmatch",
    "glob",
    "shlex",
    "difflib",
    "fractions",
    "statistics",
    "functools",
    "contextlib",
    "dataclasses",
    "enum",
    "abc",
    "copy",
    "pprint",
    "reprlib",
    "queue",
    "sched",
    "calendar",
    "base64",
    "csv",
    "configparser",
    "argparse",
    "json.decoder",
    "json.encoder",
    "tokenize",
    "ast",
    "operator",
    "random",
    "weakref",
    "numbers",
    "ipaddress",
    "gettext",
    "locale",
    "cmd",
    "codeop",
    "trace",
    "timeit",
    "tempfile",
    "shutil",
    "zipfile",
    "tarfile",
    "gzip",
    "mimetypes",
    "html.parser",
    "urllib.parse",
    "email.utils",
    "logging",
    "threading",
    "selectors",
    "subprocess",
    "typing",
    "inspect",
    "pathlib",
    "datetime",
    "decimal",
)
MAX_BYTES = 3_000_000  # raw text cap (compresses to ~0.6 MB)


def build_corpus(modules=MODULES, max_bytes: int = MAX_BYTES) -> str:
    """Concatenate the source of ``modules`` (each preceded by a ``# ---- module <name>`` line), ASCII only."""
    parts, total = [], 0
    for name in modules:
        src = inspect.getsource(importlib.import_module(name))
        src = src.encode("ascii", errors="ignore").decode("ascii")
        piece = f"# ---- module {name}\n{src}\n"
        if total + len(piece) > max_bytes:
            break
        parts.append(piece)
        total += len(piece)
    return "".join(parts)


def write_corpus(path: Path = CORPUS_FILE, **kw) -> str:
    """Build the corpus and write it xz-compressed; returns its sha256."""
    text = build_corpus(**kw)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(lzma.compress(text.encode("ascii"), preset=9))
    return hashlib.sha256(text.encode()).hexdigest()


def load_text(path: Path = CORPUS_FILE) -> str:
    """The committed corpus as one string."""
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `python -m jaxwb.models.corpus` once to build it")
    return lzma.decompress(path.read_bytes()).decode("ascii")


def load_corpus(val_fraction: float = 0.1, max_bytes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Tokenised corpus split into (train, val) int32 arrays; val is the last ``val_fraction`` of the bytes.

    ``max_bytes`` truncates the text first (smaller presets).
    """
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
    text = load_text()
    if max_bytes is not None:
        if max_bytes < 1000:
            raise ValueError(f"max_bytes must be >= 1000, got {max_bytes}")
        text = text[:max_bytes]
    tokens = tokenizer.encode(text)
    cut = int(len(tokens) * (1.0 - val_fraction))
    return tokens[:cut], tokens[cut:]


def unigram_entropy(tokens: np.ndarray, eval_tokens: np.ndarray | None = None) -> float:
    """Cross-entropy (nats/byte) of the add-one-smoothed unigram model fitted on ``tokens``, on ``eval_tokens``."""
    counts = np.bincount(tokens, minlength=tokenizer.VOCAB_SIZE).astype(np.float64) + 1.0
    logp = np.log(counts / counts.sum())
    ev = tokens if eval_tokens is None else eval_tokens
    return float(-logp[ev].mean())


if __name__ == "__main__":
    digest = write_corpus()
    print(f"wrote {CORPUS_FILE} ({CORPUS_FILE.stat().st_size} bytes compressed), sha256 {digest}")
