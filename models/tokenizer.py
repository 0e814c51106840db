"""Byte-level tokenizer: a token is one UTF-8 byte (vocabulary 256), so every string round-trips exactly."""

from __future__ import annotations

import numpy as np

VOCAB_SIZE = 256


def encode(text: str) -> np.ndarray:
    """``text`` -> int32 array of its UTF-8 bytes, shape (len(text.encode()),)."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int32)


def decode(tokens) -> str:
    """int array of byte values in [0, 256) -> str (invalid UTF-8 sequences are replaced with U+FFFD)."""
    arr = np.asarray(tokens)
    if arr.size and (arr.min() < 0 or arr.max() >= VOCAB_SIZE):
        raise ValueError(f"tokens must lie in [0, {VOCAB_SIZE}), got range [{arr.min()}, {arr.max()}]")
    return arr.astype(np.uint8).tobytes().decode("utf-8", errors="replace")
