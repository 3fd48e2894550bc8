"""Exercise of the chapter "How this book works": the observed order of convergence."""
from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

from .framework import Case, Forbidden, check
from .pendulum_exercises import STUDY

__all__ = ["reference_observed_order", "check_observed_order", "OBSERVED_ORDER_HINTS"]

OBSERVED_ORDER_HINTS = (
    "an error that behaves like C·Δt^r is a straight line on log–log axes, and r is its slope. "
    "Use every point, not only two of them.",
    "take the logarithm of both lists first; then fit one straight line through all the points "
    "(u, v) = (log Δt, log error) by least squares. numpy can fit polynomials of any degree.",
    "the least-squares slope of points (u_i, v_i) is Σ(u_i − ū)(v_i − v̄) / Σ(u_i − ū)², where ū and v̄ "
    "are the means. Check that u is log Δt and v is log error, not the other way round.",
)


def reference_observed_order(dts: Sequence[float], errors: Sequence[float]) -> float:
    """Least-squares slope of log(error) against log(Δt): the observed order r."""
    if len(dts) != len(errors) or len(dts) < 2:
        raise ValueError("need at least two (Δt, error) pairs of equal length")
    lx = [math.log(float(d)) for d in dts]
    ly = [math.log(float(e)) for e in errors]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((x - mx) ** 2 for x in lx)
    sxy = sum((x - mx) * (y - my) for x, y in zip(lx, ly))
    return sxy / sxx


def _cases() -> list:
    import numpy as np

    dts = [0.5, 0.25, 0.125, 0.0625]
    cases = [Case((dts, [3.0 * d**p for d in dts]), label=f"an exact power law, error = 3 Δt^{p}") for p in (1, 2, 4)]
    # not an exact power law: the fit over all points, not a two-point ratio, is asked for
    wobbly = [0.2, 0.1, 0.05, 0.025, 0.0125]
    cases.append(Case((wobbly, [d**2 * (1.0 + 0.3 * (-1) ** k) for k, d in enumerate(wobbly)]),
                      label="errors that wobble around C Δt² (5 points)"))
    # unsorted, as numpy arrays: no reliance on the order or on lists
    order = [2, 0, 3, 1]
    cases.append(Case((np.array([dts[i] for i in order]), np.array([0.7 * dts[i] ** 3 * (1 + 0.1 * i) for i in order])),
                      label="numpy arrays, Δt not sorted"))
    return cases


def check_observed_order(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``observed_order(dts, errors)`` against the reference on a few error tables."""
    return check(
        student_fn,
        reference_observed_order,
        _cases(),
        name="observed_order",
        hints=OBSERVED_ORDER_HINTS,
        hint=hint,
        checker="check_observed_order",
        forbidden=[Forbidden(modules=STUDY, why="Fit the line yourself (numpy's polynomial fit is fine).")],
        rtol=1e-6,
    )
