"""The manifestation study shown: its tables and sentences, its figures and its live app.  The numbers are
:mod:`.study`'s; nothing here measures anything.

* one sweep (:func:`sweep_table`), every model's (:func:`sweeps_table`) and in brief (:func:`summary_table`); rows like
  the paper's Table 1 (:func:`table1_table`);
* the verdict of one pair of models (:func:`word_verdict`), over training seeds (:func:`contrast_table`,
  :func:`word_contrast`), and integrator × refinement (:func:`factorial_table`, :func:`word_factorial`);
* accuracy against N_t (:func:`fig_accuracy_vs_nt`), the sweep to explore in a static page (:func:`fig_sweep_explorer`)
  and the live app that evaluates a model on the graph the reader picks (:func:`live_app`);
* the numbers the chapter's prose quotes, as it writes them (:func:`facts`).
"""
from __future__ import annotations

import copy
import math
import re
import time
from typing import Mapping, Optional, Sequence

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ...images.runs.image_presets import live_images, sweep_grid
from ...images.runs.run_loading import StudyRun, study_device
from ...images.training.evaluation import Evaluator
from ...draw.plotting import ACCURACY_TITLE, LEGEND_BELOW, dropdown_slider_figure, percent
from ...draw.progressive import Estimate, Progressive, estimate_from, follow_text, quick_size, sweep_answer
from ...draw.widgets import (Choice, IntRange, app_data, evaluate_in_chunks, live_app as _live_app, predicted_titles,
    thumbnails)
from ...runtime.rich_text import (Rich, find_row, format_table, heading, join_rich, minus_sign, p_value, paragraphs, run_label,
                                  scheme_color, scheme_label, seeds_phrase, spread_cell)
from ..runner import check_study_inputs
from ..stats import spread
from .study import CELLS, Factorial, KEEP_POINTS, SeedContrast, Verdict, judge, sweep_images, worst_loss

__all__ = ["KIND_WORDS", "word_verdict", "sweep_table", "sweeps_table", "summary_table", "table1_table",
           "contrast_table", "word_contrast", "factorial_table", "word_factorial", "fig_accuracy_vs_nt",
           "fig_sweep_explorer", "live_app", "swept_images", "facts"]

KIND_WORDS = {
    "trained": "its own graph",
    "valid": "steps aligned with θ's pieces, order ≥ the training scheme's, N_t ≥ the trained N_t",
    "straddles": "steps that cross θ's jumps",
    "coarser": "fewer steps than the trained graph",
    "lower order": "a scheme of lower order than the training scheme",
}
"""Each kind in words, for the tables' notes and the sentences."""


# --------------------------------------------------------------------------- the sweeps in tables and words
def _points(x: float) -> str:
    """Points to one decimal, with no minus sign on a loss that rounds to zero."""
    return f"{round(x, 1) + 0.0:.1f}"


def word_verdict(v: Verdict, n_test: Optional[int] = None, preset: Optional[str] = None) -> Rich:
    """Sentences that state what :func:`.study.judge` found, quoting the
    numbers (``n_test`` held-out images, of ``preset``), as paragraphs; the VERDICT set apart in a notebook."""
    return paragraphs(_sweep_sentences(v, n_test, preset))


def _sweep_sentences(v: Verdict, n_test: Optional[int], preset: Optional[str]) -> list:
    pts = lambda a: 100.0 * a  # noqa: E731
    th = v.thresholds
    s: list[str] = []
    where = f" (preset {preset})" if preset else ""
    if n_test:
        s.append(f"These accuracies{where} are measured on {n_test:,} held-out images: one image is "
                 f"{100.0 / n_test:.2f} points, and the sampling error of an accuracy near 50% is about "
                 f"±{100 * math.sqrt(0.25 / n_test):.1f} points.")
    for name in (v.euler, v.rk4):
        tr, ident = find_row(v.rows[name], kind="trained"), find_row(v.rows[name], kind="identity")
        s.append(f"{run_label(name)}: {pts(tr['accuracy']):.1f}% on its own graph ({tr['scheme']}, N_t = "
                 f"{tr['n_steps']}), {pts(ident['accuracy']):.1f}% with every OdeBlock replaced by the identity: the "
                 f"blocks are worth {v.gaps[name]:.1f} points.")
    if not v.blocks_matter:
        weak = [run_label(n) for n, g in v.gaps.items() if g < th["matter_points"]]
        s.append(f"VERDICT: the blocks do not matter enough ({', '.join(weak)}: removing them costs less than "
                 f"{th['matter_points']:g} points). Whatever the sweep shows, flat curves here would only mean blocks "
                 "that do little; these numbers cannot show manifestation invariance, nor its absence.")
        return s
    for name in (v.euler, v.rk4):
        loss, worst = worst_loss(v.rows[name], "valid", v.basis)
        if worst is not None:
            s.append(f"{run_label(name)} on its valid graphs ({KIND_WORDS['valid']}): worst {worst['scheme']} at "
                     f"N_t = {worst['n_steps']}, {_points(loss)} points below its own graph.")
        else:
            s.append(f"{run_label(name)}: the sweep has no valid graph ({KIND_WORDS['valid']}).")
    cross = {name: worst_loss(v.rows[name], "straddles", v.basis) for name in (v.euler, v.rk4)}
    cross = {name: lw for name, lw in cross.items() if lw[1] is not None}
    if cross:
        s.append("On graphs whose steps cross θ's jumps (no finer discretisation, so never judged): "
                 + "; ".join(f"{run_label(n)} loses {_points(loss)} points at worst ({w['scheme']}, N_t = {w['n_steps']})"
                             for n, (loss, w) in cross.items()) + ".")
    if v.contrast:
        s.append(f"VERDICT: the blocks matter, and the paper's contrast appears: on its valid graphs the Euler-trained "
                 f"model loses {v.drops[v.euler]:.1f} points (≥ {th['lose_points']:g}), the RK4-trained model stays "
                 f"within {v.drops[v.rk4]:.1f} points (< {th['hold_points']:g}).")
    else:
        what = []
        if not v.drops[v.euler] >= th["lose_points"]:
            what.append(f"the Euler-trained model loses only {v.drops[v.euler]:.1f} points on its valid graphs "
                        f"(< {th['lose_points']:g})")
        if not v.drops[v.rk4] < th["hold_points"]:
            what.append(f"the RK4-trained model loses {v.drops[v.rk4]:.1f} points (≥ {th['hold_points']:g})")
        s.append("VERDICT: the blocks matter, but the paper's contrast does not appear at this scale: "
                 + " and ".join(what) + ".")
    return s


def sweep_table(rows: Sequence[dict]) -> Rich:
    """A table of sweep rows (``*``: the trained manifestation)."""
    # the graph (kind, scheme, N_t) and its accuracy first: what a phone shows without a swipe
    return format_table(rows, [
        ("kind", lambda r: r["kind"] + (" *" if r.get("is_trained") else ""), "{}"), ("scheme", "scheme", "{}"),
        ("N_t", "n_steps", "{}"), ("accuracy", "accuracy", "{:.4f}"), ("M", "n_basis", "{}"),
        ("evaluations of R", "units", "{}"), ("params", "n_parameters", "{}"), ("ms/image", "ms_per_image", "{:.3f}")],
        left=2, note="(* = the trained manifestation)", key=("accuracy",))


def table1_table(rows: Sequence[dict]) -> Rich:
    """The rows of :func:`.study.table1_rows` as a table per model (under its name),
    narrow enough for the page: the graph, its cost, the measured speed-up and the accuracy."""
    graph = {"trained": "trained", "manifestation": "same θ", "compressed": "θ compressed", "identity": "blocks removed"}
    # the graph, its accuracy and what it lost first: what a phone shows without a swipe
    cols = [("graph", lambda r: graph[r["kind"]], "{}"),
            ("accuracy", lambda r: 100 * r["accuracy"], "{:.1f}%"), ("Δ points", "delta_points", "{:+.1f}"),
            ("scheme", "scheme", "{}"), ("N_t", lambda r: r.get("n_steps") or None, "{}"),
            ("speed-up", "speedup", "{:.2f}x"), ("M", lambda r: r.get("n_basis") or None, "{}"),
            ("evaluations of R", "units", "{}"), ("params", "n_parameters", "{}")]
    models = list(dict.fromkeys(r["model"] for r in rows))
    return join_rich([join_rich([heading(m), format_table([r for r in rows if r["model"] == m], cols, left=1,
                                                          key=("accuracy", "Δ points"))])
                      for m in models], sep="\n\n")


def summary_table(sweeps: Mapping[str, Sequence[dict]], grid: Optional[Mapping] = None,
                  n_test: Optional[int] = None) -> Rich:
    """What was swept (``grid``, ``n_test`` held-out images, when given) and, per model, the accuracy on its
    own graph and with every OdeBlock replaced by the identity."""
    rows = []
    for name, sweep in sweeps.items():
        tr, ident = find_row(sweep, kind="trained"), find_row(sweep, kind="identity")
        rows.append({"model": run_label(name), "graph": f"{tr['scheme']}, N_t = {tr['n_steps']}",
                     "accuracy": tr["accuracy"], "identity": ident["accuracy"]})
    table = format_table(rows, [("model", "model", "{}"), ("own graph", "graph", "{}"), ("accuracy", "accuracy", "{:.4f}"),
                                ("blocks removed (identity)", "identity", "{:.4f}")], left=2)
    head = []
    if grid is not None:
        head.append(f"grid: schemes {list(grid['schemes'])}, N_t {list(grid['n_steps'])}, "
                    f"compressed M {list(grid.get('compress', ()))}")
    if n_test is not None:
        head.append(f"{n_test:,} held-out images")
    return join_rich(["; ".join(head), table])


def sweeps_table(sweeps: Mapping[str, Sequence[dict]]) -> Rich:
    """Every model's whole sweep (:func:`sweep_table`), under its label."""
    return join_rich([join_rich([heading(run_label(name)), sweep_table(rows)]) for name, rows in sweeps.items()],
                     sep="\n\n")


# --------------------------------------------------------------------------- over training seeds
_MARKS = {"trained": " *", "straddles": " †", "lower order": " °", "coarser": " °"}
"""A cell's mark in the contrast table: the model's own graph, steps that cross θ's jumps, a graph not judged."""


def contrast_table(c: SeedContrast) -> Rich:
    """The contrast table: per graph, each method's accuracy as mean [min, max] over the seeds (%), marked by what the
    graph is for that model (:func:`.study.graph_kind`), then the blocks' worth, the worst loss on the
    valid graphs (what the verdict judges) and on the graphs whose steps cross θ's jumps (shown apart)."""
    extra = [{"graph": "blocks worth (points)", **{r: spread(c.gaps[r]) for r in (c.euler, c.rk4)}},
             {"graph": "worst loss, valid graphs (points)", **{r: spread(c.drops[r]) for r in (c.euler, c.rk4)}},
             {"graph": "worst loss, steps across θ's jumps (points)",
              **{r: spread([d for d in c.straddle_drops[r] if d == d]) for r in (c.euler, c.rk4)}}]

    def cell(row, r):
        text = spread_cell(row[r])
        return text and text + _MARKS.get(row.get("kinds", {}).get(r), "")

    cols = [("graph", "graph", "{}")] + [(run_label(r), (lambda row, r=r: cell(row, r)), "{}") for r in (c.euler, c.rk4)]
    return format_table(c.rows + extra, cols, note=f"{seeds_phrase(c.seeds)}; accuracy in %, mean [min, max] over the "
                        "seeds. Unmarked: a valid graph for that model (steps aligned with θ's pieces, order ≥ its "
                        "training scheme's, N_t ≥ its trained N_t), what the verdict judges; * its own graph; † steps "
                        "that cross θ's jumps (shown, never judged); ° a scheme of lower order than its training "
                        "scheme (not judged)")


def word_contrast(c: SeedContrast) -> Rich:
    """Sentences, as paragraphs: what the seeds show on the valid graphs and across θ's jumps, and the methods verdict
    (none with one seed)."""
    E, R = run_label(c.euler), run_label(c.rk4)
    d = {r: spread(c.drops[r]) for r in (c.euler, c.rk4)}
    x = {r: spread([v for v in c.straddle_drops[r] if v == v]) for r in (c.euler, c.rk4)}
    s = [f"Over {seeds_phrase(c.seeds)}, on the valid graphs (steps aligned with θ's pieces, order ≥ the training "
         f"scheme's, N_t ≥ the trained N_t) {E} loses at worst {spread_cell(d[c.euler])} points and {R} "
         f"{spread_cell(d[c.rk4])} (mean [min, max])."]
    if x[c.euler]["n"] and x[c.rk4]["n"]:
        s.append(f"On graphs whose steps cross θ's jumps, never judged, {E} loses {spread_cell(x[c.euler])} points and {R} "
                 f"{spread_cell(x[c.rk4])}: such steps integrate a right-hand side that jumps inside a step, so they are no "
                 "finer discretisation of either model.")
    if c.methods is None:
        s.append("VERDICT (training methods): one trained model per method, so no claim about the training methods is "
                 "made; the numbers describe these two models.")
        return paragraphs(s)
    m, th = c.methods, c.thresholds
    stats = (f"{E}'s mean loss minus {R}'s: {m['diff']:+.2f} points, 95% interval [{m['ci95'][0]:+.2f}, "
             f"{m['ci95'][1]:+.2f}], {p_value(m['p'], 'Welch p')}, the training seed as the unit")
    verdict = {
        "contrast": f"the paper's contrast holds across seeds ({stats}; {E} loses ≥ {th['lose_points']:g} on average, "
                    f"{R} < {th['hold_points']:g}).",
        "contradicted": f"the opposite of the paper's contrast across seeds ({stats}: the interval lies below 0).",
        "no contrast": f"the paper's contrast is not shown across seeds ({stats}; it needs the interval above 0, {E}'s "
                       f"mean loss ≥ {th['lose_points']:g} and {R}'s below {th['hold_points']:g}).",
        "blocks do not matter": f"no verdict: in some seed removing the blocks costs a model less than "
                                f"{th['matter_points']:g} points ({stats}).",
    }[c.outcome]
    s.append(f"VERDICT (training methods, {len(c.seeds)} seeds per method, valid graphs only): {verdict}")
    return paragraphs(s)


# --------------------------------------------------------------------------- integrator x refinement
def factorial_table(fx: Factorial) -> Rich:
    """One row per cell: its integrator and refinement, its accuracy on its own graph, what its blocks are worth, its
    worst loss on its valid graphs and on graphs that cross θ's jumps (mean [min, max] over the seeds)."""
    rows = []
    for (scheme, refinement), run in CELLS.items():
        c = fx.cells[run]
        rows.append({"model": run_label(run), "integrator": scheme_label(scheme), "refinement": refinement,
                     **{k: spread([v for v in c[k] if v == v]) for k in ("own", "gap", "valid", "straddles")}})
    images = f" on {fx.n_images:,} held-out images" if fx.n_images else ""
    return format_table(rows, [("integrator", "integrator", "{}"), ("refinement", "refinement", "{}"),
                               ("own graph (%)", lambda r: spread_cell(r["own"]), "{}"),
                               ("blocks worth", lambda r: spread_cell(r["gap"]), "{}"),
                               ("worst loss, valid graphs", lambda r: spread_cell(r["valid"]), "{}"),
                               ("worst loss, across θ's jumps", lambda r: spread_cell(r["straddles"]), "{}")], left=2,
                        note=f"the {fx.preset} preset{images}, {seeds_phrase(fx.seeds).replace('method', 'cell')}; "
                             "losses in points below each model's own graph; a dash: not trained in this preset")


def _factors(fx: Factorial) -> tuple[float, float]:
    """The integrator's and refinement's effects on the worst valid loss, each averaged over the other factor."""
    e = {name: eff["spread"]["mean"] for name, eff in fx.effects.items()}
    return ((e["integrator, refined"] + e["integrator, fixed depth"]) / 2,
            (e["refinement, Euler"] + e["refinement, RK4"]) / 2)


def word_factorial(fx: Factorial) -> Rich:
    """What the 2 x 2 shows: each effect on the worst valid loss, which factor is larger, and how much the seeds can
    tell (nothing about the factors with one seed per cell)."""
    if not fx.complete:
        names = " and ".join(run_label(r) for r in fx.missing)
        return paragraphs([f"The {fx.preset} preset has no {names} model, so the integrator and refinement "
                           "cannot be told apart in this preset."])
    e = {name: eff["spread"] for name, eff in fx.effects.items()}
    one = len(fx.seeds) == 1
    main = spread_cell(e["main runs' contrast"])
    s = [f"The {fx.asked} preset has no control runs, so these are the {fx.preset} preset's four models."] \
        if fx.asked else []
    s += [f"On the worst valid graph, the integrator's effect (Euler's loss minus RK4's) is "
         f"{spread_cell(e['integrator, refined'])} points among refined models and "
         f"{spread_cell(e['integrator, fixed depth'])} among fixed-depth ones; refinement's effect (fixed depth minus "
         f"refined) is {spread_cell(e['refinement, Euler'])} points for Euler and {spread_cell(e['refinement, RK4'])} "
         f"for RK4. The main runs' contrast, {main} points, is the sum of one of each."]
    integrator, refinement = _factors(fx)
    larger = "the integrator" if abs(integrator) >= abs(refinement) else "refinement"
    s.append(f"Averaged over the other factor, the integrator accounts for {integrator:+.1f} points and refinement for "
             f"{refinement:+.1f}: in these models {larger} carries more of the contrast.")
    if one:
        s.append("One trained model per cell: an exploratory result about four models, not a claim about integrators "
                 "or refinement (that takes several training seeds per cell).")
    else:
        factors = {name: eff["test"] for name, eff in fx.effects.items() if name != "main runs' contrast"}
        tests = [f"{name} {t['diff']:+.1f} [{t['ci95'][0]:+.1f}, {t['ci95'][1]:+.1f}]" for name, t in factors.items()]
        s.append(f"Over {seeds_phrase(fx.seeds).replace('method', 'cell')}, each effect with its 95% interval "
                 f"(Welch, the training seed as the unit): {'; '.join(tests)} points.")
        held = [name for name, t in factors.items() if t["p_holm"] < 0.05]
        if held:
            s.append(f"Tested together (Holm's correction over the four effects), {len(held)} of the four "
                     f"{'holds' if len(held) == 1 else 'hold'} at the 5% level: {'; '.join(held)}.")
        else:
            best = min(factors, key=lambda n: factors[n]["p"])
            s.append(f"Tested together (Holm's correction over the four effects), none holds at the 5% level (the "
                     f"smallest, {best}: p = {factors[best]['p']:.3f}, {factors[best]['p_holm']:.2f} corrected): "
                     "which factor carries the contrast is what these models show, not an established effect.")
    return paragraphs([minus_sign(x) for x in s])


# --------------------------------------------------------------------------- figures
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


# --------------------------------------------------------------------------- the live app
def swept_images(rows, default: int) -> int:
    """How many images a cached sweep's ``rows`` were measured on (:func:`.study.sweep_images`), else ``default``."""
    return sweep_images(rows) if any(r.get("ms_per_image") for r in rows) else default


def live_app(runs: Mapping[str, StudyRun], static_fallback_fig, device=None, n_images: Optional[int] = None,
             n_show: int = 12, sweeps: Optional[Mapping[str, list]] = None):
    """A live app (model, scheme, N_t, compression) over the trained models on ``device`` (default: the
    model's), showing the accuracy with its ± and a few held-out images with their predicted class.

    An interaction is answered from ``sweeps`` (the runs' cached sweeps, :func:`.study.run`;
    measured on all of their held-out images) when it evaluated that graph, else from the first images of the
    ``n_images`` the app holds (default :func:`cnet_lib.images.live_images` of the preset) that
    :func:`cnet_lib.draw.progressive.quick_size` allows, and refined to all of them in the background (the first
    answer says within how many seconds).  A data folder with fewer test images than the preset's gives the app fewer
    images, and its title says so."""
    check_study_inputs(runs, n_images, n_show)
    first = next(iter(runs.values()))
    dev = study_device(first, device)
    data, x, y, note = app_data(first, dev, n_images or live_images(first.config.preset))
    n_show = min(n_show, len(y))
    grid = sweep_grid(first.config.preset)
    max_m = max(b.n_basis for r in runs.values() for b in r.model.blocks)
    comp_opts = [("none (trained θ)", 0)] + [(f"M = {m}", m) for m in sorted(set(grid.get("compress", ())) | {1, 2, 4}) if m < max_m]
    ev = Evaluator()

    def figure(graph: tuple, titles: list, est: Estimate, follow: str = "") -> go.Figure:
        model, scheme, n_steps, compress = graph
        ident = compress and f"θ compressed to M = {compress}, " or ""
        more = f"; {follow}" if follow and not est.final else ""
        return thumbnails(x, titles, n_show, f"{run_label(model)}: {ident}{scheme}, N_t = {n_steps}: accuracy {est.text()}"
                                             f"{more}; predicted classes of the first {n_show}")

    def render(model, scheme, n_steps, compress):
        n_steps = int(n_steps)
        m = copy.deepcopy(runs[model].model.to(dev))  # the background refinement keeps its own copy
        if compress:
            m.project(compress)
        m.manifest(scheme, n_steps)
        rows = sweeps.get(model) if sweeps else None
        cached = sweep_answer(rows, swept_images(rows, len(data.test_y)), scheme, n_steps, compress) if rows else None
        n = 0 if cached is not None else quick_size(m, dev, len(y))
        k = max(n, n_show)  # the thumbnails' predictions come from the sample's forward pass
        start = time.perf_counter()
        pred = ev.predictions(m, x[:k], data.mean, data.std, batch_size=k)[0]
        per_image = (time.perf_counter() - start) / k
        titles, graph = predicted_titles(pred[:n_show], y[:n_show], data.classes), (model, scheme, n_steps, compress)
        if cached is not None:
            return figure(graph, titles, cached)
        hits = pred[:n] == y[:n]
        source = f"all {len(y)} images of the app" if n >= len(y) else f"first {n} of {len(y)} images"
        quick = figure(graph, titles, estimate_from(hits, source), follow_text(len(y), n, per_image))
        if n >= len(y):
            return quick

        def refine(stale):
            rest = evaluate_in_chunks(Evaluator(), m, x, y, data.mean, data.std, n, stale)
            return None if rest is None else figure(graph, titles, estimate_from(torch.cat([hits, rest]),
                                                                                   f"all {len(y)} images of the app"))

        return Progressive(quick, refine)

    schemes = list(grid["schemes"])
    return _live_app(
        {"model": Choice([(r.label, k) for k, r in runs.items()], description="model"),
         "scheme": Choice(schemes, schemes[-1], "scheme"),
         "n_steps": IntRange(1, max(grid["n_steps"]), max(grid["n_steps"]) // 2 or 1, "N_t"),
         "compress": Choice(comp_opts, 0, "compress")},
        render, static_fallback_fig, title="Evaluate a trained ContinuousNet on any graph" + note)


# --------------------------------------------------------------------------- the numbers the prose quotes
_WORDS = {0: "no", 1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine",
          10: "ten", 11: "eleven", 12: "twelve"}


def _word(n: int) -> str:
    return _WORDS.get(n, f"{n:,}")


def _num(v: Optional[float], fmt: str = "{:.1f}") -> str:
    """A number as the prose prints it: a real minus sign, no ``-0.0``; a dash for none."""
    if v is None or v != v:
        return "—"
    text = fmt.format(v)
    return minus_sign(text[1:] if re.fullmatch(r"-0(\.0*)?", text) else text)


def _mean(values: Sequence[float]) -> Optional[float]:
    vals = [v for v in values if v == v]
    return sum(vals) / len(vals) if vals else None


def _seeds(seeds: Sequence[int]) -> str:
    return "seed " + str(seeds[0]) if len(seeds) == 1 else "seeds " + ", ".join(map(str, seeds[:-1])) + \
        f" and {seeds[-1]}"


def _sweep_facts(sweeps: Mapping[str, Sequence[dict]]) -> dict:
    v = judge(sweeps)
    n = swept_images(sweeps[v.rk4], 0)
    return {"n_test": f"{n:,}" if n else "—", "gap_rk4": _num(v.gaps[v.rk4]),
            "gap_euler": _num(v.gaps[v.euler]), "drop_euler": _num(v.drops[v.euler]), "drop_rk4": _num(v.drops[v.rk4]),
            "blocks_matter": "the blocks matter" if v.blocks_matter else "the blocks do not matter enough to judge",
            "seed0_contrast": "appears" if v.contrast else "does not appear"}


def _contrast_facts(c: SeedContrast) -> dict:
    E, R = c.euler, c.rk4
    d, x = c.drops, {r: [v for v in c.straddle_drops[r] if v == v] for r in (E, R)}
    more = sum(e > r for e, r in zip(d[E], d[R]))
    kept = [seed for seed, e in zip(c.seeds, d[E]) if e < c.thresholds["lose_points"]]
    out = {"n_seeds": _word(len(c.seeds)), "seeds_euler_lo": _num(min(d[E])), "seeds_euler_hi": _num(max(d[E])),
           "seeds_euler_mean": _num(_mean(d[E])), "seeds_rk4_lo": _num(min(d[R]), "{:.2f}"),
           "seeds_rk4_hi": _num(max(d[R]), "{:.2f}"),
           "x_euler_lo": _num(min(x[E], default=None)), "x_euler_hi": _num(max(x[E], default=None)),
           "x_rk4_lo": _num(min(x[R], default=None), "{:.2f}"), "x_rk4_hi": _num(max(x[R], default=None), "{:.2f}"),
           "euler_more": ("in every seed" if more == len(c.seeds) else
                          f"in {_word(more)} of the {_word(len(c.seeds))} seeds"),
           "euler_kept": (f"on {_seeds(kept)} the Euler-trained model keeps its accuracy by the rule" if kept else
                          "the Euler-trained model loses its accuracy by the rule in every seed")}
    m = c.methods
    if m is None:
        out["seeds_test"] = ("With one trained model per method there is nothing to test about the training methods: "
                             "the numbers describe these two models.")
    else:
        said = {"contrast": f"{_word(len(c.seeds))} seeds per method establish the paper's contrast",
                "contradicted": f"{_word(len(c.seeds))} seeds per method show the opposite of the paper's contrast",
                "no contrast": f"{_word(len(c.seeds))} seeds per method do not establish the paper's contrast",
                "blocks do not matter": "no verdict: in some seed the blocks do not matter"}[c.outcome]
        out["seeds_test"] = (f"Welch's test of the seeds' worst losses gives a difference of the means of "
                             f"{_num(m['diff'], '{:+.1f}')} points, 95% interval [{_num(m['ci95'][0], '{:+.1f}')}, "
                             f"{_num(m['ci95'][1], '{:+.1f}')}], {p_value(m['p'])}: {said}.")
    return out


def _factorial_facts(fx: Factorial, roughness: Optional[Mapping[str, float]]) -> dict:
    out = {"fx_preset": fx.preset or "—", "fx_seeds": _word(len(fx.seeds))}
    for run, cell in fx.cells.items():
        out[f"fx_valid_{run}"] = _num(_mean(cell["valid"]))
        out[f"fx_cross_{run}"] = _num(_mean(cell["straddles"]))
        out[f"rough_{run}"] = _num((roughness or {}).get(run), "{:.2f}")
    if not fx.complete:
        return {**out, **{k: "—" for k in ("fx_integrator", "fx_refinement", "fx_main", "fx_ref_euler", "fx_ref_rk4")},
                "fx_larger": "neither factor (the 2 × 2 is incomplete)", "fx_established": "establish neither factor"}
    e = {name: eff["spread"]["mean"] for name, eff in fx.effects.items()}
    integrator, refinement = _factors(fx)
    held = [name for name, eff in fx.effects.items() if eff["test"] and eff["test"].get("p_holm", 1.0) < 0.05]
    out.update({"fx_integrator": _num(integrator), "fx_refinement": _num(refinement),
                "fx_main": _num(e["main runs' contrast"]), "fx_ref_euler": _num(e["refinement, Euler"]),
                "fx_ref_rk4": _num(e["refinement, RK4"]),
                "fx_larger": "the integrator" if abs(integrator) >= abs(refinement) else "refinement",
                "fx_established": ("establish neither factor" if not held else "establish " + "; ".join(held))})
    if len(fx.seeds) < 2:
        out["fx_established"] = "cannot test either factor"
    return out


def facts(sweeps: Optional[Mapping[str, Sequence[dict]]] = None, contrast: Optional[SeedContrast] = None,
          fx: Optional[Factorial] = None, roughness: Optional[Mapping[str, float]] = None,
          preset: Optional[str] = None) -> dict:
    """``{name: text}``: the numbers the chapter's prose quotes, written as it prints them (a real minus sign, a dash
    for what was not measured), and the few words that follow from them (whether the contrast appears, which factor
    is larger), from what is given: one pair's ``sweeps`` (seed 0), the ``contrast`` over seeds, integrator ×
    refinement (``fx``) with its cells' θ(t) ``roughness``, the ``preset`` (the live app's images).  The chapter glues
    them (:func:`cnet_lib.book.glue_all`), so its prose and its cells cannot disagree."""
    out = {"keep": f"{KEEP_POINTS:g}"}
    if preset is not None:
        out.update(preset=preset, live_images=f"{live_images(preset):,}")
    if sweeps is not None:
        out.update(_sweep_facts(sweeps))
    if contrast is not None:
        out.update(_contrast_facts(contrast))
    if fx is not None:
        out.update(_factorial_facts(fx, roughness))
    return out
