"""The book's words and colours for schemes, runs and bases: one place, used by every chapter.

Every figure and every sentence that names a scheme, a trained run or a basis takes its label
from here, and every figure draws a scheme in its one colour (:data:`SCHEME_COLORS`), so Euler
is the same blue on the pendulum pages and on the image pages.
"""
from __future__ import annotations

from typing import Optional

__all__ = [
    "SCHEME_LABELS", "SCHEME_COLORS", "RUN_LABELS", "RUN_COLORS", "BASIS_LABELS", "SERIES_COLORS",
    "scheme_label", "scheme_color", "run_label", "run_color", "run_dash", "run_pattern", "basis_label",
]

SCHEME_LABELS = {
    "euler": "Euler",
    "midpoint": "Midpoint",
    "heun": "Heun",
    "ralston": "Ralston",
    "rk3": "RK3",
    "rk4_classic": "RK4 (classic)",
    "rk4_38": "RK4 (3/8 rule)",
}
SCHEME_COLORS = {
    "euler": "#1f77b4",  # blue
    "midpoint": "#2ca02c",  # green
    "heun": "#8c564b",
    "ralston": "#e377c2",
    "rk3": "#bcbd22",
    "rk4_classic": "#d62728",  # red
    "rk4_38": "#9467bd",  # purple
    "exact": "#222222",  # the exact solution
}
RUN_LABELS = {"rk4_refined": "RK4-trained (refined)", "euler_fixed": "Euler-trained (fixed depth)",
              "rk4_fixed": "RK4-trained (fixed depth)", "euler_refined": "Euler-trained (refined)"}
RUN_COLORS = {"rk4_refined": SCHEME_COLORS["rk4_classic"], "euler_fixed": SCHEME_COLORS["euler"],
              "rk4_fixed": "#ff9896", "euler_refined": "#aec7e8"}  # the control runs: their scheme's colour, lighter
BASIS_LABELS = {"piecewise_constant": "piecewise constant", "piecewise_linear": "piecewise linear (hats)",
                "legendre": "Legendre polynomials"}
SERIES_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
"""Colours for series that are not schemes (the entries of θ, several weights)."""


def scheme_label(scheme: str) -> str:
    """``"rk4_classic"`` -> ``"RK4 (classic)"`` (unknown names as they are)."""
    return SCHEME_LABELS.get(scheme, scheme)


def scheme_color(scheme: str) -> str:
    return SCHEME_COLORS.get(scheme, "#7f7f7f")


def run_label(run: str) -> str:
    """``"rk4_refined"`` -> ``"RK4-trained (refined)"``; ``"euler_fixed on rk4_classic"`` -> the run's label,
    run with that scheme."""
    if " on " in run:
        name, scheme = run.split(" on ", 1)
        return f"{run_label(name)}, run with {scheme_label(scheme)}"
    return RUN_LABELS.get(run, run)


def run_color(run: str) -> str:
    """A run's colour; ``"<run> on <scheme>"`` (the run's model on another graph) keeps its run's
    colour and is told apart by :func:`run_dash` (a scheme's colour would say it is another model)."""
    return RUN_COLORS.get(run.split(" on ", 1)[0], "#7f7f7f")


def run_dash(run: str) -> Optional[str]:
    """``"dash"`` for a run's model on another graph (``"<run> on <scheme>"``), else None (solid)."""
    return "dash" if " on " in run else None


def run_pattern(run: str) -> str:
    """The bar pattern that goes with :func:`run_dash`: hatched for another graph, else none."""
    return "/" if " on " in run else ""


def basis_label(basis: str) -> str:
    return BASIS_LABELS.get(basis, basis)
