"""What the bad-call tables share (``tests/theory/test_bad_calls.py``, ``tests/theory/test_bad_calls_mpq.py``,
``tests/kernels/test_quantize_model_bad_calls.py``): a row is a call (Python source evaluated in a namespace of
inputs), the error class it raises and a fragment of the message. ``python -m tests.theory.test_bad_calls_mpq``
(and the others) prints its table with the full messages."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import pytest


def first_word(fragment: str) -> str:
    """The parameter a message fragment names: its first word (``calibration['fc']`` -> ``calibration``,
    ``book.grid`` -> ``book``, ``grid:`` -> ``grid``, ``block=0`` -> ``block``)."""
    return re.split(r"[ .:\[(=]", fragment, maxsplit=1)[0]


def assert_raises_naming(call: str, ns: dict, cls: type[Exception], fragment: str) -> None:
    """``eval(call, ns)`` raises exactly ``cls`` (not a subclass) with ``fragment`` in its message, and the message
    starts with the parameter's name (:func:`first_word`)."""
    with pytest.raises(cls) as info:
        eval(call, ns)
    msg = str(info.value)
    assert type(info.value) is cls, (type(info.value), msg)
    assert fragment in msg, msg
    assert msg.startswith(first_word(fragment)), msg


def print_table(calls: Iterable[str], ns: Callable[[], dict]) -> None:
    """A markdown table of the calls and what each raises (``ValueError: ...``, or ``NO ERROR``), for review."""
    print("| call | error |\n| --- | --- |")
    for call in calls:
        try:
            eval(call, ns())
            msg = "NO ERROR"
        except (ValueError, TypeError) as e:
            msg = f"{type(e).__name__}: {e}".replace("\n", " ")
        print(f"| `{call}` | {msg.replace('|', '/')} |")


def table_tests(table: list[tuple[str, type[Exception], str]], ns: Callable[[], dict], *, at_least: int):
    """The two tests of a ``(call, error class, fragment)`` table: each row raises naming its parameter
    (:func:`assert_raises_naming`, in a fresh ``ns()``), and the table holds ``at_least`` distinct calls. A test
    module binds them to its own ``test_*`` names so that pytest collects them there."""

    @pytest.mark.parametrize(("call", "cls", "fragment"), table, ids=[c for c, _, _ in table])
    def raises_naming_the_parameter(call, cls, fragment):
        assert_raises_naming(call, ns(), cls, fragment)

    def large_and_unique():
        calls = [c for c, _, _ in table]
        assert len(calls) == len(set(calls)) and len(calls) >= at_least

    return raises_naming_the_parameter, large_and_unique
