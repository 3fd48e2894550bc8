"""Adaptive steps, shown: the tables, sentences, figures and live app of the chapter *Beyond the paper II: adaptive
steps*, and the numbers its prose quotes (:func:`facts`).

The numbers are :mod:`.study`'s; nothing here measures.  Every figure is built from precomputed numbers, so its
sliders work in the static book; colours and labels come from :mod:`cnet_lib.runtime.rich_text` (a model keeps its
run's colour, a pair its dash: ``bosh3`` dashed; an ODE-Net its training scheme's colour, a coarser Δt_data its dash).
"""
from __future__ import annotations

import math
import time
from typing import Any, Mapping, Optional, Sequence

import plotly.graph_objects as go

from ...images.runs.image_presets import adaptive_grid, live_images
from ...images.runs.run_loading import StudyRun, as_trained_note, study_device
from ...core.schemes import get_scheme
from ...draw.html_figures import below_modebar
from ...draw.plotting import (ACCURACY_TITLE, book_layout, dropdown_slider_figure, log_ticks, loglog_style, percent,
    reference_slope, slider_figure)
from ...draw.widgets import Choice, Steps, app_data, live_app as _live_app
from ...runtime.rich_text import (Rich, SCHEME_COLORS, format_table, join_rich, minus_sign, paragraphs, run_color, sci,
    run_label, scheme_color, scheme_label, times)
from ...pendulum import PendulumConfig
from ..runner import check_study_inputs, precision, ran_on
from .study import (BINS, PENDULUM_RULE, PendulumRule, Verdict, adaptive_rows, decode_predictions, equal_cost_rows,
    evaluate, mean_nfe)

__all__ = ["accuracy_table", "equal_cost_table", "verdict_table", "word_verdict", "verdict", "flow_table", "torchdiffeq_table",
           "flows_verdict_table", "word_flows", "PAIR_DASH", "CONTROL_DASHES", "fig_flow_errors",
           "fig_accuracy", "fig_nfe", "fig_step_positions", "fig_equal_cost", "fig_step_explorer", "LIVE_TOLERANCES",
           "live_app", "facts"]


# =========================================================================== the image models: tables and sentences
def accuracy_table(study: Mapping, as_trained: Optional[Mapping[str, Any]] = None) -> Rich:
    """:func:`~.study.adaptive_rows` as a table; with ``as_trained`` (the runs), the note says why a model's accuracy
    on its own graph here differs from its accuracy as trained."""
    def graph(r):
        if r["pair"] is None:
            return "own: " + ", ".join(f"{scheme_label(s)} N_t = {n}" for s, n in dict.fromkeys(map(tuple, r["graph"])))
        return f"{r['pair']}, tol {r['tol']:g}"

    cols = [("model", lambda r: run_label(r["run"]), "{}"), ("graph", graph, "{}"), ("accuracy", "accuracy", "{:.4f}"),
            ("own − this (points)", "drop", "{:+.2f}"), ("changed (%)", "changed", "{:.1f}"),
            ("NFE per image", "nfe", "{:.1f}"), ("NFE per block", lambda r: " / ".join(f"{v:.1f}" for v in r["nfe_blocks"]), "{}"),
            ("rejected per batch", "rejected", "{:.1f}")]
    g = study["grid"]
    rows = adaptive_rows(study)
    own = {r["run"]: 100 * r["accuracy"] for r in rows if r["pair"] is None}
    note = as_trained_note(own, as_trained, f"the study's {study['n']:,} held-out images, in float32")
    return format_table(rows, cols, left=2, key=("accuracy",),
                        note=f"{study['n']:,} held-out images in batches of {g['batch_size']}; tol = rtol = atol; NFE = rate "
                             "evaluations of a block (R(x, θ(t)) calls), per image's forward pass; changed = predicted "
                             "class differs from the model's own graph" + (f"; the own graphs' accuracy {note}" if note else ""))


def _fixed_steps(r: Mapping, study: Mapping) -> str:
    """``RK4 (classic), N_t = 9*/9*/9*``: a block's N_t marked when it is not a multiple of its M, so that its steps
    straddle the jumps of θ(t)."""
    m = (study["runs"].get(r["run"]) or {}).get("n_basis") or []
    marks = [f"{n}{'*' if i < len(m) and n % m[i] else ''}" for i, n in enumerate(r["n_steps"])]
    return f"{scheme_label(r['scheme'])}, N_t = {'/'.join(marks)}"


def equal_cost_table(study: Mapping) -> Rich:
    """:func:`~.study.equal_cost_rows` as a table."""
    cols = [("model", lambda r: run_label(r["run"]), "{}"), ("adaptive", lambda r: f"{r['pair']}, tol {r['tol']:g}", "{}"),
            ("accuracy", "accuracy", "{:.4f}"), ("NFE", "nfe", "{:.1f}"),
            ("fixed steps", lambda r: _fixed_steps(r, study), "{}"),
            ("accuracy ", "fixed_accuracy", "{:.4f}"), ("NFE ", "fixed_nfe", "{:.0f}"), ("same class (%)", "agree", "{:.1f}")]
    return format_table(equal_cost_rows(study), cols, left=2,
                        note="fixed steps of equal cost: per block N_t = round(NFE / 4) of RK4-classic, the adaptive "
                             "solve's mean rate evaluations; * an N_t that is not a multiple of the block's M: its steps "
                             "straddle jumps of θ(t), where a step loses its order (the adaptive solve stops at every "
                             "jump); same class = both graphs predict the same class")


def verdict_table(v: Verdict, as_trained: Optional[Mapping[str, Any]] = None) -> Rich:
    """Each model of the verdict in one row: its class and its drop (the columns a phone shows first), the drop's paired
    95% interval, its accuracy on its own graph (the drop is that less the accuracy with the rule's pair at the
    tightest tolerance), the classes changed, the agreement of the two tightest tolerances and the rate evaluations
    per image on both (narrow enough for the book's text column at 1280 px)."""
    rows = [v.classes[v.a], v.classes[v.b]]
    c0 = rows[0]
    note = as_trained_note({c.run: c.acc_own for c in rows}, as_trained, f"the study's {c0.n:,} images, in float32")
    cols = [("model", lambda c: run_label(c.run), "{}"), ("class", lambda c: c.klass, "{}"),
            ("drop (points)", lambda c: c.drop, "{:+.2f}"),
            ("95% interval", lambda c: f"[{c.ci95[0]:+.2f}, {c.ci95[1]:+.2f}]", "{}"),
            ("own graph (%)", lambda c: c.acc_own, "{:.1f}"),
            ("changed (%)", lambda c: c.changed, "{:.1f}"),
            ("same at the two tightest (%)", lambda c: 100 * c.agreement, "{:.1f}"),
            ("NFE", lambda c: f"{c.nfe_own:.0f} → {c.nfe_adaptive:.0f}", "{}")]
    return format_table(rows, cols, left=2, key=("class", "drop (points)"),
                        note=f"{c0.n:,} images; {v.rule.pair} at tol {c0.tol:g}; drop = own − adaptive, paired; changed: "
                             "class other than the own graph's; same at the two tightest: classes alike at the two "
                             "tightest tolerances; NFE: rate evaluations per image, own → adaptive"
                             + (f"; own graphs {note}" if note else ""))


def _outcome(v: Verdict, lab: Mapping[str, str]) -> str:
    """The verdict's outcome in words (the end of its ``VERDICT`` sentence)."""
    ca, cb = v.classes[v.a], v.classes[v.b]
    return {"tells them apart": f"the error-controlled solver tells them apart: {lab[v.a]} is continuous and "
                                f"{lab[v.b]} discrete.",
            "the other way round": f"the solver tells them apart the other way round: {lab[v.a]} is discrete and "
                                   f"{lab[v.b]} continuous.",
            "does not tell them apart": f"the solver does not tell them apart: both models are {ca.klass}.",
            "inconclusive": f"inconclusive ({lab[v.a]}: {ca.klass}; {lab[v.b]}: {cb.klass})."}[v.outcome]


def word_verdict(v: Verdict, labels: Optional[Mapping[str, str]] = None, width: int = 92) -> Rich:
    """What :func:`~.study.judge` found, as paragraphs (the text wrapped to ``width`` characters): the rate evaluations
    beside the verdict (secondary, never part of it), then the ``VERDICT``, which rests on the rule alone, is set apart
    in a notebook, and says that one trained model per method stands behind it.  Each model's numbers and class are
    :func:`verdict_table`'s."""
    lab = {v.a: run_label(v.a), v.b: run_label(v.b), **(labels or {})}
    r = v.rule
    ratio = v.nfe_ratio
    more = ("more" if ratio >= r.nfe_ratio else "fewer" if ratio <= 1 / r.nfe_ratio else "about as many")
    points = f"{r.min_effect:g} point{'' if r.min_effect == 1 else 's'}"
    return paragraphs([
        f"Secondary: {lab[v.b]} takes {ratio:.2f}× the rate evaluations of {lab[v.a]}: {more} (threshold "
        f"{r.nfe_ratio:g}×).",
        f"VERDICT (one trained model per method, so this is about these two models; rule: {r.pair}, minimum effect "
        f"{points}, convergence {100 * r.agreement:g}% agreement): {_outcome(v, lab)}"], width=width)


def verdict(v: Verdict, as_trained: Optional[Mapping[str, Any]] = None) -> Rich:
    """The verdict whole: :func:`verdict_table` and :func:`word_verdict`."""
    return join_rich([verdict_table(v, as_trained), word_verdict(v)])


# =========================================================================== the pendulum: tables and sentences
def flow_table(rows: Sequence[Mapping], pair: str = "dopri5") -> Rich:
    """E and NFE per flow and tolerance of ``pair`` (:func:`~.study.flow_rows`), with the fixed-step RK4-classic
    rollout of equal cost."""
    cols = [("rate", "label", "{}"), ("tol", "tol", "{:g}"), ("E adaptive", "error", "{:.2e}"), ("NFE", "nfe", "{}"),
            ("rejected", "n_rejected", "{}"), ("RK4 N_t", "fixed_n_steps", "{}"), ("E RK4, equal cost", "fixed_error", "{:.2e}")]
    return format_table([r for r in rows if r["pair"] == pair], cols, key=("E adaptive",),
                        note=f"{pair}, rtol = atol = tol, over [0, T_data]; E = ‖x(T_data) − exact‖; RK4 N_t = round(NFE / 4)")


def torchdiffeq_table(rows: Sequence[Mapping]) -> Rich:
    """:func:`~.study.torchdiffeq_rows` as a table."""
    cols = [("rate", "label", "{}"), ("tol", "tol", "{:g}"), ("‖ours − torchdiffeq‖", "difference", "{:.1e}"),
            ("E ours", "error", "{:.2e}"), ("E torchdiffeq", "error_torchdiffeq", "{:.2e}"), ("NFE ours", "nfe", "{}"),
            ("NFE torchdiffeq", "nfe_torchdiffeq", "{}")]
    return format_table(rows, cols, key=("‖ours − torchdiffeq‖",),
                        note="dopri5 in both, same rtol = atol; torchdiffeq: its own controller, RMS norm and "
                             "error row (Shampine's), landing on T_data")


def _agreement(rows: Sequence[Mapping]) -> dict:
    """How far :func:`~.study.torchdiffeq_rows`'s two solutions lie apart (what the chapter says of them): the smallest and largest distance in units
    of the tolerance, the least-squares slope of log(distance) on log(tol) over every rate (1 when the distance is
    proportional to the tolerance; NaN over a single tolerance), the decades of tolerance it spans, and the largest
    relative difference of the numbers of evaluations."""
    pts = [(math.log10(r["tol"]), math.log10(r["difference"])) for r in rows if r["difference"] > 0]
    ratios = [r["difference"] / r["tol"] for r in rows]
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    spread = sum((x - mx) ** 2 for x, _ in pts)
    slope = sum((x - mx) * (y - my) for x, y in pts) / spread if spread > 0 else math.nan
    nfe = max(abs(r["nfe"] - r["nfe_torchdiffeq"]) / min(r["nfe"], r["nfe_torchdiffeq"]) for r in rows)
    return dict(lo=min(ratios), hi=max(ratios), slope=slope, decades=max(x for x, _ in pts) - min(x for x, _ in pts),
                nfe=nfe)


def flows_verdict_table(judged: Sequence[Mapping]) -> Rich:
    """The pendulum verdict (:func:`~.study.judge_flows` rows), one ODE-Net a row (its training scheme and Δt_data):
    its class and the ratio it rests on (the columns a phone shows first), its flow's error (the rule's pair at the
    tightest tolerance) and its own graph's."""
    cols = [("ODE-Net (Δt_data)", lambda j: f"{scheme_label(j['trained'])} ({j['dt_data']:g})", "{}"),
            ("class", "klass", "{}"), ("flow / own", lambda j: times(j["ratio"]), "{}"),
            ("E flow", "error_flow", "{:.2e}"), ("E own graph", "error_own", "{:.2e}")]
    j0 = judged[0] if judged else {"tol": 0}
    return format_table(judged, cols, left=2, key=("class", "flow / own"),
                        note=f"E = ‖x(T_data) − exact‖; flow: dopri5 at rtol = atol = {j0['tol']:g}; own graph: the "
                             "training scheme at its Δt_data")


def _flows_outcome(judged: Sequence[Mapping], cfg: PendulumConfig) -> str:
    """Whether the solver tells the Euler-trained ODE-Net from the others trained at the preset's Δt_data, in words
    that follow "the error-controlled solver"."""
    euler = next((j for j in judged if j["trained"] == "euler" and j["dt_data"] == cfg.dt_data), None)
    others = [j for j in judged if j is not euler and j["dt_data"] == cfg.dt_data]
    if euler is not None and euler["klass"] == "discrete" and others and all(j["klass"] == "continuous" for j in others):
        return "tells the Euler-trained ODE-Net from the others"
    if euler is not None and all(j["klass"] == euler["klass"] for j in others):
        return f"does not tell the Euler-trained ODE-Net from the others: all are {euler['klass']}"
    return "gives classes that do not split along the training scheme as the question supposes"


def _flows_tail(judged: Sequence[Mapping], cfg: PendulumConfig) -> str:
    """What the classes say about the question (:func:`_flows_outcome`), and which coarser-data models the solver
    classes discrete."""
    tail = f"at Δt_data = {cfg.dt_data:g} the error-controlled solver {_flows_outcome(judged, cfg)}."
    coarse = [j for j in judged if j["dt_data"] != cfg.dt_data and j["klass"] == "discrete"]
    if coarse:
        tail += (f" At coarser data the solver classes {_by_scheme(coarse)} as discrete too: trained at a larger step, "
                 "a rate absorbs its own scheme's truncation error, whatever the scheme, and its flow is no longer the "
                 "graph it was trained on.")
    return tail


def _by_scheme(judged: Sequence[Mapping]) -> str:
    """ODE-Nets named by training scheme and Δt_data: ``the midpoint-trained ODE-Nets at Δt_data = 0.05 and 0.1 and
    the RK4-trained one at Δt_data = 0.1``."""
    words = {"euler": "Euler", "midpoint": "midpoint", "rk4_38": "RK4", "rk4_classic": "RK4"}
    parts = []
    for scheme in dict.fromkeys(j["trained"] for j in judged):
        steps = [f"{j['dt_data']:g}" for j in judged if j["trained"] == scheme]
        at = steps[0] if len(steps) == 1 else ", ".join(steps[:-1]) + " and " + steps[-1]
        parts.append(f"the {words.get(scheme, scheme)}-trained {'one' if len(steps) == 1 else 'ODE-Nets'} at "
                     f"Δt_data = {at}")
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def word_flows(judged: Sequence[Mapping], cfg: PendulumConfig, rule: PendulumRule = PENDULUM_RULE) -> Rich:
    """The verdict on the flows (:func:`~.study.judge_flows` rows) in one ``VERDICT`` paragraph: whether the solver
    tells the Euler-trained ODE-Net from the others, and which coarser-data models it classes discrete (each
    ODE-Net's numbers and class are :func:`flows_verdict_table`'s)."""
    return paragraphs([f"VERDICT (one trained model per scheme; rule: {rule.pair} at the tightest tolerance, factor "
                       f"{rule.factor:g}): {_flows_tail(judged, cfg)}"], width=92)


# =========================================================================== figures
PAIR_DASH = {"bosh3": "dash", "dopri5": None}
"""How a pair is drawn: Bogacki–Shampine dashed, Dormand–Prince solid."""

CONTROL_DASHES = ("dash", "dot", "dashdot")
"""How the control ODE-Nets (trained at a coarser Δt_data) are drawn, by their Δt_data, coarsest last (dashes a
legend's short sample tells apart; "longdash" looked solid there): a model trained with the same scheme keeps its
colour, and its Δt_data its dash."""


def _flow_color(row: Mapping) -> str:
    return SCHEME_COLORS["exact"] if row["trained"] is None else scheme_color(row["trained"])


def _control_dash(row: Mapping, rows: Sequence[Mapping]):
    """The dash of ``row``'s flow: solid for the true rate and the ODE-Nets trained at the finest Δt_data, else one of
    :data:`CONTROL_DASHES` by its Δt_data."""
    steps = sorted({r["dt_data"] for r in rows if r["dt_data"] is not None})
    if row["dt_data"] is None or row["dt_data"] == steps[0]:
        return None
    return CONTROL_DASHES[(steps.index(row["dt_data"]) - 1) % len(CONTROL_DASHES)]


def fig_flow_errors(rows: Sequence[Mapping], own: Sequence[Mapping], title: str = ""):
    """The pendulum's flows (:func:`~.study.flow_rows`): a slider over the pairs; top, the error E at T_data against
    the tolerance (log–log), each ODE-Net's own-graph error dotted; bottom, the rate evaluations against the tolerance
    with the slope −1/(q + 1) the controller aims at.  One legend entry per flow (its own-graph line goes with it)."""
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


def _model_pair_traces(study: Mapping, value: str, hover) -> tuple:
    """``(rows, traces)``: each model with each pair of the study (``bosh3`` dashed), ``value`` of
    :func:`~.study.adaptive_rows` against the tolerance; ``hover(rows)`` gives ``(customdata, hovertemplate)``."""
    rows = adaptive_rows(study)
    traces = []
    for run in study["runs"]:
        for pair in study["grid"]["pairs"]:
            pts = sorted((r for r in rows if r["run"] == run and r["pair"] == pair), key=lambda r: -r["tol"])
            custom, template = hover(pts)
            y = [percent(r["accuracy"]) if value == "accuracy" else r[value] for r in pts]
            traces.append(go.Scatter(x=[r["tol"] for r in pts], y=y, mode="lines+markers", name=f"{run_label(run)}, {pair}",
                                     line=dict(color=run_color(run), dash=PAIR_DASH.get(pair)), customdata=custom,
                                     hovertemplate=template))
    return rows, traces


def fig_accuracy(study: Mapping, title: str = ""):
    """Accuracy against the tolerance (log axis, tighter to the right) of each model with each pair (``bosh3``
    dashed); dotted, each model's accuracy on its own graph."""
    rows, traces = _model_pair_traces(study, "accuracy", lambda pts: (
        [[r["changed"], r["nfe"]] for r in pts],
        "tol %{x:g}: accuracy %{y:.2f}%<br>%{customdata[0]:.1f}% of the classes changed from its own graph; "
        "NFE %{customdata[1]:.1f}"))
    fig = go.Figure(traces)
    for run in study["runs"]:
        own = next(r for r in rows if r["run"] == run and r["pair"] is None)
        fig.add_hline(y=percent(own["accuracy"]), line_dash="dot", line_color=run_color(run), line_width=1)
    book_layout(fig, title or "Accuracy with adaptive steps (dotted: each model's own graph)", "rtol = atol",
                ACCURACY_TITLE, height=480, legend_below=True)
    fig.update_xaxes(type="log", autorange="reversed")
    return log_ticks(fig)


def fig_nfe(study: Mapping, title: str = ""):
    """Rate evaluations per image's forward pass against the tolerance (log–log, tighter to the right), each
    model with each pair; dotted, each model's own graph."""
    rows, traces = _model_pair_traces(study, "nfe", lambda pts: (
        [[" / ".join(f"{v:.1f}" for v in r["nfe_blocks"]), r["rejected"]] for r in pts],
        "tol %{x:g}: NFE %{y:.1f} (per block %{customdata[0]})<br>rejected steps per batch %{customdata[1]:.1f}"))
    fig = go.Figure(traces)
    for run in study["runs"]:
        own = next(r for r in rows if r["run"] == run and r["pair"] is None)
        fig.add_hline(y=own["nfe"], line_dash="dot", line_color=run_color(run), line_width=1)
    book_layout(fig, title or "Rate evaluations per image (dotted: own graph)", "rtol = atol", "NFE per image",
                height=480, legend_below=True)
    loglog_style(fig)
    fig.update_xaxes(autorange="reversed")
    return fig


def _block_axes(b: int) -> dict:
    return {} if b == 0 else dict(xaxis=f"x{b + 1}", yaxis=f"y{b + 1}")


def fig_step_positions(study: Mapping, pair: str = "dopri5", title: str = ""):
    """Where the accepted steps of ``pair`` end in depth-time t/T, one panel per block (stacked), a slider over
    the tolerances: per bin of 1/:data:`~.study.BINS`, the steps ending there per batch, each model in its colour;
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
                        static_traces=static, height=180 * n_blocks + 140)
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


# =========================================================================== the live app
LIVE_TOLERANCES = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6)
"""The tolerances the live app offers (rtol = atol)."""


def _grid_traces(grids, stats, color: str) -> list:
    """One marker trace per block: the accepted step ends (t/T) of one batch at height ``block``."""
    out = []
    for b, ts in enumerate(grids):
        out.append(go.Scatter(x=list(ts), y=[b + 1] * len(ts), mode="markers+lines", line=dict(color=color, width=1),
                              marker=dict(color=color, size=8, symbol="line-ns-open", line=dict(width=2)),
                              name=f"block {b + 1}: {stats[b]}", hovertemplate="t/T = %{x:.4f}"))
    return out


def fig_step_explorer(study: Mapping, title: str = ""):
    """The static counterpart of :func:`live_app`: a menu over model and pair, a slider over the study's tolerances,
    and for each the accepted steps of the first batch in every block (one row per block; the legend gives each
    block's NFE and rejected steps, per image and batch)."""
    frames = {}
    for run, res in study["runs"].items():
        for pair in study["grid"]["pairs"]:
            steps = {}
            for r in (r for r in res["rows"] if r["kind"] == "adaptive" and r["pair"] == pair):
                nfe = mean_nfe(r)
                rejected = [sum(batch[b] for batch in r["rejected"]) / len(r["rejected"]) for b in range(len(nfe))]
                stats = [f"NFE {n:.1f}, rejected {j:.1f}" for n, j in zip(nfe, rejected)]
                steps[f"{r['rtol']:g}"] = _grid_traces(r["first_grid"], stats, run_color(run))
            frames[f"{run_label(run)}, {pair}"] = steps
    fig = dropdown_slider_figure(frames, title=title or "Accepted steps of the first batch, per block",
                                 slider_prefix="rtol = atol = ", xaxis_title="depth-time t/T", yaxis_title="block",
                                 height=480)
    fig.update_yaxes(dtick=1, range=[0.5, len(next(iter(study["runs"].values()))["graph"]) + 0.5])
    fig.update_xaxes(range=[-0.02, 1.02])
    return fig


def live_app(runs: Mapping[str, StudyRun], static_fallback_fig, device=None, n_images: Optional[int] = None):
    """A live app (model, pair, tolerance): evaluates the trained model with adaptive steps (:func:`~.study.evaluate`)
    on the first ``n_images`` held-out images (default :func:`cnet_lib.images.live_images` of the preset) on
    ``device`` (default: the session's) in batches of the study's size, and shows the first batch's accepted steps per
    block with the accuracy, the share of classes unchanged from the model's own graph and the rate evaluations per
    image; ``static_fallback_fig`` (:func:`fig_step_explorer`) stands in for it in the static book."""
    check_study_inputs(runs, n_images)
    first = next(iter(runs.values()))
    dev = study_device(first, device)
    data, x, y, note = app_data(first, dev, n_images or live_images(first.config.preset))
    grid = adaptive_grid(first.config.preset)
    batch = grid["batch_size"]
    own = {}
    for name, r in runs.items():
        r.model.to(dev).eval()
        own[name] = decode_predictions(evaluate(r.model, x, y, data.mean, data.std, batch, adaptive=False)["pred"])

    def render(model, pair, tol):
        t0 = time.perf_counter()
        with runs[model].model.manifested(pair, rtol=tol, atol=tol):
            row = evaluate(runs[model].model, x, y, data.mean, data.std, batch, adaptive=True)
        same = (decode_predictions(row["pred"]) == own[model]).float().mean().item()
        per_block = mean_nfe(row)
        fig = go.Figure(_grid_traces(row["first_grid"], [f"{a} accepted, {j} rejected"
                                                         for a, j in zip(row["accepted"][0], row["rejected"][0])],
                                     run_color(model)))
        book_layout(fig, f"{run_label(model)}, {pair}, rtol = atol = {tol:g}: accuracy {row['accuracy']:.4f} on {len(y)} "
                         f"images, {100 * same:.1f}% of the classes as on its own graph; NFE per image "
                         f"{' / '.join(f'{v:.1f}' for v in per_block)} ({time.perf_counter() - t0:.1f} s)",
                    "depth-time t/T (accepted steps of the first batch)", "block", height=360, legend_below=True)
        fig.update_yaxes(dtick=1, range=[0.5, len(per_block) + 0.5])
        fig.update_xaxes(range=[-0.02, 1.02])
        return below_modebar(fig, grow=True)

    return _live_app(
        {"model": Choice([(r.label, k) for k, r in runs.items()], description="model"),
         "pair": Choice(list(grid["pairs"]), grid["pairs"][-1], "pair"),
         "tol": Steps([(f"{t:g}", t) for t in LIVE_TOLERANCES], 1e-3, "rtol = atol")},
        render, static_fallback_fig, title="Adaptive steps in a trained ContinuousNet" + note)


# =========================================================================== the numbers the prose quotes
def facts(*, checked: Optional[Sequence[Mapping]] = None, judged: Optional[Sequence[Mapping]] = None,
          cfg: Optional[PendulumConfig] = None, rule: PendulumRule = PENDULUM_RULE, study: Optional[Mapping] = None,
          verdict: Optional[Verdict] = None, runs: Optional[Mapping[str, StudyRun]] = None) -> dict:
    """The numbers the chapter's prose states, ``{name: text}``, written as the prose says them, from what the chapter
    has just computed, given by keyword: ``checked`` (:func:`~.study.torchdiffeq_rows`): ``td_lo, td_hi, td_slope,
    td_decades`` (with its word: ``6 decades``), ``td_nfe``; ``judged`` with ``cfg`` (:func:`~.study.judge_flows`, by
    ``rule``): ``flow_<name>`` (flow over own graph) and ``class_<name>`` of every ODE-Net (``<name>`` its scheme, and
    ``_<Δt_data without its point>`` for a coarser-data one: ``flow_midpoint_005``), ``dt_data``, and the rule's
    ``pend_factor`` and ``pend_converged``;
    ``study`` (:func:`~.study.run`): ``ad_n``, ``ad_batch``, ``ad_tols``, where and when it was computed and in what
    arithmetic (``ad_ran_on``, ``ad_date``, ``ad_precision``, from its record) and, with ``runs``, ``ad_own_<run>`` and
    ``ad_trained_<run>`` (accuracy on the study's images and as trained); ``verdict`` (:func:`~.study.judge`): per
    model ``<run>_class, _drop, _loss, _lo, _hi, _changed, _nfe, _own_nfe``, ``ad_tol`` and its rule's
    ``ad_min_effect`` (points) and ``ad_unconverged`` (the share of changed classes that counts as not converged).
    A chapter glues them (``glue_all(adaptive.facts(...))``) and its prose quotes them."""
    out: dict = {}
    if checked is not None:
        a = _agreement(checked)
        decades = round(a["decades"])
        out.update(td_lo=f"{a['lo']:.0f}", td_hi=f"{a['hi']:,.0f}", td_slope=f"{a['slope']:.2f}",
                   td_decades=f"{decades} decade{'' if decades == 1 else 's'}", td_nfe=f"{100 * a['nfe']:.0f}%")
    if judged is not None:
        if cfg is None:
            raise TypeError("facts(judged=...) needs cfg, the pendulum's configuration")
        for j in judged:
            coarse = "" if j["dt_data"] == cfg.dt_data else "_" + f"{j['dt_data']:g}".replace(".", "")
            out[f"flow_{j['trained']}{coarse}"] = times(j["ratio"])
            out[f"class_{j['trained']}{coarse}"] = j["klass"]
        out.update(dt_data=f"{cfg.dt_data:g}", pend_factor=f"{rule.factor:g}", pend_converged=f"{100 * rule.converged:g}%")
    if study is not None:
        out.update(ad_n=f"{study['n']:,}", ad_batch=f"{study['grid']['batch_size']:,}",
                   ad_tols=", ".join(sci(t, None) for t in study["grid"]["tolerances"]), ad_ran_on=ran_on(study),
                   ad_date=(study.get("created_utc") or "")[:10] or "an unrecorded date", ad_precision=precision(study))
        if runs is not None:
            for r in (r for r in adaptive_rows(study) if r["pair"] is None):
                out[f"ad_own_{r['run']}"] = f"{100 * r['accuracy']:.1f}%"
                if r["run"] in runs:
                    out[f"ad_trained_{r['run']}"] = f"{100 * runs[r['run']].final_accuracy:.1f}%"
    if verdict is not None:
        for name, c in verdict.classes.items():
            out.update({f"{name}_class": c.klass, f"{name}_drop": minus_sign(f"{c.drop:+.2f}"),
                        f"{name}_loss": f"{abs(c.drop):.2f}", f"{name}_lo": minus_sign(f"{c.ci95[0]:+.2f}"),
                        f"{name}_hi": minus_sign(f"{c.ci95[1]:+.2f}"), f"{name}_changed": f"{c.changed:.1f}%",
                        f"{name}_nfe": f"{c.nfe_adaptive:.0f}", f"{name}_own_nfe": f"{c.nfe_own:.0f}"})
        r = verdict.rule
        out.update(ad_tol=sci(verdict.classes[verdict.a].tol, None), ad_min_effect=f"{r.min_effect:g}",
                   ad_unconverged=f"{100 * (1 - r.agreement):.3g}%")
    return out
