"""The worked example of the chapter "How this book works": a scalar ODE ``dy/dt = rate(t, y)``
solved with several schemes and numbers of steps, its text tables, its figures and its live app.

The chapter defines the problem itself (``rate(t, y)`` and the exact solution ``exact(t)``, plain
Python functions of floats); this module does the rest, as a study's ``study`` and ``show`` modules do for theirs,
down to the numbers its prose quotes (:func:`facts`).  A run is a dict (one row): ``scheme, n_steps, dt, t, y, error``
with ``error = |y_N − exact(t_end)|``.  Figures draw precomputed runs (their controls work in the
static book), schemes in their colours from :mod:`cnet_lib.runtime.rich_text`.
"""
from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

import plotly.graph_objects as go
import torch

from ..core.integrate import integrate, step_times
from ..core.schemes import get_scheme
from ..draw.plotting import dropdown_slider_figure, line, loglog_style, reference_slope, slider_figure
from ..draw.widgets import Choice, IntRange, LiveApp, live_app
from ..runtime.rich_text import SCHEME_COLORS, find_row, format_table, scheme_color, scheme_label, sci

__all__ = ["solve", "convergence_runs", "dts_and_errors", "two_point_orders", "facts", "error_table", "order_table",
           "fig_solutions", "fig_error_convergence", "fig_schemes_together", "live_solver_app"]

Rate = Callable[[float, torch.Tensor], torch.Tensor]


# ----------------------------------------------------------------------------- runs
def solve(rate: Rate, exact: Callable[[float], float], scheme: str, n_steps: int, t_end: float) -> dict:
    """One run of ``scheme`` with ``N_t = n_steps`` steps over [0, t_end] from y(0) = exact(0), in
    float64 on the CPU (a scalar problem gains nothing from a GPU).

    Returns ``scheme, n_steps, dt, t`` (the N_t + 1 step times), ``y`` (the solution at them) and
    ``error`` = |y_N − exact(t_end)|.
    """
    y0 = torch.tensor([exact(0.0)], dtype=torch.float64)
    path = integrate(rate, y0, scheme, n_steps, t_span=(0.0, t_end), return_path=True)[:, 0]
    return dict(scheme=scheme, n_steps=n_steps, dt=t_end / n_steps, t=step_times(n_steps, (0.0, t_end)),
                y=path.tolist(), error=abs(path[-1].item() - exact(t_end)))


def convergence_runs(rate: Rate, exact: Callable[[float], float], schemes: Sequence[str], n_steps: Sequence[int],
                     t_end: float) -> list[dict]:
    """:func:`solve` for every scheme and every number of steps: one run (row) each, scheme by scheme."""
    return [solve(rate, exact, s, n, t_end) for s in schemes for n in n_steps]


def dts_and_errors(runs: Sequence[dict], scheme: str) -> tuple[list, list]:
    """The step sizes Δt and the errors of one scheme's runs, finest step last."""
    rs = sorted((r for r in runs if r["scheme"] == scheme), key=lambda r: r["n_steps"])
    return [r["dt"] for r in rs], [r["error"] for r in rs]


def two_point_orders(runs: Sequence[dict]) -> list[dict]:
    """Each scheme's order r and the slope of log(error) against log(Δt) through its two finest runs.

    Rows: ``scheme, order, slope``.
    """
    out = []
    for s in dict.fromkeys(r["scheme"] for r in runs):
        dts, errors = dts_and_errors(runs, s)
        slope = math.log(errors[-2] / errors[-1]) / math.log(dts[-2] / dts[-1])
        out.append(dict(scheme=s, order=get_scheme(s).order, slope=slope))
    return out


def facts(runs: Sequence[dict]) -> dict:
    """The numbers the chapter's prose states, ``{name: text}`` as it prints them, from the runs it has just computed:
    the two finest numbers of steps (``n_second``, ``n_finest``), each scheme's slope through its two finest runs
    (``slope_<scheme>``, :func:`two_point_orders`) and its error at the finest (``error_<scheme>``).  The chapter
    glues them (``glue_all(demos.facts(runs))``) and its prose quotes them."""
    steps = sorted(dict.fromkeys(r["n_steps"] for r in runs))
    out = {"n_second": str(steps[-2]), "n_finest": str(steps[-1])}
    for row in two_point_orders(runs):
        out[f"slope_{row['scheme']}"] = f"{row['slope']:.2f}"
        out[f"error_{row['scheme']}"] = sci(dts_and_errors(runs, row['scheme'])[1][-1])
    return out


# ----------------------------------------------------------------------------- tables
def error_table(runs: Sequence[dict]) -> str:
    """The errors of :func:`convergence_runs` as text: a line per N_t (with its Δt), a column per scheme."""
    schemes = list(dict.fromkeys(r["scheme"] for r in runs))
    steps = sorted(dict.fromkeys(r["n_steps"] for r in runs))
    rows = [dict(n_steps=n, dt=find_row(runs, n_steps=n)["dt"],
                 errors={s: find_row(runs, scheme=s, n_steps=n)["error"] for s in schemes}) for n in steps]
    return format_table(rows, [("N_t", "n_steps", "{}"), ("Δt", "dt", "{:g}")]
                        + [(scheme_label(s), (lambda r, s=s: r["errors"][s]), "{:.3e}") for s in schemes])


def order_table(orders: Sequence[dict]) -> str:
    """The rows of :func:`two_point_orders` as text."""
    return format_table(orders, [("scheme", lambda r: scheme_label(r["scheme"]), "{}"), ("order r", "order", "{}"),
                                 ("slope of the two finest runs", "slope", "{:.2f}")])


# ----------------------------------------------------------------------------- figures
def _exact_line(exact: Callable[[float], float], t_end: float, n: int = 400) -> go.Scatter:
    t = [t_end * k / n for k in range(n + 1)]
    return line(t, [exact(tk) for tk in t], name="exact", color=SCHEME_COLORS["exact"], dash="dot")


def _run_line(run: dict, name: Optional[str] = None) -> go.Scatter:
    return line(run["t"], run["y"], name=name or f"{scheme_label(run['scheme'])}, N_t = {run['n_steps']}",
                color=scheme_color(run["scheme"]), mode="lines+markers")


def _t_end(runs: Sequence[dict]) -> float:
    return runs[0]["t"][-1]


def fig_solutions(runs: Sequence[dict], exact: Callable[[float], float]) -> go.Figure:
    """The runs over the exact solution: a menu for the scheme, a slider for N_t."""
    frames = {scheme_label(s): {n: [_run_line(find_row(runs, scheme=s, n_steps=n))]
                                for n in sorted(dict.fromkeys(r["n_steps"] for r in runs if r["scheme"] == s))}
              for s in dict.fromkeys(r["scheme"] for r in runs)}
    return dropdown_slider_figure(frames, static_traces=[_exact_line(exact, _t_end(runs))],
                                  title="Numerical solutions against the exact one", slider_prefix="N_t = ",
                                  dropdown_prefix="scheme: ", xaxis_title="t", yaxis_title="y(t)")


def fig_error_convergence(runs: Sequence[dict]) -> go.Figure:
    """Log–log error against Δt, a line per scheme, with a dotted guide of slope r (the scheme's order) beside each."""
    fig = go.Figure()
    schemes = list(dict.fromkeys(r["scheme"] for r in runs))
    for s in schemes:
        dts, errors = dts_and_errors(runs, s)
        fig.add_trace(line(dts, errors, name=scheme_label(s), color=scheme_color(s), mode="lines+markers"))
    for s in schemes:
        dts, errors = dts_and_errors(runs, s)
        order = get_scheme(s).order
        fig.add_trace(reference_slope(dts[0], dts[-1], errors[0] * 2.0, order, name=f"slope {order}"))
    loglog_style(fig, x_title="Δt", y_title=f"error at t = {_t_end(runs):g}")
    fig.update_layout(title="Convergence: error ≈ C·Δt<sup>r</sup>", template="plotly_white", height=460)
    return fig


def fig_schemes_together(runs: Sequence[dict], exact: Callable[[float], float], n_steps: Optional[int] = None) -> go.Figure:
    """Every scheme at once over the exact solution, a slider for N_t: the schemes side by side at each
    step count, starting at ``n_steps`` (default: the smallest N_t of the runs)."""
    steps = sorted(dict.fromkeys(r["n_steps"] for r in runs))
    schemes = list(dict.fromkeys(r["scheme"] for r in runs))
    frames = {n: [_run_line(find_row(runs, scheme=s, n_steps=n), name=scheme_label(s)) for s in schemes] for n in steps}
    return slider_figure(frames, static_traces=[_exact_line(exact, _t_end(runs))], active=steps.index(n_steps or steps[0]),
                         title="Every scheme at the same number of steps", slider_prefix="N_t = ",
                         xaxis_title="t", yaxis_title="y(t)")


# ----------------------------------------------------------------------------- live app
def live_solver_app(rate: Rate, exact: Callable[[float], float], schemes: Sequence[str], t_end: float,
                    static_fallback_fig, max_steps: int = 64, n_steps: int = 4, title: Optional[str] = None) -> LiveApp:
    """A live app: a menu for the scheme and a slider for N_t (1 to ``max_steps``) that :func:`solve` the
    problem again and draw the run over the exact solution, its error in the title.

    The static book shows ``static_fallback_fig`` in its place (:func:`cnet_lib.draw.widgets.live_app`).
    """
    controls = {"scheme": Choice([(scheme_label(s), s) for s in schemes], schemes[0], "scheme"),
                "n_steps": IntRange(1, max_steps, n_steps, "N_t")}

    def render(scheme, n_steps):
        run = solve(rate, exact, scheme, n_steps, t_end)
        fig = go.Figure([_exact_line(exact, t_end), _run_line(run)])
        fig.update_layout(title=f"{scheme_label(scheme)}, N_t = {n_steps}: error at t = {t_end:g} is {run['error']:.2e}",
                          xaxis_title="t", yaxis_title="y(t)", template="plotly_white", height=420)
        return fig

    return live_app(controls, render, static_fallback_fig, title=title)
