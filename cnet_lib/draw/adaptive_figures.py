"""Figures of the chapter "Beyond the paper II: adaptive steps": the pendulum's flows against the tolerance,
and for the image models accuracy and rate evaluations against the tolerance, where the accepted steps land
in depth-time, and the adaptive solver against fixed-step graphs of equal cost.

Every figure is built from precomputed numbers (:mod:`cnet_lib.pendulum.adaptive_flows`,
:mod:`cnet_lib.images.studies.adaptive_measure`), so its sliders work in the static book; colours and labels come from
:mod:`cnet_lib.runtime.vocabulary` (a model keeps its run's colour, a pair its dash: ``bosh3`` dashed).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import plotly.graph_objects as go

from ..core.schemes import get_scheme
from ..images.studies.adaptive_measure import BINS, adaptive_rows, equal_cost_rows
from ..runtime.vocabulary import SCHEME_COLORS, run_color, run_label, scheme_color
from .plotting import ACCURACY_TITLE, book_layout, log_ticks, loglog_style, percent, reference_slope, slider_figure

__all__ = ["PAIR_DASH", "CONTROL_DASHES", "fig_flow_errors", "fig_adaptive_accuracy", "fig_adaptive_nfe", "fig_step_positions",
           "fig_equal_cost"]

PAIR_DASH = {"bosh3": "dash", "dopri5": None}
"""How a pair is drawn: Bogacki–Shampine dashed, Dormand–Prince solid."""


def _flow_color(row: Mapping) -> str:
    return SCHEME_COLORS["exact"] if row["trained"] is None else scheme_color(row["trained"])


def fig_flow_errors(rows: Sequence[Mapping], own: Sequence[Mapping], title: str = ""):
    """The pendulum's flows (:func:`cnet_lib.pendulum.adaptive_flows.flow_rows`): a slider over the pairs; top,
    the error E at T_data against the tolerance (log–log), each ODE-Net's own-graph error dotted; bottom, the
    rate evaluations against the tolerance with the slope −1/(q + 1) the controller aims at.  One legend entry per
    flow (its own-graph line goes with it): the ODE-Nets trained with one scheme share its colour, the controls
    trained at a coarser Δt_data are dashed by it (:data:`CONTROL_DASHES`)."""
    frames = {}
    for pair in dict.fromkeys(r["pair"] for r in rows):
        traces = []
        mine = [r for r in rows if r["pair"] == pair]
        tols = sorted({r["tol"] for r in mine})
        for name in dict.fromkeys(r["name"] for r in mine):
            pts = sorted((r for r in mine if r["name"] == name), key=lambda r: r["tol"])
            col, label, dash = _flow_color(pts[0]), pts[0]["label"], _control_dash(pts[0], mine)
            traces.append(go.Scatter(x=[r["tol"] for r in pts], y=[r["error"] for r in pts], mode="lines+markers",
                                     name=label, legendgroup=name, line=dict(color=col, dash=dash),
                                     customdata=[[r["nfe"], r["n_rejected"]] for r in pts],
                                     hovertemplate="tol %{x:g}: E = %{y:.2e}<br>NFE %{customdata[0]}, rejected %{customdata[1]}"))
            traces.append(go.Scatter(x=[r["tol"] for r in pts], y=[r["nfe"] for r in pts], mode="lines+markers",
                                     name=label, legendgroup=name, showlegend=False, line=dict(color=col, dash=dash),
                                     xaxis="x2", yaxis="y2", hovertemplate="tol %{x:g}: NFE %{y}"))
            hit = next((o for o in own if o["name"] == name), None)
            if hit is not None:
                traces.append(go.Scatter(x=[tols[0], tols[-1]], y=[hit["error_own"]] * 2, mode="lines", legendgroup=name,
                                         name=f"{label}, its own graph", showlegend=False,
                                         line=dict(color=col, dash="dot", width=1),
                                         hovertemplate=f"own graph: E = {hit['error_own']:.2e}, NFE {hit['nfe_own']}"))
        q = get_scheme(pair).error_order
        guide = reference_slope(tols[-1], tols[0], max(r["nfe"] for r in mine if r["tol"] == tols[-1]), -1 / (q + 1),
                                name=f"slope −1/{q + 1}")
        guide.update(xaxis="x2", yaxis="y2")
        traces.append(guide)
        frames[pair] = traces
    fig = slider_figure(frames, title=title or "Pendulum: error and cost against the tolerance", slider_prefix="pair: ",
                        height=760)
    fig.update_layout(grid=dict(rows=2, columns=1, pattern="independent", ygap=0.18))
    log = dict(type="log", exponentformat="power")
    fig.update_layout(xaxis=dict(log, title="rtol = atol"), xaxis2=dict(log, title="rtol = atol"),
                      yaxis=dict(log, title="E at T_data"), yaxis2=dict(log, title="rate evaluations"))
    return log_ticks(fig)


CONTROL_DASHES = ("dash", "dot", "dashdot")
"""How the control ODE-Nets (trained at a coarser Δt_data) are drawn, by their Δt_data, coarsest last (dashes a legend's
short sample tells apart; "longdash" looked solid there): a model trained
with the same scheme keeps its colour, and its Δt_data its dash."""


def _control_dash(row: Mapping, rows: Sequence[Mapping]):
    """The dash of ``row``'s flow: solid for the true rate and the ODE-Nets trained at the finest Δt_data, else one of
    :data:`CONTROL_DASHES` by its Δt_data."""
    steps = sorted({r["dt_data"] for r in rows if r["dt_data"] is not None})
    if row["dt_data"] is None or row["dt_data"] == steps[0]:
        return None
    return CONTROL_DASHES[(steps.index(row["dt_data"]) - 1) % len(CONTROL_DASHES)]


def _pairs(study: Mapping) -> list:
    return list(study["grid"]["pairs"])


def fig_adaptive_accuracy(study: Mapping, title: str = ""):
    """Accuracy against the tolerance (log axis, tighter to the right) of each model with each pair (``bosh3``
    dashed); dotted, each model's accuracy on its own graph."""
    rows = adaptive_rows(study)
    fig = go.Figure()
    for run in study["runs"]:
        col = run_color(run)
        own = next(r for r in rows if r["run"] == run and r["pair"] is None)
        for pair in _pairs(study):
            pts = sorted((r for r in rows if r["run"] == run and r["pair"] == pair), key=lambda r: -r["tol"])
            fig.add_trace(go.Scatter(x=[r["tol"] for r in pts], y=[percent(r["accuracy"]) for r in pts],
                                     mode="lines+markers", name=f"{run_label(run)}, {pair}",
                                     line=dict(color=col, dash=PAIR_DASH.get(pair)),
                                     customdata=[[r["changed"], r["nfe"]] for r in pts],
                                     hovertemplate="tol %{x:g}: accuracy %{y:.2f}%<br>%{customdata[0]:.1f}% of the classes "
                                                   "changed from its own graph; NFE %{customdata[1]:.1f}"))
        fig.add_hline(y=percent(own["accuracy"]), line_dash="dot", line_color=col, line_width=1)
    book_layout(fig, title or "Accuracy with adaptive steps (dotted: each model's own graph)", "rtol = atol",
                ACCURACY_TITLE, height=480, legend_below=True)
    fig.update_xaxes(type="log", autorange="reversed")
    return log_ticks(fig)


def fig_adaptive_nfe(study: Mapping, title: str = ""):
    """Rate evaluations per image's forward pass against the tolerance (log–log, tighter to the right), each
    model with each pair; dotted, each model's own graph."""
    rows = adaptive_rows(study)
    fig = go.Figure()
    for run in study["runs"]:
        col = run_color(run)
        own = next(r for r in rows if r["run"] == run and r["pair"] is None)
        for pair in _pairs(study):
            pts = sorted((r for r in rows if r["run"] == run and r["pair"] == pair), key=lambda r: -r["tol"])
            fig.add_trace(go.Scatter(x=[r["tol"] for r in pts], y=[r["nfe"] for r in pts], mode="lines+markers",
                                     name=f"{run_label(run)}, {pair}", line=dict(color=col, dash=PAIR_DASH.get(pair)),
                                     customdata=[[" / ".join(f"{v:.1f}" for v in r["nfe_blocks"]), r["rejected"]] for r in pts],
                                     hovertemplate="tol %{x:g}: NFE %{y:.1f} (per block %{customdata[0]})<br>"
                                                   "rejected steps per batch %{customdata[1]:.1f}"))
        fig.add_hline(y=own["nfe"], line_dash="dot", line_color=col, line_width=1)
    book_layout(fig, title or "Rate evaluations per image (dotted: own graph)", "rtol = atol", "NFE per image",
                height=480, legend_below=True)
    loglog_style(fig)
    fig.update_xaxes(autorange="reversed")
    return fig


def _block_axes(b: int) -> dict:
    return {} if b == 0 else dict(xaxis=f"x{b + 1}", yaxis=f"y{b + 1}")


def fig_step_positions(study: Mapping, pair: str = "dopri5", title: str = ""):
    """Where the accepted steps of ``pair`` end in depth-time t/T, one panel per block (stacked), a slider over
    the tolerances: per bin of 1/:data:`BINS`, the steps ending there per batch, each model in its colour;
    dotted, the break points k/M of θ(t), where every model's steps end by construction."""
    n_blocks = len(next(iter(study["runs"].values()))["graph"])
    width = 1.0 / BINS
    centres = [(i + 0.5) * width for i in range(BINS)]
    top = max(c / len(r["nfe"]) for res in study["runs"].values() for r in res["rows"]
              if r["kind"] == "adaptive" and r["pair"] == pair for ends in r["ends"] for c in ends)
    static = []
    for b in range(n_blocks):
        pieces = sorted({k / res["n_basis"][b] for res in study["runs"].values() for k in range(1, res["n_basis"][b])})
        for p in pieces:
            static.append(go.Scatter(x=[p, p], y=[0, top], mode="lines", showlegend=False, hoverinfo="skip",
                                     line=dict(color="#999999", dash="dot", width=1), **_block_axes(b)))
    frames = {}
    for tol in study["grid"]["tolerances"]:
        traces = []
        for run, res in study["runs"].items():
            row = next(r for r in res["rows"] if r["kind"] == "adaptive" and r["pair"] == pair and r["rtol"] == tol)
            n_batches = len(row["nfe"])
            for b in range(n_blocks):
                traces.append(go.Bar(x=centres, y=[c / n_batches for c in row["ends"][b]], width=width,
                                     name=run_label(run), legendgroup=run, showlegend=b == 0, opacity=0.6,
                                     marker_color=run_color(run), **_block_axes(b),
                                     hovertemplate=f"block {b + 1}: %{{y:.2f}} steps per batch end near t/T = %{{x:.3f}}"))
        frames[f"{tol:g}"] = traces
    fig = slider_figure(frames, title=title or f"Where the accepted {pair} steps end", slider_prefix="rtol = atol = ",
                        static_traces=static, height=260 * n_blocks + 160)
    fig.update_layout(grid=dict(rows=n_blocks, columns=1, pattern="independent", ygap=0.25), barmode="overlay")
    for b in range(n_blocks):
        suffix = "" if b == 0 else str(b + 1)
        fig.update_layout({f"xaxis{suffix}": dict(range=[0, 1], title=f"block {b + 1}: depth-time t/T"),
                           f"yaxis{suffix}": dict(title="steps per batch", rangemode="tozero")})
    return fig


def fig_equal_cost(study: Mapping, title: str = ""):
    """Accuracy against rate evaluations per image (log axis): each model with the adaptive pair of the grid's
    equal-cost comparison (filled), RK4-classic at the same cost (open), and on its own graph (a star)."""
    rows, eq = adaptive_rows(study), equal_cost_rows(study)
    fig = go.Figure()
    for run in study["runs"]:
        col = run_color(run)
        mine = sorted((r for r in eq if r["run"] == run), key=lambda r: r["nfe"])
        fig.add_trace(go.Scatter(x=[r["nfe"] for r in mine], y=[percent(r["accuracy"]) for r in mine], mode="lines+markers",
                                 name=f"{run_label(run)}, adaptive", line=dict(color=col),
                                 customdata=[r["tol"] for r in mine], hovertemplate="tol %{customdata:g}: NFE %{x:.1f}, "
                                                                                    "accuracy %{y:.2f}%"))
        fig.add_trace(go.Scatter(x=[r["fixed_nfe"] for r in mine], y=[percent(r["fixed_accuracy"]) for r in mine],
                                 mode="markers", name=f"{run_label(run)}, RK4 fixed steps",
                                 marker=dict(color=col, symbol="circle-open", size=10),
                                 customdata=["/".join(map(str, r["n_steps"])) for r in mine],
                                 hovertemplate="N_t = %{customdata}: NFE %{x:.0f}, accuracy %{y:.2f}%"))
        own = next(r for r in rows if r["run"] == run and r["pair"] is None)
        fig.add_trace(go.Scatter(x=[own["nfe"]], y=[percent(own["accuracy"])], mode="markers",
                                 name=f"{run_label(run)}, own graph", marker=dict(color=col, symbol="star", size=13)))
    book_layout(fig, title or "Adaptive steps against fixed steps of equal cost", "rate evaluations per image",
                ACCURACY_TITLE, height=500, legend_below=True)
    fig.update_xaxes(type="log")
    return log_ticks(fig)
