"""Figures of the chapter "Beyond the paper: robustness and quantization": accuracy under weight noise,
rounded weights and input noise, the points each model loses, and a static explorer of every condition.

The numbers come from the robustness study (:mod:`cnet_lib.images.studies.robustness_measure`) and its verdict
(:mod:`cnet_lib.images.studies.robustness_verdict`); colours and labels from :mod:`cnet_lib.runtime.vocabulary`.
"""
from __future__ import annotations

import plotly.graph_objects as go

from ..images.studies.robustness_measure import condition_name, summarise
from ..runtime.vocabulary import run_color, run_dash, run_label, run_pattern
from .plotting import ACCURACY_TITLE, book_layout, menu_figure, percent, slider_figure

__all__ = ["STORAGE_KINDS", "level_name", "fig_weight_noise", "fig_quantization", "fig_input_noise", "fig_drops",
           "fig_robustness_explorer"]


def level_name(kind: str, level) -> str:
    """A condition in a few words: ``σ = 0.1``, ``θ̂ in 4 bits``, ``bf16``, ``τ = 0.2``."""
    if kind == "weight_noise":
        return f"σ = {level:g}"
    if kind == "input_noise":
        return f"τ = {level:g}"
    if kind == "float_format":
        return str(level)
    return condition_name(kind, level).replace("all weights", "weights")


STORAGE_KINDS = ("quantized_theta", "quantized_weights", "float_format")


def fig_weight_noise(study, title: str = ""):
    """Accuracy against the relative weight noise σ (log axis): the mean over seeds with the range of
    the seeds as error bars, one line per model and graph; dotted: each model's clean accuracy."""
    fig = go.Figure()
    for label, conds in study.items():
        rows = summarise(conds)
        noise = sorted((r for r in rows if r["kind"] == "weight_noise"), key=lambda r: r["level"])
        clean = next(r for r in rows if r["kind"] == "clean")["accuracy"]
        col = run_color(label)
        fig.add_trace(go.Scatter(
            x=[r["level"] for r in noise], y=[percent(r["accuracy"]) for r in noise], mode="lines+markers",
            name=run_label(label), line=dict(color=col, dash=run_dash(label)),
            error_y=dict(type="data", symmetric=False, array=[percent(r["max"] - r["accuracy"]) for r in noise],
                         arrayminus=[percent(r["accuracy"] - r["min"]) for r in noise]),
            customdata=[r["seeds"] for r in noise],
            hovertemplate="σ = %{x}<br>accuracy %{y:.2f}% (mean of %{customdata} seeds)"))
        fig.add_hline(y=percent(clean), line_dash="dot", line_color=col, line_width=1)
    book_layout(fig, title or "Accuracy under noise on the weights θ̂ (dotted: clean)",
                "weight noise σ (‖noise‖ = σ‖θ̂‖)", ACCURACY_TITLE, height=500, legend_below=True)
    sigmas = sorted({c.level for conds in study.values() for c in conds if c.kind == "weight_noise"})
    fig.update_xaxes(type="log", tickvals=sigmas, ticktext=[f"{s:g}" for s in sigmas])
    return fig


def fig_quantization(study, title: str = ""):
    """Accuracy (percent) with the weights stored in float32 (clean), bf16 and float16 (every parameter), and in
    8 and 4 bits by each quantization scheme (θ̂ only; every weight): horizontal bars, one group per format (one row
    each, so that every format's name reads on a phone and each bar's value sits at its end, clear of the others);
    the hover gives the model's size in bytes."""
    fig = go.Figure()

    def order(r):
        if r["kind"] == "clean":
            return (0, 0)
        return (1 + STORAGE_KINDS.index(r["kind"]), -r["level"] if isinstance(r["level"], int) else 0)

    n_rows = 0
    for label, conds in study.items():
        rows = sorted((r for r in summarise(conds) if r["kind"] in ("clean",) + STORAGE_KINDS), key=order)
        names = ["float32" if r["kind"] == "clean" else level_name(r["kind"], r["level"]) for r in rows]
        n_rows = max(n_rows, len(rows))
        fig.add_trace(go.Bar(y=names, x=[percent(r["accuracy"]) for r in rows], name=run_label(label), orientation="h",
                             marker=dict(color=run_color(label), pattern_shape=run_pattern(label)),
                             text=[f"{percent(r['accuracy']):.1f}" for r in rows], textposition="outside",
                             cliponaxis=False, customdata=[r["bytes"] for r in rows],
                             hovertemplate="%{y}: accuracy %{x:.2f}%<br>%{customdata} bytes"))
    # the bars' labels say how the weights are stored; a row of three bars is 60 px high
    book_layout(fig, title or "Weights rounded after training (integers: symmetric, per output channel)",
                ACCURACY_TITLE, "", height=140 + 20 * len(study) * n_rows + 40, legend_below=True)
    fig.update_layout(barmode="group", bargap=0.25, xaxis_range=[0, 100], margin=dict(r=40))
    fig.update_yaxes(autorange="reversed", automargin=True)
    return fig


def fig_input_noise(study, title: str = ""):
    """Accuracy against Gaussian input noise τ (normalised pixel units), with each model's blocks
    removed (dotted) for scale; a model on another graph dashed."""
    fig = go.Figure()
    for label, conds in study.items():
        rows = summarise(conds)
        col = run_color(label)
        for kind, dash, suffix in (("input_noise", run_dash(label), ""), ("identity_input_noise", "dot", ", blocks removed")):
            pts = [r for r in rows if r["kind"] == kind]
            base = next((r for r in rows if r["kind"] == ("clean" if kind == "input_noise" else "identity")), None)
            if not pts or base is None:
                continue
            pts = [dict(base, level=0.0)] + sorted(pts, key=lambda r: r["level"])
            fig.add_trace(go.Scatter(x=[r["level"] for r in pts], y=[percent(r["accuracy"]) for r in pts],
                                     mode="lines+markers", name=run_label(label) + suffix, line=dict(color=col, dash=dash),
                                     hovertemplate="τ = %{x}: accuracy %{y:.2f}%"))
    book_layout(fig, title or "Accuracy under Gaussian noise on the input images", "input noise τ (normalised pixel units)",
                ACCURACY_TITLE, height=520, legend_below=True)
    return fig


def fig_drops(judgement, title: str = ""):
    """The verdict's numbers as horizontal bars: per perturbation (one row each, the primary test at
    the top and marked), the points each model loses from its own clean accuracy; a ``*`` after a
    secondary condition whose difference is significant (Holm within its family); the paired
    difference, its unadjusted 95% interval and p, and the Holm-adjusted p in the hover, each labelled."""
    j = judgement
    rows = [r for r in j.rows if r["role"] != "unmeasured"]
    names = [("PRIMARY: " if r["role"] == "primary" else "") + level_name(r["kind"], r["level"])
             + (" *" if r["significant"] and r["role"] != "primary" else "") for r in rows]
    detail = [f"difference {r['diff']:+.2f} points, 95% interval (unadj.) [{r['ci95'][0]:+.2f}, {r['ci95'][1]:+.2f}], "
              f"p (unadj.) = {r['p']:.2g}"
              + (" (one test: not adjusted)" if r["role"] == "primary"
                 else f", p (Holm, {r['family']}) = {r['p_holm']:.2g}") for r in rows]
    fig = go.Figure()
    for who, key in ((j.a, "drop_a"), (j.b, "drop_b")):
        fig.add_trace(go.Bar(y=names, x=[r[key] for r in rows], name=run_label(who), marker_color=run_color(who),
                             orientation="h", customdata=detail,
                             hovertemplate="%{y}: loses %{x:.2f} points<br>%{customdata}"))
    book_layout(fig, title or "Points lost to each perturbation (* significant after Holm, secondary)", "accuracy lost (points)",
                "", height=160 + 44 * len(rows), legend_below=True)
    fig.update_layout(barmode="group")
    fig.update_yaxes(autorange="reversed", automargin=True)
    return fig


def fig_robustness_explorer(study, title: str = ""):
    """The static counterpart of :func:`live_robustness_app`: a menu of every measured perturbation (all of its
    labels readable on a phone, where a slider of eleven steps shows one), and for each model and graph its clean
    and perturbed accuracy (mean over seeds)."""
    kinds = ("weight_noise",) + STORAGE_KINDS + ("input_noise",)
    first = summarise(next(iter(study.values())))
    steps = [(r["kind"], r["level"]) for r in first if r["kind"] in kinds]
    frames = {}
    for kind, level in steps:
        traces = []
        for label, conds in study.items():
            rows = summarise(conds)
            clean = next(r for r in rows if r["kind"] == "clean")["accuracy"]
            hit = next((r for r in rows if (r["kind"], r["level"]) == (kind, level)), None)
            if hit is None:
                continue
            traces.append(go.Bar(x=["clean", "perturbed"], y=[percent(clean), percent(hit["accuracy"])],
                                 name=run_label(label), marker=dict(color=run_color(label), pattern_shape=run_pattern(label)),
                                 showlegend=True, text=[f"{percent(clean):.1f}", f"{percent(hit['accuracy']):.1f}"],
                                 textposition="outside", hovertemplate="%{x}: accuracy %{y:.2f}%"))
        frames[level_name(kind, level)] = traces
    fig = menu_figure(frames, title=title or "Clean and perturbed accuracy of each model", menu_prefix="",
                      yaxis_title=ACCURACY_TITLE, height=480)
    fig.update_layout(barmode="group", yaxis_range=[0, 110], uniformtext=dict(minsize=9, mode="hide"))
    return fig
