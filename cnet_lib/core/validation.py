"""Argument checks shared by every public entry point: one message style, raised before any work.

Each check names the argument, says what was given and what is allowed, and shows a valid
example, e.g. ``lr must be a finite number > 0, got nan (e.g. lr=0.1)``.  Booleans are not
accepted as numbers, NaN and infinities are refused wherever a finite value is needed.
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, Iterable, Optional

__all__ = ["check_int", "check_float", "check_choice", "check_ints"]


def _example(name: str, example: Any) -> str:
    return f" (e.g. {name}={example!r})" if example is not None else ""


def check_int(name: str, value: Any, *, low: Optional[int] = None, high: Optional[int] = None,
              example: Any = None) -> int:
    """``value`` as an int in ``[low, high]``; a TypeError or ValueError that names ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}{_example(name, example)}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = " and ".join(b for b in (f">= {low}" if low is not None else "", f"<= {high}" if high is not None else "") if b)
        raise ValueError(f"{name} must be an integer {bounds}, got {value}{_example(name, example)}")
    return value


def check_float(name: str, value: Any, *, low: Optional[float] = None, high: Optional[float] = None,
                low_open: bool = False, high_open: bool = False, example: Any = None) -> float:
    """``value`` as a finite float in the given range (``low_open``: ``> low`` instead of ``>=``)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {value!r}{_example(name, example)}")
    value = float(value)
    bad = not math.isfinite(value)
    if not bad and low is not None:
        bad = value <= low if low_open else value < low
    if not bad and high is not None:
        bad = value >= high if high_open else value > high
    if bad:
        parts = []
        if low is not None:
            parts.append(f"{'>' if low_open else '>='} {low:g}")
        if high is not None:
            parts.append(f"{'<' if high_open else '<='} {high:g}")
        where = f" {' and '.join(parts)}" if parts else ""
        raise ValueError(f"{name} must be a finite number{where}, got {value!r}{_example(name, example)}")
    return value


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """``value`` if it is one of ``choices``; a ValueError listing them otherwise."""
    choices = list(choices)
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}; got {value!r}")
    return value


def check_ints(name: str, values: Iterable[Any], *, low: Optional[int] = None, example: Any = None) -> tuple[int, ...]:
    """A sequence of integers, each ``>= low``."""
    try:
        items = list(values)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of integers, got {values!r}{_example(name, example)}") from None
    try:
        return tuple(check_int(f"{name}[{i}]", v, low=low) for i, v in enumerate(items))
    except (TypeError, ValueError) as err:
        raise type(err)(f"{err}{_example(name, example)}") from None
