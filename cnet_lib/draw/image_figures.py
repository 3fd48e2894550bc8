"""Figures of the image chapter "Manifestation invariance" (those of "ContinuousNet" and "Refinement training" are
their studies', :mod:`cnet_lib.studies.continuousnet` and :mod:`cnet_lib.studies.refinement`).

The numbers come from the image study (:mod:`cnet_lib.images`: the trained runs' sweeps); this
module only draws them with plotly from precomputed values, so that sliders and menus work in the
static book.  Colours and labels come from :mod:`cnet_lib.runtime.vocabulary`.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..runtime.rows import find_row
from ..runtime.vocabulary import run_label, scheme_color
from .plotting import ACCURACY_TITLE, LEGEND_BELOW, dropdown_slider_figure, percent

__all__ = ["fig_accuracy_vs_nt", "fig_sweep_explorer"]


def fig_accuracy_vs_nt(sweeps: Mapping[str, Sequence[dict]], title: str = ""):
    """The paper's Fig. 4: one panel per trained model (stacked, so that it reads on a phone), test
    accuracy against N_t for each inference scheme, the trained graph as a star, compressed θ as open
    diamonds, and the blocks-as-identity accuracy as a dashed line."""
    names = list(sweeps)
    # one panel per row: side by side, the panels' titles, axis titles and labels collide on a phone
    fig = make_subplots(rows=len(names), cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=[run_label(n) for n in names])
    shown = set()
    for c, name in enumerate(names, 1):
        rows = sweeps[name]
        manif = [r for r in rows if r["kind"] == "manifestation"]
        for s in dict.fromkeys(r["scheme"] for r in manif):
            rs = sorted((r for r in manif if r["scheme"] == s), key=lambda r: r["n_steps"])
            fig.add_trace(go.Scatter(x=[r["n_steps"] for r in rs], y=[percent(r["accuracy"]) for r in rs],
                                     mode="lines+markers", name=s, legendgroup=s, showlegend=s not in shown,
                                     line=dict(color=scheme_color(s)), customdata=[r["units"] for r in rs],
                                     hovertemplate=f"{s}<br>N_t=%{{x}}<br>accuracy %{{y:.2f}}%<br>evaluations of R=%{{customdata}}"),
                          row=c, col=1)
            shown.add(s)
        tr = find_row(rows, kind="trained")
        fig.add_trace(go.Scatter(x=[tr["n_steps"]], y=[percent(tr["accuracy"])], mode="markers", name="trained graph",
                                 legendgroup="trained", showlegend="trained" not in shown,
                                 marker=dict(symbol="star", size=15, color="black")), row=c, col=1)
        shown.add("trained")
        comp = [r for r in rows if r["kind"] == "compressed"]
        for s in dict.fromkeys(r["scheme"] for r in comp):
            rs = sorted((r for r in comp if r["scheme"] == s), key=lambda r: r["n_basis"])
            key = f"compressed {s}"
            fig.add_trace(go.Scatter(x=[r["n_steps"] for r in rs], y=[percent(r["accuracy"]) for r in rs], mode="markers",
                                     name=f"θ compressed to M = N_t, {s}", legendgroup=key, showlegend=key not in shown,
                                     marker=dict(symbol="diamond-open", size=12, color=scheme_color(s))),
                          row=c, col=1)
            shown.add(key)
        ident = find_row(rows, kind="identity")
        if ident is not None:
            fig.add_hline(y=percent(ident["accuracy"]), line_dash="dash", line_color="gray", row=c, col=1,
                          annotation_text=f"blocks removed: {percent(ident['accuracy']):.1f}%",
                          annotation_position="top right")
    # the steps swept, and only they, label the log axis (plotly's own labels were "8 9 1 2 3 ... 8 9 10")
    nts = sorted({r["n_steps"] for rows in sweeps.values() for r in rows if r.get("n_steps")})
    fig.update_xaxes(type="log", tickmode="array", tickvals=nts, ticktext=[str(n) for n in nts])
    fig.update_xaxes(title_text="N_t (steps per OdeBlock)", row=len(names), col=1)
    fig.update_yaxes(title_text=ACCURACY_TITLE)
    fig.update_layout(title=title or "One trained θ(t), many graphs: accuracy against N_t and the inference scheme",
                      template="plotly_white", height=300 * len(names) + 200, legend=LEGEND_BELOW, margin=dict(b=120))
    return fig


_VALUE_AT_FOOT = dict(textposition="inside", insidetextanchor="start", textangle=0, hovertemplate="%{x}: accuracy %{y:.2f}%")


def fig_sweep_explorer(sweeps: Mapping[str, Sequence[dict]], title: str = ""):
    """Static counterpart of the live app: choose the scheme (menu) and N_t (slider); bars give each
    model's accuracy (percent) with the full θ and, where swept, with θ compressed to M = N_t; black
    markers the trained graph, grey markers the blocks-as-identity accuracy.  It opens on the graph the first
    model was trained on (the worst graph, Euler at N_t = 1, is one step away)."""
    names = list(sweeps)
    labels = [run_label(n).replace(" (", "<br>(") for n in names]  # two short lines: no slanted labels on a phone
    schemes = list(dict.fromkeys(r["scheme"] for rows in sweeps.values() for r in rows if r["kind"] == "manifestation"))
    nts = sorted({r["n_steps"] for rows in sweeps.values() for r in rows if r["kind"] == "manifestation"})

    def acc(rows, kind, s, n):
        r = next((r for r in rows if r["kind"] == kind and r["scheme"] == s and r["n_steps"] == n), None)
        return None if r is None else percent(r["accuracy"])

    frames = {}
    for s in schemes:
        frames[s] = {}
        for n in nts:
            full = [acc(sweeps[k], "manifestation", s, n) for k in names]
            comp = [acc(sweeps[k], "compressed", s, n) for k in names]
            # each bar's value at its foot, inside it: above it, the star of the trained graph covered it
            traces = [go.Bar(x=labels, y=full, name=f"{s}, N_t = {n}", marker_color=scheme_color(s),
                             text=[f"{v:.1f}" if v is not None else "" for v in full], textfont_color="white",
                             **_VALUE_AT_FOOT)]
            if any(v is not None for v in comp):
                traces.append(go.Bar(x=labels, y=comp, name=f"θ compressed to M = {n}", marker_color="#bbbbbb",
                                     text=[f"{v:.1f}" if v is not None else "" for v in comp],
                                     textfont_color="#222222", **_VALUE_AT_FOOT))
            frames[s][n] = traces
    trained = [find_row(sweeps[k], kind="trained") for k in names]
    static = [go.Scatter(x=labels, y=[percent(r["accuracy"]) for r in trained], mode="markers",
                         name="trained graph", marker=dict(symbol="star", size=14, color="black")),
              go.Scatter(x=labels, y=[percent(find_row(sweeps[k], kind="identity")["accuracy"]) for k in names],
                         mode="markers", name="blocks removed",
                         marker=dict(symbol="line-ew-open", size=40, color="gray", line=dict(width=3)))]
    first = trained[0]
    fig = dropdown_slider_figure(frames, static_traces=static, title=title or "Accuracy of each trained model on a chosen graph",
                                 dropdown_prefix="scheme: ", slider_prefix="N_t = ", yaxis_title=ACCURACY_TITLE,
                                 active_option=schemes.index(first["scheme"]) if first["scheme"] in schemes else 0,
                                 active_step=nts.index(first["n_steps"]) if first["n_steps"] in nts else 0)
    fig.update_layout(barmode="group", yaxis_range=[0, 105])
    return fig
