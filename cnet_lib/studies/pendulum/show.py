"""The pendulum study shown: its tables, what the chapters say about its numbers, its figures and its live app, and
the numbers the chapters' prose quotes.

*Tables.*  Each ``*_table`` function takes the rows (or the flat dict) that a function of :mod:`.study` returns and
gives back a :class:`~cnet_lib.runtime.rich_text.Rich` built with :func:`cnet_lib.runtime.rich_text.format_table`: plain
text when printed, an HTML table that wraps to the page when displayed in a notebook or the book; scheme names are
printed with their labels from :mod:`cnet_lib.runtime.rich_text`, trained models as ``ODE-Net(<scheme>)``
(:func:`cnet_lib.pendulum.odenet_label`).

*Words.*  Whether a run shows what the chapters argue (the dip, the modified rate, the floor, the interchange, the
control at coarser data; the fitted orders) depends on the preset (its step sizes) and on training, so each
``word_*`` function states, from the rows a chapter has just displayed, whether this run shows it: a sentence that
quotes the numbers and the threshold it was judged by (the constants below).

*Figures.*  Plotly, from precomputed values, so that sliders and menus work in the static book; the live rollout
app rolls a trained model out on the spot (:func:`cnet_lib.draw.live_app` makes the widgets).  Colours and labels
come from :mod:`cnet_lib.runtime.rich_text`.

*Facts.*  :func:`facts` gives the numbers a chapter's prose states, written as the prose says them, for the
chapter to glue (:func:`cnet_lib.book.glue_all`, ``{glue:md}`name``` in its markdown).  Nothing here measures.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Mapping, Optional, Sequence

import numpy as np
import torch

from ...core.schemes import get_scheme
from ...runtime.device import torch_threads
from ...runtime.progress import duration
from ...runtime.rich_text import (Rich, SCHEME_COLORS, SERIES_COLORS, find_row, format_table, gathered_facts,
    join_rich, paragraphs, scheme_color, sci, scheme_label, select_rows, times)
from ...draw import (Choice, LEGEND_BELOW, Steps, dropdown_slider_figure, live_app, log_ticks, loglog_style,
    slider_figure)
from ...pendulum import G as G_DEFAULT, ODENetFit, PendulumConfig, RHO0, exact_solution, odenet_label, rollout

__all__ = [
    # tables
    "swing_table", "rollout_table", "local_error_table", "convergence_table", "slopes_table", "halving_table",
    "setup_table", "backend_table", "training_table", "dip_table", "rate_distance_table", "odenet_convergence_table",
    "error_floor_table", "interchange_table", "control_table", "energy_gained_table", "flow_period_table",
    # words and their thresholds
    "SAME_FIT", "FALLS_APART", "STEADY", "SEVERAL", "FLAT", "SAME_FLOOR", "ORDERS", "BREAKS", "SMALL_COST",
    "MANY_TIMES", "SAME_GAIN", "ORDER_OFF", "ORDER_ONE", "span", "word_orders", "word_long_window",
    "word_fit", "word_dip", "word_rate_distances", "word_odenet_curves", "word_error_floor", "word_interchange",
    "word_control", "word_energy",
    # figures and the live app
    "fig_exact_motion", "fig_against_exact", "fig_scheme_explorer", "fig_training_loss", "fig_trajectories",
    "fig_convergence", "fig_interchange", "fig_rollout_explorer", "fig_dt_data_control", "live_rollout_app",
    # the prose's numbers
    "facts",
]


# --------------------------------------------------------------------------- tables
def _quantities(items: Sequence[tuple]) -> Rich:
    """A two-column table ``quantity | value`` from ``(quantity, value, format)`` triples."""
    rows = [dict(quantity=q, value=v, fmt=f) for q, v, f in items]
    return format_table(rows, [("quantity", "quantity", "{}"), ("value", lambda r: r["fmt"].format(r["value"]), "{}")])


def _pivot(rows: Sequence[Mapping], row_key: str, col_key: str, value_key: str) -> tuple[list[dict], list]:
    """Long rows -> one wide row per value of ``row_key`` (in order of appearance), holding
    ``{col value: row[value_key]}`` under ``"cells"``; and the column values, in order of appearance."""
    cols = list(dict.fromkeys(r[col_key] for r in rows))
    wide: dict = {}
    for r in rows:
        wide.setdefault(r[row_key], {row_key: r[row_key], "cells": {}})["cells"][r[col_key]] = r[value_key]
    return list(wide.values()), cols


def _pivot_columns(cols: Sequence, header: str, fmt: str) -> list[tuple]:
    """One ``format_table`` column per pivoted column value ``c``: header ``header.format(c)``."""
    return [(header.format(c), (lambda r, c=c: r["cells"].get(c)), fmt) for c in cols]


def _finite(value: Optional[float]) -> Optional[float]:
    """``value``, or None (printed ``-``) when it is missing or NaN."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


# "Numerical integrators"
def swing_table(facts: Mapping) -> Rich:
    """The swing of :func:`~cnet_lib.studies.pendulum.study.swing_facts`: g, ρ(0), the two periods, the energy."""
    return _quantities([
        ("g", facts["g"], "{:g}"),
        ("ρ(0)", facts["rho0"], "{:.6f}"),
        ("period of this swing, 4K(m)/√g", facts["period"], "{:.4f}"),
        ("period of a tiny swing, 2π/√g", facts["small_angle_period"], "{:.4f}"),
        ("this swing takes longer by", facts["longer_percent"], "{:.0f}%"),
        ("energy v²/2 − g cos ρ", facts["energy"], "{:.6f}"),
        ("its largest change along the exact solution", facts["energy_drift"], "{:.1e}"),
    ])


def rollout_table(report: Mapping) -> Rich:
    """One rollout on the true rate (:func:`~cnet_lib.studies.pendulum.study.true_rate_rollout`): its error,
    energy and whether it went over the top."""
    t = f"{report['t_final']:g}"
    return _quantities([
        ("scheme", scheme_label(report["scheme"]), "{}"),
        ("Δt", report["dt"], "{:g}"),
        ("N_t", report["n_steps"], "{}"),
        (f"error at t = {t}: ‖x_N − x({t})‖", report["error"], "{:.2f}"),
        ("energy at t = 0 (the exact motion keeps it)", report["energy_start"], "{:.3f}"),
        (f"energy at t = {t}", report["energy_end"], "{:.3f}"),
        (f"over the top (energy above g = {report['g']:g})?", report["over_the_top"], "{}"),
        ("largest |ρ| (rad)", report["max_abs_rho"], "{:.2f}"),
    ])


def local_error_table(rows: Sequence[Mapping], slopes: Sequence[Mapping]) -> Rich:
    """Local errors (:func:`~cnet_lib.studies.pendulum.study.local_errors`), one line per scheme and a column per
    Δt, with the fitted slope (:func:`~cnet_lib.studies.pendulum.study.local_slopes`) and the expected r + 1."""
    wide, dts = _pivot(rows, "scheme", "dt", "error")
    slope = {r["scheme"]: r for r in slopes}
    return format_table(wide, [("scheme", lambda r: scheme_label(r["scheme"]), "{}")]
                        + _pivot_columns(dts, "Δt={:g}", "{:.2e}")
                        + [("slope", lambda r: slope[r["scheme"]]["slope"], "{:.2f}"),
                           ("r+1", lambda r: slope[r["scheme"]]["expected"], "{}")])


def convergence_table(rows: Sequence[Mapping]) -> Rich:
    """Global errors of :func:`~cnet_lib.studies.pendulum.study.integrator_convergence`: a line per Δt, a column per scheme (the
    narrow way round: a page holds four schemes side by side, not seven step sizes)."""
    wide, schemes = _pivot(rows, "dt", "scheme", "error")
    return format_table(sorted(wide, key=lambda r: r["dt"]), [("Δt", "dt", "{:g}")] + [
        (scheme_label(s), (lambda r, s=s: r["cells"].get(s)), "{:.2e}") for s in schemes])


def slopes_table(slopes: Sequence[Mapping], rows: Sequence[Mapping] = ()) -> Rich:
    """Fitted slopes of :func:`~cnet_lib.studies.pendulum.study.fit_slopes` (keyed by scheme) against each
    scheme's order, with the points and the Δt range of each fit; given the fitted ``rows``, also the
    range of their errors."""
    columns = [("scheme", lambda r: scheme_label(r["scheme"]), "{}"), ("fitted slope", "slope", "{:.3f}"),
               ("order", lambda r: get_scheme(r["scheme"]).order, "{}"), ("points", "n_points", "{}"),
               ("Δt from", "dt_min", "{:g}"), ("Δt to", "dt_max", "{:g}")]
    if rows:
        errors = {s["scheme"]: [r["error"] for r in rows if r["scheme"] == s["scheme"]] for s in slopes}
        columns += [("E from", lambda r: min(errors[r["scheme"]]), "{:.1e}"), ("E to", lambda r: max(errors[r["scheme"]]), "{:.1e}")]
    return format_table(slopes, columns)


def halving_table(ratios: Sequence[Mapping]) -> Rich:
    """E(Δt)/E(Δt/2) of :func:`~cnet_lib.studies.pendulum.study.halving_ratios` against 2^r."""
    return format_table(ratios, [("scheme", lambda r: scheme_label(r["scheme"]), "{}"), ("Δt", "dt", "{:g}"),
                                 ("E(Δt) / E(Δt/2)", "ratio", "{:.2f}"), ("2^r", "expected", "{}")])


# "Is a ResNet a forward-Euler integrator?"
def setup_table(facts: Mapping) -> Rich:
    """The data and training settings of :func:`~cnet_lib.studies.pendulum.study.setup_facts`."""
    return _quantities([
        ("preset", facts["preset"], "{}"),
        ("Δt_data", facts["dt_data"], "{:g}"),
        ("T_data", facts["T_data"], "{:g}"),
        ("training pairs (x_k, x_k+1)", facts["n_pairs"], "{}"),
        ("full-batch Adam iterations, float64", facts["n_iters"], "{}"),
        ("learning rate", f"{facts['lr']:g} → {facts['lr_final']:g}", "{}"),
        ("seed", facts["seed"], "{}"),
        (f"parameters of G ({facts['hidden']} hidden units)", facts["n_parameters"], "{}"),
    ])


def backend_table(rows: Sequence[Mapping]) -> Rich:
    """The largest difference between torchdiffeq's step and cnet_lib's (:func:`~cnet_lib.studies.pendulum.study.backend_agreement`)."""
    return format_table(rows, [("scheme", lambda r: scheme_label(r["scheme"]), "{}"),
                               ("largest |torchdiffeq step − cnet_lib step|", "max_difference", "{:.1e}")])


def training_table(rows: Sequence[Mapping]) -> Rich:
    """Loss, one-step residual and time of each trained model (:func:`~cnet_lib.studies.pendulum.study.training_summary`); the
    seconds are those of the batch its ``trained_with`` models were trained in together, on ``device``."""
    return format_table(rows, [("model", lambda r: odenet_label(r["trained"]), "{}"), ("final loss", "final_loss", "{:.2e}"),
                               ("RMS one-step residual ‖F(x_k) − x_k+1‖", "one_step_rms", "{:.1e}"),
                               ("iterations", "n_iters", "{}"), ("seconds", "seconds", "{:.0f}"),
                               ("trained at once", lambda r: f"{r.get('trained_with', 1)} on {r.get('device', 'cpu')}", "{}")])


def dip_table(rows: Sequence[Mapping]) -> Rich:
    """Each model with its own scheme at Δt_data and Δt_data/2 (:func:`~cnet_lib.studies.pendulum.study.dip_rows`)."""
    return format_table(rows, [("model", lambda r: odenet_label(r["trained"]), "{}"), ("E(Δt_data)", "error_dt_data", "{:.2e}"),
                               ("E(Δt_data/2)", "error_half", "{:.2e}"), ("E(Δt_data/2) / E(Δt_data)", "ratio", "{:.2f}")])


def rate_distance_table(rows: Sequence[Mapping]) -> Rich:
    """Each trained G's distance to f and to the modified rate (:func:`~cnet_lib.studies.pendulum.study.rate_distances`)."""
    return format_table(rows, [("model", lambda r: odenet_label(r["trained"]), "{}"), ("closer to", "closer_to", "{}"),
                               ("by", "factor", "{:.1f}×"), ("RMS ‖G − f‖", "rms_to_f", "{:.2e}"),
                               ("RMS ‖G − (f + (Δt_data/2) f'f)‖", "rms_to_modified", "{:.2e}")], left=2)


def odenet_convergence_table(odenet_rows: Sequence[Mapping], numerical_rows: Sequence[Mapping],
                            slopes: Sequence[Mapping] = (), fit_h: Optional[Sequence[float]] = None) -> Rich:
    """E(Δt = h·Δt_data) at T_data of each ODE-Net with its own scheme (:func:`~cnet_lib.studies.pendulum.study.odenet_convergence`),
    each beside its scheme on the true f (:func:`~cnet_lib.studies.pendulum.study.integrator_convergence`): a line per h, a column
    per model (the narrow way round), and a last line with the ODE-Nets' fitted slopes (keyed by ``trained``) over
    ``fit_h``."""
    merged, models = [], []
    for a in dict.fromkeys(r["trained"] for r in odenet_rows):
        models += [odenet_label(a), f"{scheme_label(a)} on f"]
        merged += [dict(model=odenet_label(a), h=r["h"], error=r["error"]) for r in odenet_rows if r["trained"] == a]
        merged += [dict(model=f"{scheme_label(a)} on f", h=r["h"], error=r["error"]) for r in numerical_rows if r["scheme"] == a]
    wide = [{"h": f"{h:g}", **{r["model"]: f"{r['error']:.1e}" for r in merged if r["h"] == h}}
            for h in sorted(dict.fromkeys(r["h"] for r in merged))]
    if slopes:
        slope = {odenet_label(r["trained"]): _finite(r["slope"]) for r in slopes}
        span = f" in [{fit_h[0]:g}, {fit_h[1]:g}]" if fit_h else ""
        wide.append({"h": f"fitted slope, h{span}",
                     **{m: f"{slope[m]:.2f}" for m in models if slope.get(m) is not None}})
    return format_table(wide, [("h (Δt = h·Δt_data)", "h", "{}")] + [(m, (lambda r, m=m: r.get(m)), "{}") for m in models])


def error_floor_table(rows: Sequence[Mapping], flow_h: float) -> Rich:
    """What optimisation leaves behind (:func:`~cnet_lib.studies.pendulum.study.error_floor_rows`); ``flow_h``
    is the step (in units of Δt_data) at which the flow of G was followed with classic RK4."""
    table = format_table(rows, [("model", lambda r: odenet_label(r["trained"]), "{}"), ("one-step RMS", "one_step_rms", "{:.1e}"),
                                ("E own scheme", "error_own", "{:.2e}"), ("E flow of G", "error_flow", "{:.2e}"),
                                ("scheme on f", "error_numerical", "{:.1e}")])
    return join_rich([f"E at T_data; 'flow of G' = G integrated with classic RK4 at Δt = {flow_h:g}·Δt_data", table],
                     sep="\n\n")


def interchange_table(rows: Sequence[Mapping]) -> Rich:
    """E(A→B) / E(A→A) of :func:`~cnet_lib.studies.pendulum.study.interchange_matrix`: a line per trained A, a
    column per inference scheme B."""
    wide, evaluated = _pivot(rows, "trained", "evaluated", "ratio_to_own")
    cols = [(scheme_label(b), (lambda r, b=b: r["cells"].get(b)), "{:.2f}") for b in evaluated]
    return format_table(wide, [("trained with A / run with B", lambda r: odenet_label(r["trained"]), "{}")] + cols)


def _less_accurate(row: Mapping) -> str:
    """The scheme of a :func:`~cnet_lib.studies.pendulum.study.dt_data_control` row whose error on f is ``error_numerical``."""
    return row["trained"] if row["error_numerical_trained"] >= row["error_numerical_evaluated"] else row["evaluated"]


def control_table(rows: Sequence[Mapping]) -> Rich:
    """The swaps at coarser Δt_data (:func:`~cnet_lib.studies.pendulum.study.dt_data_control`): E(A→B), E(A→A),
    the less accurate scheme's error on f, and E(A→B) over each of the two."""
    worse = set(_less_accurate(r) for r in rows)
    on_f = f"{scheme_label(worse.pop())} on f" if len(worse) == 1 else "less accurate scheme on f"
    return format_table(rows, [
        ("Δt_data", "dt_data", "{:g}"),
        ("A → B", lambda r: f"{scheme_label(r['trained'])} → {scheme_label(r['evaluated'])}", "{}"),
        ("E(A→B)", "error_swapped", "{:.2e}"), ("E(A→A)", "error_own", "{:.2e}"), (on_f, "error_numerical", "{:.2e}"),
        ("E(A→B)/E(A→A)", "ratio_to_own", "{:.1f}"), (f"E(A→B)/{on_f}", "ratio_to_numerical", "{:.2f}"),
    ], left=2)


def energy_gained_table(rows: Sequence[Mapping]) -> Rich:
    """The energy gained and the error of each rollout of :func:`~cnet_lib.studies.pendulum.study.energy_gained`."""
    t = f"{rows[0]['t_final']:g}"
    return format_table(rows, [
        ("rate", "rate", "{}"), ("run with", lambda r: scheme_label(r["scheme"]), "{}"), ("Δt", "dt", "{:g}"),
        ("energy at t = 0", "energy_start", "{:.3f}"), (f"energy at t = {t}", "energy_end", "{:.3f}"),
        ("energy gained", "energy_gained", "{:+.3f}"), (f"E at t = {t}", "error", "{:.2e}"),
    ], left=2)


def flow_period_table(rows: Sequence[Mapping]) -> Rich:
    """The period of each flow at two energies (:func:`~cnet_lib.studies.pendulum.study.flow_periods`)."""
    e0, e1 = rows[0]["energy_from"], rows[0]["energy_to"]
    return format_table(rows, [
        ("flow of", "rate", "{}"), (f"period at energy {e0:.2f}", "period_from", "{:.3f}"),
        (f"period at energy {e1:.2f}", "period_to", "{:.3f}"), ("change", lambda r: 100 * r["change"], "{:+.1f}%"),
    ])


# --------------------------------------------------------------------------- words, and the thresholds they judge by
SAME_FIT = 10.0
"""Final training losses within this factor of each other fit the data "about equally well"."""
FALLS_APART = 2.0
"""An error that grows at least this much when the step is halved: the model "falls apart"."""
STEADY = 1.1
"""An error ratio at most this: "unchanged or better"."""
SEVERAL = 2.0
"""Closer by at least this factor: "several times closer"."""
FLAT = 3.0
"""Errors within this factor over a range of steps: a "flat" curve; growing by at least this: "rises"."""
SAME_FLOOR = 1.25
"""Two errors within this factor are "the same"."""
ORDERS = 100.0
"""At least this factor: "orders of magnitude"."""
BREAKS = 10.0
"""A swap whose error is at least this many times the model's own: the model "breaks"."""
SMALL_COST = 2.0
"""A swap whose error is at most this many times the model's own: "a small cost"."""
MANY_TIMES = 5.0
"""At least this many times the own-scheme error: "many times"."""
SAME_GAIN = 0.3
"""Energies gained within this relative difference: gained "at the same rate"."""
ORDER_OFF = 0.15
"""A fitted slope further than this from the scheme's order is "no longer" the order."""
ORDER_ONE = 1.0
"""An error at least this large is "of order one" (the pendulum's swing is about 2.4 rad)."""


def word_orders(slopes: Sequence[Mapping]) -> Rich:
    """Whether every fitted slope (:func:`~cnet_lib.studies.pendulum.study.fit_slopes` rows, keyed by ``scheme``) rounds to
    its scheme's order: the orders of the tableaux, measured."""
    got = [(r["scheme"], r["slope"], get_scheme(r["scheme"]).order) for r in slopes]
    listed = ", ".join(f"{scheme_label(s)} {v:.2f}" for s, v, _ in got)
    ok = all(round(v) == o for _, v, o in got)
    return paragraphs([f"Fitted slopes: {listed}. " + (
        "Each rounds to its scheme's order (" + ", ".join(str(o) for *_, o in got) + "): the orders of the tableaux, "
        "measured." if ok else "Not every slope rounds to its scheme's order: these step sizes are not all in the "
        "asymptotic range.")])


def word_long_window(rows: Sequence[Mapping], slopes: Sequence[Mapping]) -> Rich:
    """Over a long window (:func:`~cnet_lib.studies.pendulum.study.integrator_convergence` rows and their fitted slopes):
    whether Euler's error is of order one (:data:`ORDER_ONE`) at every step while the others' stay
    below it, and which fitted slopes are no longer their order (:data:`ORDER_OFF`)."""
    euler = [r["error"] for r in rows if r["scheme"] == "euler"]
    others = [r["error"] for r in rows if r["scheme"] != "euler"]
    s = []
    if euler:
        s.append(f"Euler's error: {min(euler):.2g} to {max(euler):.2g}, " + (
            "of order one at every one of these step sizes." if min(euler) >= ORDER_ONE else
            "not of order one at every step size."))
    if others:
        s.append(f"The other schemes' errors: at most {max(others):.2g}, "
                 + ("still small." if max(others) < ORDER_ONE else "not all small."))
    off = [(r["scheme"], r["slope"]) for r in slopes
           if r["scheme"] != "euler" and abs(r["slope"] - get_scheme(r["scheme"]).order) > ORDER_OFF]
    kept = [r["scheme"] for r in slopes if r["scheme"] != "euler" and r["scheme"] not in dict(off)]
    if off:
        s.append("Fitted slopes no longer their order: " + ", ".join(
            f"{scheme_label(k)} {v:.2f} (order {get_scheme(k).order})" for k, v in off) + ".")
    if kept:
        s.append("Still their order (within " f"{ORDER_OFF:g}): " + ", ".join(scheme_label(k) for k in kept) + ".")
    return paragraphs(s)


def _factor(values: Sequence[float]) -> float:
    return max(values) / min(values) if min(values) > 0 else float("inf")


def span(lo: float, hi: float, fmt=times) -> str:
    """``lo to hi``, or the one number when both print the same (never "715 to 715")."""
    a, b = fmt(lo), fmt(hi)
    return a if a == b else f"{a} to {b}"


def word_fit(summary: Sequence[Mapping]) -> Rich:
    """Whether the trained models fit the data about equally well (:func:`~cnet_lib.studies.pendulum.study.training_summary`
    rows): their final losses within :data:`SAME_FIT` of each other."""
    losses = [r["final_loss"] for r in summary]
    f = _factor(losses)
    head = f"Final training losses from {sci(min(losses), 2)} to {sci(max(losses), 2)}, a factor {f:.1f} apart: "
    if f <= SAME_FIT:
        return paragraphs([head + "all the models fit the data about equally well (within a factor "
                           f"{SAME_FIT:g}); by the training loss alone there is nothing to choose between them."])
    return paragraphs([head + f"more than a factor {SAME_FIT:g}, so the models do not fit the data equally well in "
                       "this run."])


def word_dip(dip: Sequence[Mapping]) -> Rich:
    """The dip (:func:`~cnet_lib.studies.pendulum.study.dip_rows` rows): whether the Euler-trained model's error grows by at
    least :data:`FALLS_APART` when its step is halved while every other model's changes by at most
    :data:`STEADY`."""
    euler = find_row(dip, trained="euler", default=None)
    others = [r for r in dip if r["trained"] != "euler"]
    s = []
    if euler is not None:
        verb = "falls apart" if euler["ratio"] >= FALLS_APART else "does not fall apart"
        s.append(f"Halving the step, {odenet_label('euler')} {verb}: its error is multiplied by {times(euler['ratio'])} "
                 f"(threshold {FALLS_APART:g}).")
    steady = [r for r in others if r["ratio"] <= STEADY]
    s += [f"{odenet_label(r['trained'])}: its error is multiplied by {times(r['ratio'])}, "
          + ("unchanged or better" if r in steady else f"more than {STEADY:g}: worse") + "." for r in others]
    dip_seen = euler is not None and euler["ratio"] >= FALLS_APART and len(steady) == len(others)
    s.append("That is the dip." if dip_seen else "So this run does not show the dip in full.")
    return paragraphs(s)


def word_rate_distances(rows: Sequence[Mapping]) -> Rich:
    """Whether the Euler-trained G is at least :data:`SEVERAL` times closer to the modified rate than to f and
    every other G closer to f (:func:`~cnet_lib.studies.pendulum.study.rate_distances` rows)."""
    s = [f"{odenet_label(r['trained'])}: closer to {r['closer_to']} by a factor {times(r['factor'])}." for r in rows]
    euler = find_row(rows, trained="euler", default=None)
    ok = (euler is not None and euler["closer_to"] != "f" and euler["factor"] >= SEVERAL
          and all(r["closer_to"] == "f" for r in rows if r["trained"] != "euler"))
    s.append("As the argument predicts: the Euler-trained G has learned the modified rate (at least "
             f"{SEVERAL:g} times closer to it), the others the true rate f." if ok else
             "Not as the argument predicts: training stopped before the one-step residual fell below the size of "
             "the correction, and the distances blur.")
    return paragraphs(s)


def word_odenet_curves(rows: Sequence[Mapping]) -> Rich:
    """The shapes of the E(Δt) curves of the ODE-Nets run with their own scheme
    (:func:`~cnet_lib.studies.pendulum.study.odenet_convergence` rows ``trained, h, error``): ODE-Net(Euler) a V with its tip
    at h = 1 (every other h at least :data:`FALLS_APART` times worse); ODE-Net(midpoint) flat (within
    :data:`FLAT`) for h ≤ 1 and rising (by :data:`FLAT`) beyond; ODE-Net(RK4) flat everywhere."""
    s = []
    for a in dict.fromkeys(r["trained"] for r in rows):
        mine = sorted(select_rows(rows, trained=a), key=lambda r: r["h"])
        at_1 = find_row(mine, h=1.0, default=None)
        small = [r["error"] for r in mine if r["h"] <= 1.0]
        large = [r["error"] for r in mine if r["h"] > 1.0]
        if a == "euler" and at_1 is not None:
            rest = [r["error"] for r in mine if r["h"] != 1.0]
            v = bool(rest) and min(rest) >= FALLS_APART * at_1["error"]
            s.append(f"{odenet_label(a)}: " + (f"a V with its tip at Δt_data (every other step at least "
                                               f"{times(min(rest) / at_1['error'])} times worse)." if v else
                                               "no V at Δt_data in this run."))
        elif a == "midpoint" and small and large:
            flat, rise = _factor(small) <= FLAT, max(large) >= FLAT * max(small)
            s.append(f"{odenet_label(a)}: {'flat' if flat else 'not flat'} for Δt ≤ Δt_data (within a factor "
                     f"{times(_factor(small))}), and {'rising' if rise else 'not rising'} beyond (up to "
                     f"{times(max(large) / max(small))} times).")
        elif mine:
            errors = [r["error"] for r in mine]
            flat = _factor(errors) <= FLAT
            s.append(f"{odenet_label(a)}: errors from {sci(min(errors))} to {sci(max(errors))} over every step, "
                     + (f"flat (within a factor {times(_factor(errors))})." if flat else
                        f"a factor {times(_factor(errors))} apart: not flat within {FLAT:g}."))
    return paragraphs(s)


def word_error_floor(rows: Sequence[Mapping], trained: str = "rk4_38") -> Rich:
    """For the model trained with ``trained`` (:func:`~cnet_lib.studies.pendulum.study.error_floor_rows` rows): whether its
    own-scheme error is the error of G's exact flow (within :data:`SAME_FLOOR`) and how far it lies above the
    scheme's truncation error on f (:data:`ORDERS`: orders of magnitude)."""
    r = find_row(rows, trained=trained)
    same = max(r["error_own"], r["error_flow"]) / min(r["error_own"], r["error_flow"]) <= SAME_FLOOR
    equal = f"{r['error_own']:.2e}" == f"{r['error_flow']:.2e}"
    above = r["error_own"] / r["error_numerical"]
    verdict = ("the same to three digits: the floor." if equal else
               f"the same within a factor {SAME_FLOOR:g}: the floor." if same else "not the same in this run.")
    return paragraphs([
        f"{odenet_label(trained)}: with its own scheme E = {sci(r['error_own'], 2)}, along the exact flow of its G "
        f"{sci(r['error_flow'], 2)}: {verdict}",
        f"That is about {times(above)} times {scheme_label(trained)}'s truncation error on f at the same step"
        + (" (orders of magnitude above it)." if above >= ORDERS else ".")])


def word_interchange(matrix: Sequence[Mapping]) -> Rich:
    """The interchange at one step (:func:`~cnet_lib.studies.pendulum.study.interchange_matrix` rows): whether the
    Euler-trained model breaks in every other scheme (at least :data:`BREAKS` times its own error) and the
    other models swap among themselves at a small cost (at most :data:`SMALL_COST`)."""
    euler = [r["ratio_to_own"] for r in matrix if r["trained"] == "euler" and r["evaluated"] != "euler"]
    swaps = [r["ratio_to_own"] for r in matrix
             if "euler" not in (r["trained"], r["evaluated"]) and r["trained"] != r["evaluated"]]
    s = []
    if euler:
        s.append(f"{odenet_label('euler')} run with any other scheme: {span(min(euler), max(euler))} times its own "
                 "error: " + ("it breaks." if min(euler) >= BREAKS else f"not always {BREAKS:g} times: it does not "
                                                                         "always break in this run."))
    if swaps:
        s.append(f"The other models swapped among themselves: {span(min(swaps), max(swaps))} times their own "
                 "error: " + (f"a small cost (at most {SMALL_COST:g} times)." if max(swaps) <= SMALL_COST else
                              f"more than {SMALL_COST:g} times: a visible cost in this run."))
    return paragraphs(s)


def word_control(rows: Sequence[Mapping]) -> Rich:
    """The swaps at coarser Δt_data (:func:`~cnet_lib.studies.pendulum.study.dt_data_control` rows): at the finest Δt_data
    whether the swapped models are as good as their own-scheme versions (:data:`SMALL_COST`), at the
    coarsest whether they reach many times their own error (:data:`MANY_TIMES`), and whether they end up
    closer to the exact state than the less accurate scheme on f."""
    fine, coarse = min(r["dt_data"] for r in rows), max(r["dt_data"] for r in rows)
    at_fine = [r["ratio_to_own"] for r in rows if r["dt_data"] == fine]
    at_coarse = select_rows(rows, dt_data=coarse)
    own = [r["ratio_to_own"] for r in at_coarse]
    to_f = [r["ratio_to_numerical"] for r in at_coarse]
    return paragraphs([
        f"At Δt_data = {fine:g} the swapped models make {span(min(at_fine), max(at_fine))} times their "
        "own-scheme error: " + ("as good as their own-scheme versions." if max(at_fine) <= SMALL_COST else
                                f"more than {SMALL_COST:g} times: the swap already costs accuracy here."),
        f"At Δt_data = {coarse:g}: {span(min(own), max(own))} times their own-scheme error"
        + (" (many times)." if min(own) >= MANY_TIMES else "."),
        f"Against the less accurate scheme on f at Δt_data = {coarse:g}: {span(min(to_f), max(to_f))} times its "
        "error: " + ("the swapped models end up closer to the exact state than it." if max(to_f) < 1 else
                     "the prediction holds in order of magnitude." if 0.1 <= min(to_f) and max(to_f) <= 10 else
                     "not even the order of magnitude of the prediction.")])


def word_energy(gained: Sequence[Mapping], periods: Sequence[Mapping], true: str = "the true f") -> Rich:
    """Whether the learned rate gains energy like the true one under the same scheme (within
    :data:`SAME_GAIN`, :func:`~cnet_lib.studies.pendulum.study.energy_gained` rows) and whether its period grows more slowly
    with the energy than the true one (:func:`~cnet_lib.studies.pendulum.study.flow_periods` rows)."""
    g_true = find_row(gained, rate=true)["energy_gained"]
    s = []
    for r in gained:
        if r["rate"] != true:
            rel = abs(r["energy_gained"] - g_true) / abs(g_true) if g_true else float("inf")
            s.append(f"{r['rate']} gains {r['energy_gained']:+.3f} in energy, the true f {g_true:+.3f}: "
                     + ("the same rate (within " f"{100 * SAME_GAIN:.0f}%)." if rel <= SAME_GAIN else "not the same rate."))
    p_true = find_row(periods, rate=true)["change"]
    for r in periods:
        if r["rate"] != true:
            word = "more slowly than" if r["change"] < p_true else "at least as fast as"
            s.append(f"Its period grows by {100 * r['change']:+.1f}% over that energy, the true one by "
                     f"{100 * p_true:+.1f}%: {word} the true one.")
    return paragraphs(s)


# --------------------------------------------------------------------------- figures and the live app
def _go():
    import plotly.graph_objects as go

    return go


def _f32(a) -> np.ndarray:
    """A path for drawing, in float32: plotly stores arrays as binary, and 7 digits are plenty for a
    line on a screen (the numbers behind the figures keep float64).  Halves a page's figure data."""
    return np.asarray(a, dtype=np.float32)


def _exact_trace(t_final: float, rho0: float = RHO0, g: float = G_DEFAULT, component: int = 0, n: int = 1000, width: float = 3):
    """The exact solution on [0, t_final] (ρ, or v with ``component=1``), dotted in the colour of "exact"."""
    go = _go()
    t = np.linspace(0.0, t_final, n + 1)
    x = exact_solution(t, rho0, g)
    return go.Scatter(x=_f32(t), y=_f32(x[:, component]), name="exact", mode="lines",
                      line=dict(color=SCHEME_COLORS["exact"], width=width, dash="dot"))


def _exact_traces(cfg: PendulumConfig, component: int = 0, n: int = 1000):
    return _exact_trace(cfg.T_data, cfg.rho0, cfg.g, component, n)


def fig_exact_motion(t_final: float = 10.0, rho0: float = RHO0, g: float = G_DEFAULT, n_points: int = 2001):
    """ρ(t) and v(t) of the exact solution over [0, t_final]."""
    go = _go()
    t = np.linspace(0.0, t_final, n_points)
    x = exact_solution(t, rho0, g)
    fig = go.Figure([go.Scatter(x=t, y=x[:, i], name=nm, mode="lines", line=dict(color=SERIES_COLORS[i]))
                     for i, nm in enumerate(("ρ(t)", "v(t)"))])
    fig.update_layout(title="The exact motion (unit length, g = 9.81 m/s²)", xaxis_title="t (s)",
                      yaxis_title="ρ (rad), v (rad/s)", template="plotly_white", height=360)
    return fig


def fig_against_exact(report: Mapping, title: str = ""):
    """ρ(t) of one rollout on the true rate (:func:`~cnet_lib.studies.pendulum.study.true_rate_rollout`) over the exact ρ(t)."""
    go = _go()
    s = report["scheme"]
    fig = go.Figure([
        _exact_trace(report["t_final"], width=2),
        go.Scatter(x=report["t"], y=report["x"][:, 0], name=f"{scheme_label(s)}, Δt = {report['dt']:g}", mode="lines",
                   line=dict(color=scheme_color(s))),
    ])
    fig.update_layout(title=title or f"ρ(t): {scheme_label(s)} against the exact solution", xaxis_title="t (s)", yaxis_title="ρ (rad)",
                      template="plotly_white", height=380)
    return fig


def fig_scheme_explorer(rollouts: Sequence[Mapping], active_dt: Optional[float] = None, clip: float = 20.0):
    """A menu for the scheme and a slider for Δt over precomputed rollouts on the true rate
    (:func:`~cnet_lib.studies.pendulum.study.true_rate_rollouts`), over the exact ρ(t); the legend gives E(t_final)
    on a second line (a narrow legend leaves the plot its width)."""
    go = _go()
    schemes = list(dict.fromkeys(r["scheme"] for r in rollouts))
    dts = list(dict.fromkeys(r["dt"] for r in rollouts))
    t_final = rollouts[0]["t_final"]
    frames = {}
    for s in schemes:
        frames[scheme_label(s)] = {}
        for dt in dts:
            r = find_row(rollouts, scheme=s, dt=dt)
            frames[scheme_label(s)][f"{dt:g}"] = [go.Scatter(
                x=r["t"], y=np.clip(r["x"][:, 0], -clip, clip), mode="lines", line=dict(color=scheme_color(s)),
                name=f"{scheme_label(s)}, N_t = {r['n_steps']}<br>E({t_final:g}) = {r['error']:.1e}")]
    active = next((i for i, dt in enumerate(dts) if active_dt is not None and math.isclose(dt, active_dt)), 0)
    fig = dropdown_slider_figure(frames, title="ρ(t) for a chosen scheme and Δt", dropdown_prefix="scheme: ",
                                 slider_prefix="Δt = ", xaxis_title="t (s)", yaxis_title="ρ (rad)", active_step=active,
                                 static_traces=[_exact_trace(t_final, width=2)])
    fig.update_yaxes(range=[-4, 4])
    return fig


def fig_training_loss(models: Mapping[str, ODENetFit], max_points: int = 400):
    """The one-step training loss of each ODE-Net against the iteration (log scale), in its scheme's colour."""
    go = _go()
    traces = []
    for a, r in models.items():
        k = max(1, r.n_iters // max_points)
        traces.append(go.Scatter(x=np.arange(r.n_iters)[::k], y=r.losses[::k], name=odenet_label(a), mode="lines",
                                 line=dict(color=scheme_color(a))))
    fig = go.Figure(traces)
    fig.update_layout(title="Training loss", xaxis_title="iteration (full-batch Adam)",
                      yaxis_title="one-step loss / Δt_data²", template="plotly_white", height=420)
    # a log axis over less than a decade got a single tick with an SI prefix ("100μ"), and plotly's digits ("2", "5")
    # did not say which power of ten they stood for: ticks labelled with their values (log_ticks); 420 px: the plot was
    # 122 px tall under the title
    fig.update_yaxes(type="log")
    return log_ticks(fig)


def fig_trajectories(rows: Sequence[Mapping], cfg: PendulumConfig, component: int = 0):
    """Paper Fig. 2: each ODE-Net(A) with its own scheme at Δt_data (solid) and Δt_data/2 (dashed).

    ``rows`` must come from :func:`~cnet_lib.studies.pendulum.study.rollout_rows` with ``keep_paths=True`` and h ∈ {1/2, 1}.
    One subplot per trained model, stacked (so that it reads on a phone), drawn in its scheme's colour;
    ρ(t) by default (``component=1``: v(t)).  The legend explains the two line styles (in grey: they are not schemes).
    """
    from plotly.subplots import make_subplots

    go = _go()
    trained = list(dict.fromkeys(r["trained"] for r in rows))
    styles = ((1.0, "solid", "Δt = Δt_data"), (0.5, "dash", "Δt = Δt_data/2"))
    # one panel per row: side by side, the panels' titles collide on a phone
    fig = make_subplots(rows=len(trained), cols=1, shared_xaxes=True, vertical_spacing=0.09,
                        subplot_titles=[odenet_label(a) for a in trained])
    for j, a in enumerate(trained, 1):
        fig.add_trace(_exact_traces(cfg, component).update(showlegend=j == 1), row=j, col=1)
        for h, dash, nm in styles:
            r = find_row(rows, trained=a, evaluated=a, h=h)
            fig.add_trace(
                go.Scatter(x=_f32(r["t"]), y=_f32(r["x"][:, component]), name=f"{odenet_label(a)}, {nm}", mode="lines",
                           showlegend=False,
                           line=dict(color=scheme_color(a), dash=dash)),
                row=j, col=1,
            )
    fig.update_xaxes(title_text="t (s)", row=len(trained), col=1)
    for h, dash, nm in styles:  # legend entries for the line styles only
        fig.add_trace(go.Scatter(x=[None], y=[None], name=nm, mode="lines", line=dict(color="#7f7f7f", dash=dash)), row=1, col=1)
    fig.update_yaxes(title_text="ρ(t) (rad)" if component == 0 else "v(t) (rad/s)")
    fig.update_layout(template="plotly_white", height=220 * len(trained) + 160, margin=dict(l=60, r=20, t=60, b=110),
                      legend=LEGEND_BELOW)
    return fig


def fig_convergence(
    integrator_rows: Sequence[Mapping] = (),
    odenet_rows: Sequence[Mapping] = (),
    integrator_slopes: Sequence[Mapping] = (),
    odenet_slopes: Sequence[Mapping] = (),
    dt_data: Optional[float] = None,
    title: str = "",
):
    """Log–log E(Δt): numerical integrators on f (dashed, markers ○) and ODE-Nets with their own scheme (solid).

    Slopes, when given, appear in the legend.  A vertical line marks Δt_data.
    """
    go = _go()
    fig = go.Figure()
    islope = {r["scheme"]: r["slope"] for r in integrator_slopes}
    oslope = {r["trained"]: r["slope"] for r in odenet_slopes}
    for s in dict.fromkeys(r["scheme"] for r in integrator_rows):
        rs = sorted((r for r in integrator_rows if r["scheme"] == s), key=lambda r: r["dt"])
        nm = f"{scheme_label(s)} on f" + (f" (slope {islope[s]:.2f})" if s in islope else "")
        fig.add_trace(go.Scatter(x=[r["dt"] for r in rs], y=[r["error"] for r in rs], name=nm, mode="lines+markers",
                                 line=dict(color=scheme_color(s), dash="dash"), marker=dict(symbol="circle-open", size=8)))
    for a in dict.fromkeys(r["trained"] for r in odenet_rows):
        rs = sorted((r for r in odenet_rows if r["trained"] == a), key=lambda r: r["dt"])
        nm = odenet_label(a) + (f" (slope {oslope[a]:.2f})" if a in oslope and not math.isnan(oslope[a]) else "")
        fig.add_trace(go.Scatter(x=[r["dt"] for r in rs], y=[r["error"] for r in rs], name=nm, mode="lines+markers",
                                 line=dict(color=scheme_color(a), width=3), marker=dict(size=9)))
    if dt_data is not None:
        fig.add_vline(x=dt_data, line=dict(color="#888", dash="dot"), annotation_text="Δt_data", annotation_position="top")
    fig.update_layout(template="plotly_white", height=480, title=title or None, margin=dict(l=60, r=20, t=60, b=40),
                      legend=dict(x=1.02, y=1.0, xanchor="left"))
    return loglog_style(fig, x_title="Δt", y_title="E(Δt) = ‖x_N − x(t_final)‖")


def _two_lines(label: str) -> str:
    """``RK4 (3/8 rule)`` as ``RK4<br>(3/8 rule)``: a tick label that needs no rotation on a phone."""
    return label.replace(" (", "<br>(")


def fig_interchange(rows: Sequence[Mapping], h_values: Optional[Sequence[float]] = None):
    """Paper Fig. 3b: a heat map of log10 E, trained with (rows) × run with (columns), one slider step per Δt.  The
    tick labels are the schemes on two lines (no rotated labels, which on a phone pushed into the slider), the cells'
    numbers two digits, the colour bar thin: on a phone the cells keep readable numbers."""
    go = _go()
    h_values = sorted(dict.fromkeys(r["h"] for r in rows)) if h_values is None else h_values
    trained = list(dict.fromkeys(r["trained"] for r in rows))
    evaluated = list(dict.fromkeys(r["evaluated"] for r in rows))
    frames = {}
    for h in h_values:
        z = [[math.log10(min(max(find_row(rows, trained=a, evaluated=b, h=h)["error"], 1e-300), 1e3)) for b in evaluated]
             for a in trained]
        text = [[f"{find_row(rows, trained=a, evaluated=b, h=h)['error']:.1e}" for b in evaluated] for a in trained]
        frames[f"{h:g}·Δt_data"] = [go.Heatmap(
            z=z, x=[_two_lines(scheme_label(b)) for b in evaluated], y=[_two_lines(scheme_label(a)) for a in trained],
            text=text, texttemplate="%{text}", textfont=dict(size=11), colorscale="Viridis", zmin=-4, zmax=1,
            colorbar=dict(title=dict(text="log₁₀ E", side="right"), thickness=12),
            hovertemplate="trained with %{y}<br>run with %{x}<br>E = %{text}<extra></extra>")]
    active = next((i for i, h in enumerate(h_values) if math.isclose(h, 1.0)), 0)
    # no x-axis title (the slider sits below the tick labels): the title says what the columns are
    fig = slider_figure(frames, title="E at T_data: trained with (rows), run with (columns)", slider_prefix="Δt = ",
                        yaxis_title="trained with", active=active, height=480)
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(tickangle=0, side="bottom")
    return fig


def fig_rollout_explorer(rows: Sequence[Mapping], cfg: PendulumConfig, component: int = 0):
    """Static explorer over precomputed rollouts: a menu for the inference scheme, a slider for Δt.

    Each view shows every trained ODE-Net rolled out with the chosen scheme and Δt, over the
    exact solution; the legend gives each model's final error, on two short lines per model so that
    it stays narrow and clear of the menu.  ``rows`` from :func:`~cnet_lib.studies.pendulum.study.rollout_rows` with ``keep_paths=True``.
    """
    go = _go()
    evaluated = list(dict.fromkeys(r["evaluated"] for r in rows))
    trained = list(dict.fromkeys(r["trained"] for r in rows))
    hs = sorted(dict.fromkeys(r["h"] for r in rows))
    frames = {}
    for b in evaluated:
        frames[scheme_label(b)] = {}
        for h in hs:
            traces = []
            for a in trained:
                r = find_row(rows, trained=a, evaluated=b, h=h)
                y = np.clip(r["x"][:, component], -50, 50)
                traces.append(go.Scatter(x=_f32(r["t"]), y=_f32(y), mode="lines", line=dict(color=scheme_color(a)),
                                         name=f"{odenet_label(a)}<br>E = {r['error']:.1e}"))
            frames[scheme_label(b)][f"{h:g}·Δt_data = {h * cfg.dt_data:g}"] = traces
    active_step = next((i for i, h in enumerate(hs) if math.isclose(h, 1.0)), 0)
    fig = dropdown_slider_figure(
        frames, title="Trained ODE-Nets rolled out with the chosen scheme and Δt", dropdown_prefix="run with ",
        slider_prefix="Δt = ", xaxis_title="t (s)", yaxis_title="ρ(t) (rad)" if component == 0 else "v(t) (rad/s)",
        static_traces=[_exact_traces(cfg, component)], active_step=active_step,
    )
    fig.update_yaxes(range=[-3.5, 3.5] if component == 0 else [-9, 9])
    return fig


def fig_dt_data_control(control_rows: Sequence[Mapping]):
    """E against Δt_data: swapped models A→B (solid), A→A (dotted), and each scheme on the true f (dashed)."""
    go = _go()
    fig = go.Figure()
    numerical: dict = {}
    for r in control_rows:
        numerical.setdefault(r["trained"], {})[r["dt_data"]] = r["error_numerical_trained"]
        numerical.setdefault(r["evaluated"], {})[r["dt_data"]] = r["error_numerical_evaluated"]
    for s, pts in numerical.items():
        x = sorted(pts)
        fig.add_trace(go.Scatter(x=x, y=[pts[d] for d in x], mode="lines+markers", line=dict(color=scheme_color(s), dash="dash"),
                                 marker=dict(symbol="circle-open", size=9), name=f"{scheme_label(s)} on the true f"))
    pairs = list(dict.fromkeys((r["trained"], r["evaluated"]) for r in control_rows))
    for a, b in pairs:
        rs = sorted((r for r in control_rows if (r["trained"], r["evaluated"]) == (a, b)), key=lambda r: r["dt_data"])
        x = [r["dt_data"] for r in rs]
        fig.add_trace(go.Scatter(x=x, y=[r["error_swapped"] for r in rs], mode="lines+markers", line=dict(color=scheme_color(b), width=3),
                                 marker=dict(size=10), name=f"{odenet_label(a)} run with {scheme_label(b)}"))
        fig.add_trace(go.Scatter(x=x, y=[r["error_own"] for r in rs], mode="lines+markers", line=dict(color=scheme_color(a), dash="dot"),
                                 marker=dict(symbol="diamond"), name=f"{odenet_label(a)} run with {scheme_label(a)}"))
    fig.update_layout(template="plotly_white", height=560, margin=dict(l=60, r=20, t=40, b=200), legend=LEGEND_BELOW)
    return loglog_style(fig, x_title="Δt_data (= the rollout's Δt)", y_title="E at t = T_data")


def live_rollout_app(models: Mapping[str, ODENetFit], cfg: PendulumConfig, static_fallback_fig,
                     h_choices: Optional[Sequence[float]] = None, rows: Optional[Sequence[Mapping]] = None):
    """A live app (Jupyter/Colab): pick Δt, the inference scheme and the trained model; it rolls out G.

    With ``rows`` (:func:`~cnet_lib.studies.pendulum.study.rollout_rows` with ``keep_paths=True``, as the chapter computes
    them) a rollout they hold is drawn from them at once (its path thinned, its error E from the whole
    path); any other is rolled out on the spot (at Δt = Δt_data/8 that is 8,000 steps: seconds on a CPU).
    ``h_choices`` defaults to the Δt/Δt_data of ``rows``, else 1/8 to 8.  The static book shows
    ``static_fallback_fig`` in its place (see :func:`cnet_lib.draw.widgets.live_app`).
    """
    go = _go()
    if h_choices is None:
        h_choices = sorted({float(r["h"]) for r in rows}) if rows else (0.125, 0.25, 0.5, 1, 2, 4, 8)
    controls = {
        "h": Steps([(f"{h:g}·Δt_data", h) for h in h_choices], 1 if 1 in h_choices else h_choices[0], "Δt"),
        "scheme": Choice([(scheme_label(s), s) for s in cfg.eval_schemes], cfg.eval_schemes[0], "run with"),
        "trained": Choice([(odenet_label(a), a) for a in models], next(iter(models)), "model"),
    }
    x0 = torch.tensor(exact_solution(0.0, cfg.rho0, cfg.g), dtype=torch.float64)

    def render(h, scheme, trained):
        dt = h * models[trained].dt_data
        N = int(math.ceil(cfg.T_data / dt - 1e-9))
        row = find_row(rows, trained=trained, evaluated=scheme, h=float(h), default=None) if rows else None
        if row is not None and "x" in row:
            t, path, err, how = np.asarray(row["t"]), np.asarray(row["x"]), float(row["error"]), " (precomputed)"
        else:
            with torch_threads(1):
                path = rollout(models[trained].model, x0, scheme, dt, N).numpy()
            t = dt * np.arange(N + 1)
            err, how = float(np.linalg.norm(path[-1] - exact_solution(t[-1], cfg.rho0, cfg.g))), ""
        fig = go.Figure([_exact_traces(cfg)])
        fig.add_trace(go.Scatter(x=t, y=np.clip(path[:, 0], -50, 50), mode="lines", line=dict(color=scheme_color(scheme)),
                                 name=f"{odenet_label(trained)} run with {scheme_label(scheme)}"))
        fig.update_layout(template="plotly_white", height=380, title=f"Δt = {dt:g}, N_t = {N}: E(t = {cfg.T_data:g}) = "
                          f"{err:.2e}{how}", xaxis_title="t (s)", yaxis_title="ρ(t) (rad)", yaxis_range=[-3.5, 3.5])
        return fig

    return live_app(controls, render, static_fallback_fig, title="Roll out a trained ODE-Net")


# --------------------------------------------------------------------------- the numbers the prose states
def _h(h: float) -> str:
    """A step in units of Δt_data as the prose writes it: ``1/8``, ``1/2``, ``4``."""
    f = Fraction(h).limit_denominator(64)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def _swing(swing: Mapping) -> dict:
    return {"longer_percent": f"{swing['longer_percent']:.0f}%"}


def _slopes(slopes: Sequence[Mapping]) -> dict:
    return {f"slope_{r['scheme']}": f"{r['slope']:.2f}" for r in slopes}


def _long_window(rows: Sequence[Mapping], slopes: Sequence[Mapping]) -> dict:
    euler = [r["error"] for r in rows if r["scheme"] == "euler"]
    return {**{f"long_{r['scheme']}": f"{r['slope']:.2f}" for r in slopes},
            "long_euler_lo": f"{min(euler):.2g}", "long_euler_hi": f"{max(euler):.2g}",
            "long_others_max": f"{max(r['error'] for r in rows if r['scheme'] != 'euler'):.2g}"}


def _training(summary: Sequence[Mapping]) -> dict:
    """The losses' spread, and where the models were trained: how many at once, how long, on what."""
    losses = [r["final_loss"] for r in summary]
    on = str(summary[0].get("device", "cpu"))
    return {"loss_lo": sci(min(losses)), "loss_hi": sci(max(losses)), "loss_factor": times(_factor(losses)),
            "n_trained": str(summary[0].get("trained_with", 1)), "train_time": duration(max(r["seconds"] for r in summary)),
            "trained_on": "the CPU" if on.startswith("cpu") else "a GPU"}


def _dip(dip: Sequence[Mapping]) -> dict:
    return {f"dip_{r['trained']}": times(r["ratio"]) for r in dip}


def _distances(rows: Sequence[Mapping]) -> dict:
    return {f"dist_{r['trained']}": times(r["factor"]) for r in rows}


def _curves(odenet_rows: Sequence[Mapping], numerical_rows: Sequence[Mapping]) -> dict:
    """The shapes of the E(Δt) curves (:func:`word_odenet_curves`), and the RK4-trained model beside RK4's truncation
    error on f: over every step but the largest, and at the largest."""
    def curve(a):
        return sorted(select_rows(odenet_rows, trained=a), key=lambda r: r["h"])

    euler, mid, rk4 = curve("euler"), curve("midpoint"), curve("rk4_38")
    at_1 = find_row(euler, h=1.0)["error"]
    small, large = [r["error"] for r in mid if r["h"] <= 1], [r["error"] for r in mid if r["h"] > 1]
    hs = [r["h"] for r in rk4]
    below = [r for r in rk4 if r["h"] < hs[-1]]
    on_f = {r["h"]: r["error"] for r in numerical_rows if r["scheme"] == "rk4_38"}
    return {"v_worse": times(min(r["error"] for r in euler if r["h"] != 1.0) / at_1),
            "mid_flat": times(_factor(small)), "mid_rise": times(max(large) / max(small)), "h_min": _h(hs[0]),
            "h_below": _h(below[-1]["h"]), "h_max": _h(hs[-1]), "rk4_lo": sci(min(r['error'] for r in below)),
            "rk4_hi": sci(max(r['error'] for r in below)),
            "rk4_f_below": sci(max(on_f[r['h']] for r in below)), "rk4_f_max": sci(on_f[hs[-1]]),
            "rk4_at_max": sci(rk4[-1]['error'])}


def _floor(rows: Sequence[Mapping]) -> dict:
    r = find_row(rows, trained="rk4_38")
    return {"floor": sci(r['error_own'], 2), "floor_above": times(r["error_own"] / r["error_numerical"]),
            "floor_numerical": sci(r['error_numerical'])}


def _swaps(matrix: Sequence[Mapping]) -> dict:
    euler = [r["ratio_to_own"] for r in matrix if r["trained"] == "euler" and r["evaluated"] != "euler"]
    others = [r["ratio_to_own"] for r in matrix
              if "euler" not in (r["trained"], r["evaluated"]) and r["trained"] != r["evaluated"]]
    return {"swap_euler": span(min(euler), max(euler)), "swap_others": span(min(others), max(others))}


def _control(rows: Sequence[Mapping]) -> dict:
    fine, coarse = min(r["dt_data"] for r in rows), max(r["dt_data"] for r in rows)
    at_fine, at_coarse = select_rows(rows, dt_data=fine), select_rows(rows, dt_data=coarse)

    def spread(rs, key):
        return span(min(r[key] for r in rs), max(r[key] for r in rs))

    return {"dt_fine": f"{fine:g}", "dt_coarse": f"{coarse:g}", "control_fine": spread(at_fine, "ratio_to_own"),
            "control_coarse": spread(at_coarse, "ratio_to_own"), "control_to_f": spread(at_coarse, "ratio_to_numerical")}


def _energy(gained: Sequence[Mapping], periods: Sequence[Mapping], true: str = "the true f") -> dict:
    learned = next(r for r in gained if r["rate"] != true)
    return {"gain_learned": f"{learned['energy_gained']:+.3f}",
            "gain_true": f"{find_row(gained, rate=true)['energy_gained']:+.3f}",
            "period_learned": f"{100 * find_row(periods, rate=learned['rate'])['change']:+.1f}%",
            "period_true": f"{100 * find_row(periods, rate=true)['change']:+.1f}%", "dt_energy": f"{learned['dt']:g}"}


_FACTS = ((("swing",), _swing), (("slopes",), _slopes), (("long_rows", "long_slopes"), _long_window),
          (("training",), _training), (("dip",), _dip), (("distances",), _distances),
          (("curves", "numerical"), _curves), (("floor",), _floor), (("matrix",), _swaps), (("control",), _control),
          (("gained", "periods"), _energy))
"""What :func:`facts` reads: the keywords each group of numbers needs, and the function that writes them."""


def facts(**results) -> dict:
    """The numbers a chapter's prose states, ``{name: text}``, written as the prose says them (``"1,540"``,
    ``"0.76 to 1.25"``, ``"+3.7%"``), from the results the chapter has just computed, given by keyword:
    ``swing`` (:func:`~.study.swing_facts`), ``slopes`` (:func:`~.study.fit_slopes`), ``long_rows`` and
    ``long_slopes`` (the long window), ``training`` (:func:`~.study.training_summary`), ``dip``, ``distances``
    (:func:`~.study.rate_distances`), ``curves`` and ``numerical`` (:func:`~.study.odenet_convergence` and
    :func:`~.study.integrator_convergence` rows), ``floor``, ``matrix`` (:func:`~.study.interchange_matrix`),
    ``control`` and ``gained`` with ``periods`` (:func:`~.study.energy_gained`, :func:`~.study.flow_periods`).
    A chapter glues them (``glue_all(pendulum.facts(dip=dip))``) and its prose quotes them."""
    return gathered_facts(_FACTS, results)
