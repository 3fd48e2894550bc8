"""Exercise of the chapter "How this book works": the observed order of convergence (:data:`OBSERVED_ORDER`).

Its expected outputs are data (``public_answers.json``); the reference and the hidden cases are the teacher's
(:mod:`cnet_lib.teacher`, absent from a student's install).
"""
from __future__ import annotations

from typing import Callable, Optional

from .framework import Forbidden
from .pendulum_exercises import STUDY
from .public_checks import Exercise, NearMiss, Rules, check_exercise
from .recipes import recipe

__all__ = ["OBSERVED_ORDER", "OBSERVED_ORDER_HINTS", "OBSERVED_ORDER_NEAR_MISSES", "check_observed_order",
           "observed_order_cases"]

OBSERVED_ORDER_HINTS = (
    "an error that behaves like C·Δt^r is a straight line on log–log axes, and r is its slope. "
    "Use every point, not only two of them.",
    "take the logarithm of both lists first; then fit one straight line through all the points "
    "(log Δt, log error) by least squares: its slope is r. numpy can fit polynomials of any degree.",
)


def observed_order_cases(dts: list, powers: tuple, wobbly: list, shuffled: list) -> list:
    """Recipes: exact power laws 3 Δt^p on ``dts``; errors that wobble ±30% around Δt² on ``wobbly`` (a
    two-point slope, or the mean of the slopes between neighbours, is wrong there); numpy arrays in the order
    ``shuffled`` whose errors lie a little off a power law (ditto)."""
    cases = [recipe(f"an exact power law, error = 3 Δt^{p}", dts, [3.0 * d ** p for d in dts]) for p in powers]
    cases.append(recipe(f"errors that wobble around C Δt² ({len(wobbly)} points)", wobbly,
                        [d ** 2 * (1.0 + 0.3 * (-1) ** k) for k, d in enumerate(wobbly)],
                        catches=("two_point", "mean_of_slopes")))
    cases.append(recipe("numpy arrays in no order, errors a little off a power law",
                        {"$": "array", "data": [dts[i] for i in shuffled]},
                        {"$": "array", "data": [0.7 * dts[i] ** 3 * (1 + 0.1 * i) for i in shuffled]},
                        catches=("two_point", "mean_of_slopes")))
    return cases


OBSERVED_ORDER_NEAR_MISSES = (
    NearMiss("two_point", "the slope through two points of the table (the two finest runs), not a fit through all",
             "a slope through two points ignores the rest of the table: where the errors wobble, every point "
             "should pull on the line. Fit one straight line through all of them."),
    NearMiss("mean_of_slopes", "the mean of the slopes between neighbouring points, not the least-squares slope",
             "the mean of the slopes between neighbours is not the slope of the best line through all the points: "
             "where the errors wobble, or the table is not sorted, they differ. Fit the line itself."),
)


OBSERVED_ORDER = Exercise(
    name="observed_order",
    hints=OBSERVED_ORDER_HINTS,
    public=lambda: observed_order_cases([0.5, 0.25, 0.125, 0.0625], (1, 2, 4), [0.3, 0.2, 0.1, 0.05, 0.025],
                                        [2, 0, 3, 1]),
    forbidden=lambda: [Forbidden(modules=STUDY, why="Fit the line yourself (numpy's polynomial fit is fine).")],
    rules=Rules(banned_names=("fit_slopes", "local_slopes", "convergence")),
    near_misses=OBSERVED_ORDER_NEAR_MISSES,
)


def check_observed_order(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``observed_order(dts, errors)`` on a few error tables (exact power laws, wobbly, unsorted arrays)."""
    return check_exercise(OBSERVED_ORDER, student_fn, hint)
