"""Exercise of the chapter "How this book works": the observed order of convergence."""
from __future__ import annotations

import math
from typing import Callable, Sequence

from .core import Case, check

__all__ = ["reference_observed_order", "check_observed_order"]


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
    dts = [0.5, 0.25, 0.125, 0.0625]
    cases = [Case((dts, [3.0 * d**p for d in dts])) for p in (1, 2, 4)]
    # not an exact power law: the fit, not two-point ratios, is asked for
    wobbly = [0.2, 0.1, 0.05, 0.025, 0.0125]
    cases.append(Case((wobbly, [d**2 * (1.0 + 0.3 * (-1) ** k) for k, d in enumerate(wobbly)])))
    return cases


def check_observed_order(student_fn: Callable) -> bool:
    """Check ``observed_order(dts, errors)`` against the reference on a few error tables."""
    return check(
        student_fn,
        reference_observed_order,
        _cases(),
        name="observed_order",
        hint="fit a straight line to the points (log Δt, log error) by least squares and return its slope, "
        "e.g. numpy.polyfit(numpy.log(dts), numpy.log(errors), 1)[0]",
        rtol=1e-6,
    )
