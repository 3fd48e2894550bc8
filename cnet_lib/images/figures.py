"""Figures and live apps of the image chapters (figures layer).

The numbers come from the image study (:mod:`~cnet_lib.images.runs`, :mod:`~cnet_lib.images.study`,
:mod:`~cnet_lib.images.theta`, :mod:`~cnet_lib.images.robustness`); this module only draws them with
plotly from precomputed values, so that sliders and menus work in the static book, and describes
the live apps, which :func:`cnet_lib.book.widgets.live_app` turns into widgets.  Colours and
labels come from :mod:`cnet_lib.runtime.vocabulary`.
"""
from __future__ import annotations

import copy
import math
import time
from typing import Mapping, Sequence

import torch

from ..book.plotting import LEGEND_BELOW, book_layout, dropdown_slider_figure, line, slider_figure
from ..book.widgets import Choice, IntRange, Steps, live_app
from ..core.bases import basis_names, make_basis
from ..runtime.device import resolve_device
from ..runtime.tables import find_row
from ..runtime.vocabulary import SERIES_COLORS, basis_label, run_color, run_dash, run_label, run_pattern, scheme_color
from .checks import check_study_inputs
from .data import normalize
from .evaluation import Evaluator, evaluate, model_dtype
from .presets import sweep_grid
from .perturbations import float_format_copy, input_noise, perturb_coefficients, quantize_theta, quantize_weights
from .robustness import condition_name, summarise
from .runs import StudyRun, study_data
from .theta import stage_table, theta_curve

__all__ = [
    "fig_basis_functions",
    "fig_theta_bases",
    "fig_training_curves",
    "fig_theta_refinement",
    "fig_manifestations",
    "fig_accuracy_vs_nt",
    "fig_sweep_explorer",
    "live_sweep_app",
    "fig_weight_noise",
    "fig_quantization",
    "fig_input_noise",
    "fig_drops",
    "fig_robustness_explorer",
    "live_robustness_app",
]


def _go():
    import plotly.graph_objects as go

    return go


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
    """Three stacked panels against the epoch (test accuracy, training loss, seconds per epoch), one
    colour per run (:func:`run_color`); refinement epochs marked by dotted lines (said in the title);
    the legend below the panels, clear of the title and the panels' titles."""
    from plotly.subplots import make_subplots

    go = _go()
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("test accuracy", "training loss", "seconds per epoch (training only)"))
    for name, run in runs.items():
        h = run.history
        col = run_color(name)
        ep = [r["epoch"] for r in h]
        nts = [str(r["n_steps"]) for r in h]
        for row, key in ((1, "test_acc"), (2, "train_loss"), (3, "train_seconds")):
            fig.add_trace(go.Scatter(x=ep, y=[r[key] for r in h], name=run.label, legendgroup=name,
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
    fig.update_xaxes(dtick=1)
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
        if b.get("gain") is not None:
            t, v = theta_curve(b["gain"], b["basis"])
            traces.append(line(t, v, name="s(t) (skip gain)", color="black", dash="dot"))
        tag = "init" if snap["epoch"] == 0 else f"epoch {snap['epoch']}"
        frames[f"{tag}, M={b['n_basis']}" + (" (refined)" if snap.get("refined") else "")] = traces
        prev = b
    return slider_figure(frames, active=len(frames) - 1, slider_prefix="",
                         static_traces=_line_styles(("after the epoch", None), ("the epoch before", "dash")),
                         title=title or f"θ(t) of OdeBlock {block + 1} after each epoch",
                         xaxis_title="t (depth time)", yaxis_title="θ(t), s(t)")


def fig_manifestations(n_basis: int, manifestations: Sequence[tuple[str, int]], basis: str = "piecewise_constant",
                       title: str = ""):
    """Where each manifestation (scheme, N_t) evaluates R on one θ(t): one row per manifestation,
    one marker per stage evaluation at its time t, coloured by the piece β it reads (legend: one
    entry per piece); the piece boundaries of θ(t) are dotted."""
    go = _go()
    fig = go.Figure()
    labels = [f"{s}, N_t={n}" for s, n in manifestations]
    for lab, (s, n) in zip(labels, manifestations):
        rows = stage_table(s, n, n_basis, basis)
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


def fig_accuracy_vs_nt(sweeps: Mapping[str, Sequence[dict]], title: str = ""):
    """The paper's Fig. 4: one panel per trained model, test accuracy against N_t for each inference
    scheme, the trained graph as a star, compressed θ as open diamonds, and the blocks-as-identity
    accuracy as a dashed line."""
    from plotly.subplots import make_subplots

    go = _go()
    names = list(sweeps)
    fig = make_subplots(rows=1, cols=len(names), shared_yaxes=True, subplot_titles=[run_label(n) for n in names])
    shown = set()
    for c, name in enumerate(names, 1):
        rows = sweeps[name]
        manif = [r for r in rows if r["kind"] == "manifestation"]
        for s in dict.fromkeys(r["scheme"] for r in manif):
            rs = sorted((r for r in manif if r["scheme"] == s), key=lambda r: r["n_steps"])
            fig.add_trace(go.Scatter(x=[r["n_steps"] for r in rs], y=[r["accuracy"] for r in rs], mode="lines+markers",
                                     name=s, legendgroup=s, showlegend=s not in shown,
                                     line=dict(color=scheme_color(s)), customdata=[r["units"] for r in rs],
                                     hovertemplate=f"{s}<br>N_t=%{{x}}<br>accuracy=%{{y:.4f}}<br>units=%{{customdata}}"),
                          row=1, col=c)
            shown.add(s)
        tr = find_row(rows, kind="trained")
        fig.add_trace(go.Scatter(x=[tr["n_steps"]], y=[tr["accuracy"]], mode="markers", name="trained graph",
                                 legendgroup="trained", showlegend="trained" not in shown,
                                 marker=dict(symbol="star", size=15, color="black")), row=1, col=c)
        shown.add("trained")
        comp = [r for r in rows if r["kind"] == "compressed"]
        for s in dict.fromkeys(r["scheme"] for r in comp):
            rs = sorted((r for r in comp if r["scheme"] == s), key=lambda r: r["n_basis"])
            key = f"compressed {s}"
            fig.add_trace(go.Scatter(x=[r["n_steps"] for r in rs], y=[r["accuracy"] for r in rs], mode="markers",
                                     name=f"θ compressed to M = N_t, {s}", legendgroup=key, showlegend=key not in shown,
                                     marker=dict(symbol="diamond-open", size=12, color=scheme_color(s))),
                          row=1, col=c)
            shown.add(key)
        ident = find_row(rows, kind="identity")
        if ident is not None:
            fig.add_hline(y=ident["accuracy"], line_dash="dash", line_color="gray", row=1, col=c,
                          annotation_text=f"blocks removed: {ident['accuracy']:.3f}", annotation_position="bottom right")
    fig.update_xaxes(type="log", title_text="N_t (steps per OdeBlock)")
    fig.update_yaxes(title_text="test accuracy", col=1)
    fig.update_layout(title=title or "One trained θ(t), many graphs: accuracy against N_t and the inference scheme",
                      template="plotly_white", height=520, legend=LEGEND_BELOW, margin=dict(b=120))
    return fig


def fig_sweep_explorer(sweeps: Mapping[str, Sequence[dict]], title: str = ""):
    """Static counterpart of the live app: choose the scheme (menu) and N_t (slider); bars give each
    model's accuracy with the full θ and, where swept, with θ compressed to M = N_t; black
    markers the trained graph, grey markers the blocks-as-identity accuracy."""
    go = _go()
    names = list(sweeps)
    labels = [run_label(n) for n in names]
    schemes = list(dict.fromkeys(r["scheme"] for rows in sweeps.values() for r in rows if r["kind"] == "manifestation"))
    nts = sorted({r["n_steps"] for rows in sweeps.values() for r in rows if r["kind"] == "manifestation"})

    def acc(rows, kind, s, n):
        r = next((r for r in rows if r["kind"] == kind and r["scheme"] == s and r["n_steps"] == n), None)
        return None if r is None else r["accuracy"]

    frames = {}
    for s in schemes:
        frames[s] = {}
        for n in nts:
            full = [acc(sweeps[k], "manifestation", s, n) for k in names]
            comp = [acc(sweeps[k], "compressed", s, n) for k in names]
            traces = [go.Bar(x=labels, y=full, name=f"{s}, N_t = {n}", marker_color=scheme_color(s),
                             text=[f"{v:.3f}" if v is not None else "" for v in full], textposition="outside")]
            if any(v is not None for v in comp):
                traces.append(go.Bar(x=labels, y=comp, name=f"θ compressed to M = {n}", marker_color="#bbbbbb",
                                     text=[f"{v:.3f}" if v is not None else "" for v in comp], textposition="outside"))
            frames[s][n] = traces
    static = [go.Scatter(x=labels, y=[find_row(sweeps[k], kind="trained")["accuracy"] for k in names], mode="markers",
                         name="trained graph", marker=dict(symbol="star", size=14, color="black")),
              go.Scatter(x=labels, y=[find_row(sweeps[k], kind="identity")["accuracy"] for k in names], mode="markers",
                         name="blocks removed", marker=dict(symbol="line-ew-open", size=40, color="gray", line=dict(width=3)))]
    fig = dropdown_slider_figure(frames, static_traces=static, title=title or "Accuracy of each trained model on a chosen graph",
                                 dropdown_prefix="scheme: ", slider_prefix="N_t = ", yaxis_title="test accuracy")
    fig.update_layout(barmode="group", yaxis_range=[0, 1.05])
    return fig


def live_sweep_app(runs: Mapping[str, StudyRun], static_fallback_fig, device=None, n_images: int = 1000, n_show: int = 12):
    """A live app (model, scheme, N_t, compression) that evaluates the trained model on test
    images on ``device`` (default: the model's) and shows a few of them with their predicted class."""
    check_study_inputs(runs, n_images, n_show)
    go = _go()
    first = next(iter(runs.values()))
    dev = resolve_device(device) if device is not None else next(first.model.parameters()).device
    data = study_data(first.config, dev, with_train=False)
    x, y = data.test_x[:n_images], data.test_y[:n_images]
    grid = sweep_grid(first.config.preset)
    max_m = max(b.n_basis for r in runs.values() for b in r.model.blocks)
    comp_opts = [("none (trained θ)", 0)] + [(f"M = {m}", m) for m in sorted(set(grid.get("compress", ())) | {1, 2, 4}) if m < max_m]

    def render(model, scheme, n_steps, compress):
        run = runs[model]
        m = run.model.to(dev)
        if compress:
            m = copy.deepcopy(m).project(compress)
        t0 = time.perf_counter()
        with m.manifested(scheme, int(n_steps)):
            acc, _ = evaluate(m, x, y, data.mean, data.std, amp=run.config.amp)
            with torch.no_grad():
                pred = m(normalize(x[:n_show], data.mean, data.std).to(model_dtype(m))).argmax(1).cpu().tolist()
        sec = time.perf_counter() - t0
        imgs = x[:n_show].cpu()
        fig = go.Figure()
        cols = min(n_show, 6)
        from plotly.subplots import make_subplots

        fig = make_subplots(rows=math.ceil(n_show / cols), cols=cols, horizontal_spacing=0.01, vertical_spacing=0.08,
                            subplot_titles=[f"{'✓' if p == t else '✗'} {data.classes[p]}" for p, t in zip(pred, y[:n_show].cpu().tolist())])
        for i in range(n_show):
            fig.add_trace(go.Image(z=imgs[i].permute(1, 2, 0).numpy()), row=i // cols + 1, col=i % cols + 1)
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        ident = compress and f"θ compressed to M = {compress}, " or ""
        fig.update_layout(title=f"{run_label(model)}: {ident}{scheme}, N_t = {n_steps}: accuracy {acc:.4f} on {len(y)} test "
                                f"images ({sec:.2f} s on {dev.type}); predicted classes of the first {n_show}",
                          height=330, margin=dict(t=90, l=10, r=10, b=10))
        return fig

    schemes = list(grid["schemes"])
    return live_app(
        {"model": Choice([(r.label, k) for k, r in runs.items()], description="model"),
         "scheme": Choice(schemes, schemes[-1], "scheme"),
         "n_steps": IntRange(1, max(grid["n_steps"]), max(grid["n_steps"]) // 2 or 1, "N_t"),
         "compress": Choice(comp_opts, 0, "compress")},
        render, static_fallback_fig, title="Evaluate a trained ContinuousNet on any graph")


# --------------------------------------------------------------------------- robustness (beyond the paper)
def _level_name(kind: str, level) -> str:
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
    go = _go()
    fig = go.Figure()
    for label, conds in study.items():
        rows = summarise(conds)
        noise = sorted((r for r in rows if r["kind"] == "weight_noise"), key=lambda r: r["level"])
        clean = next(r for r in rows if r["kind"] == "clean")["accuracy"]
        col = run_color(label)
        fig.add_trace(go.Scatter(
            x=[r["level"] for r in noise], y=[r["accuracy"] for r in noise], mode="lines+markers",
            name=run_label(label), line=dict(color=col, dash=run_dash(label)),
            error_y=dict(type="data", symmetric=False, array=[r["max"] - r["accuracy"] for r in noise],
                         arrayminus=[r["accuracy"] - r["min"] for r in noise]),
            customdata=[r["seeds"] for r in noise],
            hovertemplate="σ = %{x}<br>accuracy %{y:.4f} (mean of %{customdata} seeds)"))
        fig.add_hline(y=clean, line_dash="dot", line_color=col, line_width=1)
    book_layout(fig, title or "Accuracy under noise on the weights θ̂ (dotted: clean)",
                "relative weight noise σ (‖noise‖ = σ‖θ̂‖ per tensor)", "test accuracy", height=500, legend_below=True)
    sigmas = sorted({c.level for conds in study.values() for c in conds if c.kind == "weight_noise"})
    fig.update_xaxes(type="log", tickvals=sigmas, ticktext=[f"{s:g}" for s in sigmas])
    return fig


def fig_quantization(study, title: str = ""):
    """Accuracy with the weights stored in float32 (clean), bf16 and float16 (every parameter), and in
    8 and 4 bits by each quantization scheme (θ̂ only; every weight), one group of bars per format; the
    hover gives the model's size in bytes."""
    go = _go()
    fig = go.Figure()

    def order(r):
        if r["kind"] == "clean":
            return (0, 0)
        return (1 + STORAGE_KINDS.index(r["kind"]), -r["level"] if isinstance(r["level"], int) else 0)

    for label, conds in study.items():
        rows = sorted((r for r in summarise(conds) if r["kind"] in ("clean",) + STORAGE_KINDS), key=order)
        names = ["float32" if r["kind"] == "clean" else _level_name(r["kind"], r["level"]) for r in rows]
        fig.add_trace(go.Bar(x=names, y=[r["accuracy"] for r in rows], name=run_label(label),
                             marker=dict(color=run_color(label), pattern_shape=run_pattern(label)),
                             text=[f"{r['accuracy']:.3f}" for r in rows],
                             textposition="outside", customdata=[r["bytes"] for r in rows],
                             hovertemplate="%{x}: accuracy %{y:.4f}<br>%{customdata} bytes"))
    book_layout(fig, title or "Weights rounded after training (integers: symmetric, per output channel)",
                "weights stored as", "test accuracy", height=500, legend_below=True)
    fig.update_layout(barmode="group", yaxis_range=[0, 1.05])
    return fig


def fig_input_noise(study, title: str = ""):
    """Accuracy against Gaussian input noise τ (normalised pixel units), with each model's blocks
    removed (dotted) for scale; a model on another graph dashed."""
    go = _go()
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
            fig.add_trace(go.Scatter(x=[r["level"] for r in pts], y=[r["accuracy"] for r in pts], mode="lines+markers",
                                     name=run_label(label) + suffix, line=dict(color=col, dash=dash)))
    book_layout(fig, title or "Accuracy under Gaussian noise on the input images", "input noise τ (normalised pixel units)",
                "test accuracy", height=520, legend_below=True)
    return fig


def fig_drops(judgement, title: str = ""):
    """The verdict's numbers as horizontal bars: per perturbation (one row each, the primary test at
    the top and marked), the points each model loses from its own clean accuracy; a ``*`` after a
    secondary condition whose difference is significant (Holm within its family); the paired
    difference and both p-values in the hover."""
    go = _go()
    j = judgement
    rows = [r for r in j.rows if r["role"] != "unmeasured"]
    names = [("PRIMARY: " if r["role"] == "primary" else "") + _level_name(r["kind"], r["level"])
             + (" *" if r["significant"] and r["role"] != "primary" else "") for r in rows]
    detail = [f"difference {r['diff']:+.2f} [{r['ci95'][0]:+.2f}, {r['ci95'][1]:+.2f}] points, p = {r['p']:.2g}"
              + ("" if r["role"] == "primary" else f", Holm p = {r['p_holm']:.2g} ({r['family']})") for r in rows]
    fig = go.Figure()
    for who, key in ((j.a, "drop_a"), (j.b, "drop_b")):
        fig.add_trace(go.Bar(y=names, x=[r[key] for r in rows], name=run_label(who), marker_color=run_color(who),
                             orientation="h", customdata=detail,
                             hovertemplate="%{y}: loses %{x:.2f} points<br>%{customdata}"))
    book_layout(fig, title or "Points lost to each perturbation (* significant, secondary)", "accuracy lost (points)",
                "", height=160 + 44 * len(rows), legend_below=True)
    fig.update_layout(barmode="group")
    fig.update_yaxes(autorange="reversed", automargin=True)
    return fig


def fig_robustness_explorer(study, title: str = ""):
    """The static counterpart of :func:`live_robustness_app`: a slider over every measured
    perturbation, and for each model and graph its clean and perturbed accuracy (mean over seeds)."""
    go = _go()
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
            traces.append(go.Bar(x=["clean", "perturbed"], y=[clean, hit["accuracy"]], name=run_label(label),
                                 marker=dict(color=run_color(label), pattern_shape=run_pattern(label)), showlegend=True,
                                 text=[f"{clean:.3f}", f"{hit['accuracy']:.3f}"], textposition="outside"))
        frames[_level_name(kind, level)] = traces
    fig = slider_figure(frames, title=title or "Clean and perturbed accuracy of each model", slider_prefix="",
                        yaxis_title="test accuracy", height=480)
    fig.update_layout(barmode="group", yaxis_range=[0, 1.1])
    return fig


def live_robustness_app(runs: Mapping[str, StudyRun], static_fallback_fig, grid: Mapping, device=None,
                        n_images: int = 1000):
    """A live app (model, σ, weight format, scheme, N_t, input noise): evaluates the perturbed model on
    the first ``n_images`` test images and compares it with the clean model on the same images."""
    check_study_inputs(runs, n_images)
    go = _go()
    first = next(iter(runs.values()))
    dev = resolve_device(device) if device is not None else next(first.model.parameters()).device
    data = study_data(first.config, dev, with_train=False)
    x, y = data.test_x[:n_images], data.test_y[:n_images]
    ev = Evaluator()
    sweep = sweep_grid(first.config.preset)

    def render(model, sigma, fmt, scheme, n_steps, noise):
        base = runs[model].model.to(dev)
        m = perturb_coefficients(base, sigma, 0) if sigma else base
        if fmt in ("bf16", "fp16"):
            m = float_format_copy(m, fmt)
        elif fmt != "float32":
            scope, bits = fmt.split()
            m = (quantize_theta if scope == "theta" else quantize_weights)(m, int(bits))
        with base.manifested(scheme, int(n_steps)), m.manifested(scheme, int(n_steps)):
            clean = ev.correct(base, x, y, data.mean, data.std)[0].double().mean().item()
            hit = ev.correct(m, x, y, data.mean, data.std, transform=input_noise(noise, 0) if noise else None)[0]
        acc = hit.double().mean().item()
        fig = go.Figure(go.Bar(x=["clean", "perturbed"], y=[clean, acc], text=[f"{clean:.3f}", f"{acc:.3f}"],
                               textposition="outside", marker_color=["#888888", run_color(model)]))
        stored = fmt if fmt in ("float32", "bf16", "fp16") else condition_name(f"quantized_{fmt.split()[0]}", int(fmt.split()[1]))
        fig.update_layout(title=f"{run_label(model)}, {scheme} N_t = {n_steps}: σ = {sigma:g}, {stored}, input noise "
                                f"τ = {noise:g} → {100 * (clean - acc):+.1f} points lost on {len(y)} images",
                          yaxis_range=[0, 1.1], yaxis_title="test accuracy", template="plotly_white", height=380)
        return fig

    schemes = list(sweep["schemes"])
    return live_app(
        {"model": Choice([(r.label, k) for k, r in runs.items()], description="model"),
         "sigma": Steps([0.0] + [float(s) for s in grid["sigmas"]], 0.0, "σ"),
         "fmt": Choice([("float32", "float32"), ("bf16", "bf16"), ("fp16", "fp16")]
                       + [(condition_name(f"quantized_{scope}", b), f"{scope} {b}") for scope in ("theta", "weights")
                          for b in (8, 4)], "float32", "weights"),
         "scheme": Choice(schemes, first.model.blocks[0].scheme.name, "scheme"),
         "n_steps": IntRange(1, max(sweep["n_steps"]), first.model.blocks[0].n_steps, "N_t"),
         "noise": Steps([0.0] + [float(t) for t in grid["input_noise"]], 0.0, "input τ")},
        render, static_fallback_fig, title="Perturb a trained ContinuousNet")
