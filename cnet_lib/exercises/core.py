"""Exercise checks: run a student's function against the reference and say pass or fail.

Usage in a chapter (after the stub and its solution cells)::

    from cnet_lib.exercises import check_observed_order
    check_observed_order(observed_order)

A check prints ``✅ pass: ...`` or ``❌ fail: ...`` with a hint, and returns a bool; it never
raises, so a class can run the whole notebook with unfinished exercises.
"""
from __future__ import annotations

import math
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

__all__ = ["Case", "check", "values_close", "describe"]


@dataclass(frozen=True)
class Case:
    """One call of the function under test: ``fn(*args, **kwargs)``."""

    args: Sequence[Any] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        parts = [describe(a) for a in self.args] + [f"{k}={describe(v)}" for k, v in self.kwargs.items()]
        return "(" + ", ".join(parts) + ")"


def _as_case(c) -> Case:
    if isinstance(c, Case):
        return c
    if isinstance(c, Mapping):
        return Case((), dict(c))
    if isinstance(c, tuple):
        return Case(c, {})
    return Case((c,), {})


def describe(v: Any, limit: int = 80) -> str:
    """A short text for a value (tensors and arrays by shape and a few entries)."""
    if hasattr(v, "detach"):
        v = v.detach().cpu()
        text = f"tensor{tuple(v.shape)} {v.flatten()[:4].tolist()}"
    elif hasattr(v, "shape") and hasattr(v, "tolist"):
        text = f"array{tuple(v.shape)} {v.reshape(-1)[:4].tolist()}"
    else:
        text = repr(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_array(v) -> bool:
    return hasattr(v, "shape") and hasattr(v, "dtype") and hasattr(v, "tolist")


def _to_numpy(v):
    if hasattr(v, "detach"):
        return v.detach().cpu().double().numpy()
    return v


def values_close(got: Any, expected: Any, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    """Whether ``got`` matches ``expected``: numbers, tensors, arrays, sequences, mappings."""
    if _is_array(expected) or _is_array(got):
        import numpy as np

        try:
            g = np.asarray(_to_numpy(got), dtype=float)
            e = np.asarray(_to_numpy(expected), dtype=float)
        except (TypeError, ValueError, RuntimeError):
            return False
        return g.shape == e.shape and bool(np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True))
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        return got == expected
    if isinstance(expected, (int, float)):
        if isinstance(got, bool) or not isinstance(got, (int, float)) and not hasattr(got, "__float__"):
            return False
        g = float(got)
        return math.isclose(g, float(expected), rel_tol=rtol, abs_tol=atol) or (math.isnan(g) and math.isnan(expected))
    if isinstance(expected, Mapping):
        return (
            isinstance(got, Mapping)
            and set(got) == set(expected)
            and all(values_close(got[k], expected[k], rtol, atol) for k in expected)
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(got, (list, tuple))
            and len(got) == len(expected)
            and all(values_close(g, e, rtol, atol) for g, e in zip(got, expected))
        )
    return got == expected


def check(
    student_fn: Callable,
    reference_fn: Callable,
    cases: Iterable[Any],
    name: str,
    hint: str = "",
    *,
    rtol: float = 1e-6,
    atol: float = 1e-9,
    compare: Optional[Callable[[Any, Any], bool]] = None,
) -> bool:
    """Run ``student_fn`` and ``reference_fn`` on every case; print pass/fail; return the verdict.

    A case is a :class:`Case`, a tuple of positional arguments, a dict of keyword arguments,
    or a single argument.  Outputs are compared with :func:`values_close` (or ``compare``).
    """
    cases = [_as_case(c) for c in cases]
    if not cases:
        raise ValueError("check needs at least one case")
    compare = compare or (lambda g, e: values_close(g, e, rtol, atol))
    hint_txt = f"\n   hint: {hint}" if hint else ""
    if not callable(student_fn):
        print(f"❌ fail: {name}: expected a function, got {type(student_fn).__name__}{hint_txt}")
        return False
    for i, case in enumerate(cases, 1):
        expected = reference_fn(*case.args, **case.kwargs)
        try:
            got = student_fn(*case.args, **case.kwargs)
        except NotImplementedError:
            print(
                f"❌ not done yet: {name}: the function still raises NotImplementedError. "
                f"Replace the `raise NotImplementedError(...)` line with your code and run this cell again.{hint_txt}"
            )
            return False
        except Exception as err:  # a student's bug: report it, never crash the notebook
            where = traceback.extract_tb(err.__traceback__)[-1]
            print(
                f"❌ fail: {name}: case {i}/{len(cases)} {case} raised {type(err).__name__}: {err} "
                f"(line {where.lineno}: {where.line}){hint_txt}"
            )
            return False
        if not compare(got, expected):
            print(
                f"❌ fail: {name}: case {i}/{len(cases)} {case}\n"
                f"   expected {describe(expected)}\n   got      {describe(got)}{hint_txt}"
            )
            return False
    print(f"✅ pass: {name} ({len(cases)} case{'s' if len(cases) != 1 else ''})")
    return True
