"""Figures of the image chapters "ContinuousNet" and "Refinement training" (those of "Manifestation invariance" are
:mod:`cnet_lib.studies.manifestation.show`'s).

The numbers come from the image study (:mod:`cnet_lib.images`: trained runs, their sweeps, θ(t)); this
module only draws them with plotly from precomputed values, so that sliders and menus work in the
static book.  Colours and labels come from :mod:`cnet_lib.runtime.vocabulary`.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..core.bases import basis_names, make_basis
from ..images.runs.study_run import StudyRun
from ..images.studies.theta import stage_rows, theta_curve
from ..runtime.vocabulary import SERIES_COLORS, basis_label, run_color
from .plotting import book_layout, line, percent, slider_figure

__all__ = ["fig_basis_functions", "fig_theta_bases", "fig_training_curves", "fig_theta_refinement", "fig_manifestations"]


def _line_styles(*styles: tuple[str, str]) -> list:
    """Legend entries (no data) that say what each line style means, e.g. ``("trained", None)``,
    ``("untrained", "dash")``: the curves themselves get one legend entry per weight."""
    return [line([None], [None], name=f"{'solid' if dash is None else dash + 'ed'}: {what}", color="#555555", dash=dash,
                 legendrank=2000, hoverinfo="skip") for what, dash in styles]


def fig_basis_functions(n_basis: int = 4, title: str = ""):
    """Slider over the three bases: their ``n_basis`` functions φ_β(t) on [0, 1] (the θ(t) whose
    coefficients are θ̂ = e_β), one colour per β."""
    frames = {}
    for basis in basis_names():
        traces = []
        for beta in range(n_basis):
            unit = [1.0 if j == beta else 0.0 for j in range(n_basis)]
            t, phi = theta_curve(unit, basis)
            traces.append(line(t, phi, name=f"φ_{beta + 1}", color=SERIES_COLORS[beta % len(SERIES_COLORS)]))
        frames[basis_label(basis)] = traces
    return slider_figure(frames, slider_prefix="basis: ", title=title or f"The M = {n_basis} functions of each basis",
                         xaxis_title="t (depth time)", yaxis_title="φ_β(t)")


def fig_theta_bases(curves: Mapping[str, Mapping[str, Mapping[str, tuple]]], title: str = ""):
    """Slider over the three bases; each step shows untrained (dashed) and trained (solid) θ(t)
    of the same few weights, one colour and one legend entry per weight (two more entries say
    what solid and dashed mean).  ``curves`` comes from :func:`theta_by_basis`."""
    frames = {}
    for basis, kinds in curves.items():
        traces = []
        for i, entry in enumerate(kinds["trained"]):
            col = SERIES_COLORS[i % len(SERIES_COLORS)]
            for kind, dash in (("trained", None), ("untrained", "dash")):
                t, v = kinds[kind][entry]
                traces.append(line(t, v, name=f"θ{entry}", color=col, dash=dash, legendgroup=entry,
                                   showlegend=kind == "trained",
                                   hovertemplate=f"{kind} θ{entry}<br>t = %{{x:.3f}}<br>θ = %{{y:.4g}}<extra></extra>"))
        frames[basis_label(basis)] = traces
    return slider_figure(frames, static_traces=_line_styles(("trained", None), ("untrained", "dash")),
                         title=title or "θ(t) of four weights of the first OdeBlock, in three bases",
                         slider_prefix="basis: ", xaxis_title="t (depth time)", yaxis_title="θ(t)")


def fig_training_curves(runs: Mapping[str, StudyRun], title: str = "Training curves"):
    """Three stacked panels against the epoch (held-out accuracy, training loss, seconds per epoch), one
    colour per run (:func:`run_color`); refinement epochs marked by dotted lines (said in the title);
    the legend below the panels, clear of the title and the panels' titles."""
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("held-out accuracy", "training loss", "seconds per epoch (training only)"))
    for name, run in runs.items():
        h = run.history
        col = run_color(name)
        ep = [r["epoch"] for r in h]
        nts = [str(r["n_steps"]) for r in h]
        for row, key in ((1, "test_acc"), (2, "train_loss"), (3, "train_seconds")):
            fig.add_trace(go.Scatter(x=ep, y=[percent(r[key]) if row == 1 else r[key] for r in h], name=run.label,
                                     legendgroup=name,
                                     showlegend=row == 1, mode="lines+markers", line=dict(color=col),
                                     customdata=nts, hovertemplate="epoch %{x}<br>%{y:.4g}<br>N_t=%{customdata}"),
                          row=row, col=1)
        for r in h:
            if r["refined"]:
                fig.add_vline(x=r["epoch"] - 0.5, line_dash="dot", line_color=col, row="all", col=1)
    refined = sorted({r["epoch"] for run in runs.values() for r in run.history if r["refined"]})
    note = f" (dotted: refinement before epoch {', '.join(map(str, refined))})" if refined else ""
    book_layout(fig, title + note, height=760)
    fig.update_layout(margin=dict(t=90, b=100), legend=dict(orientation="h", x=0.0, xanchor="left", y=-0.1, yanchor="top"))
    fig.update_xaxes(title_text="epoch", row=3, col=1)
    fig.update_xaxes(dtick=1 if max((len(r.history) for r in runs.values()), default=0) <= 20 else None)
    for row, unit in ((1, "percent correct"), (2, "cross-entropy"), (3, "seconds")):
        fig.update_yaxes(title_text=unit, row=row, col=1)
    return fig


def fig_theta_refinement(snapshots: Sequence[dict], block: int = 0, title: str = ""):
    """Slider over epochs: θ(t) of a few weights (and the skip gain s(t)) after each epoch
    (solid) over the epoch before (dashed); a refinement doubles M and keeps θ(t).  One legend
    entry per weight; two more say what solid and dashed mean."""
    frames = {}
    prev = None
    for snap in snapshots:
        b = snap["blocks"][block]
        traces = []
        for i, (entry, coeffs) in enumerate(b["entries"].items()):
            col = SERIES_COLORS[i % len(SERIES_COLORS)]
            t, v = theta_curve(coeffs, b["basis"])
            traces.append(line(t, v, name=f"θ{entry}", color=col, legendgroup=entry))
            if prev is not None:
                pt, pv = theta_curve(prev["entries"][entry], prev["basis"])
                traces.append(line(pt, pv, name=f"θ{entry}, epoch before", color=col, dash="dash",
                                   legendgroup=entry, showlegend=False, opacity=0.5))
        if b.get("gain") is not None:  # in its own panel: it is an order of magnitude larger than the weights
            t, v = theta_curve(b["gain"], b["basis"])
            traces.append(line(t, v, name="s(t), skip gain (lower panel)", color="black", dash="dot", yaxis="y2"))
        tag = "init" if snap["epoch"] == 0 else f"epoch {snap['epoch']}"
        frames[f"{tag}, M={b['n_basis']}" + (" (refined)" if snap.get("refined") else "")] = traces
        prev = b
    fig = slider_figure(frames, active=len(frames) - 1, slider_prefix="",
                        static_traces=_line_styles(("after the epoch", None), ("the epoch before", "dash")),
                        title=title or f"θ(t) of OdeBlock {block + 1} after each epoch",
                        xaxis_title="t (depth time, block from 0 to 1)", yaxis_title="θ(t): four centre taps",
                        height=560)
    # the gain in a panel of its own under the weights: on one axis with them it squashed them into a tenth
    fig.update_layout(yaxis=dict(domain=[0.36, 1.0]), xaxis=dict(anchor="y2"),
                      yaxis2=dict(domain=[0.0, 0.26], anchor="x", title="s(t)", nticks=4))
    return fig


def fig_manifestations(n_basis: int, manifestations: Sequence[tuple[str, int]], basis: str = "piecewise_constant",
                       title: str = ""):
    """Where each manifestation (scheme, N_t) evaluates R on one θ(t): one row per manifestation,
    one marker per stage evaluation at its time t, coloured by the piece β it reads (legend: one
    entry per piece); the piece boundaries of θ(t) are dotted."""
    fig = go.Figure()
    labels = [f"{s}, N_t={n}" for s, n in manifestations]
    for lab, (s, n) in zip(labels, manifestations):
        rows = stage_rows(s, n, n_basis, basis)
        beta = [max(r["pieces"], key=lambda p: p[1])[0] for r in rows]
        fig.add_trace(go.Scatter(
            x=[r["t"] for r in rows], y=[lab] * len(rows), mode="markers", name=lab, showlegend=False,
            marker=dict(size=11, color=[SERIES_COLORS[b % len(SERIES_COLORS)] for b in beta], line=dict(width=1, color="black")),
            customdata=[[r["step"], r["stage"], str(r["pieces"])] for r in rows],
            hovertemplate="t=%{x:.3f}<br>step %{customdata[0]}, stage %{customdata[1]}<br>reads (β, φ_β) %{customdata[2]}"))
    for b in range(n_basis):  # legend only: the colour of each piece
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"θ̂_{b + 1}", hoverinfo="skip",
                                 marker=dict(size=11, color=SERIES_COLORS[b % len(SERIES_COLORS)],
                                             line=dict(width=1, color="black"))))
    for bp in make_basis(basis, n_basis).breakpoints:
        fig.add_vline(x=float(bp), line_dash="dot", line_color="gray")
    book_layout(fig, title or f"Stage evaluations on one θ(t): M = {n_basis}, {basis_label(basis)}", "t (depth time)",
                height=160 + 45 * len(labels))
    fig.update_layout(yaxis=dict(autorange="reversed"), legend_title_text="piece read")
    return fig
