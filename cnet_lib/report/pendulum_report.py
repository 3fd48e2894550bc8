"""The pendulum chapters' tables: the chapters display these instead of formatting tables themselves.

Each function takes the rows (or the flat dict) that a function of :mod:`cnet_lib.pendulum`
returns and gives back a :class:`~cnet_lib.runtime.rich_text.Rich` built with
:func:`cnet_lib.runtime.rows.format_table`: plain text when printed, an HTML table that wraps to the
page when displayed in a notebook or the book; scheme
names are printed with their labels from :mod:`cnet_lib.runtime.vocabulary`, trained models as
``ODE-Net(<scheme>)`` (:func:`cnet_lib.pendulum.odenet.odenet_label`).  Nothing here computes a
measurement.
"""
from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence

from ..core.schemes import get_scheme
from ..pendulum.odenet import odenet_label
from ..runtime.rich_text import Rich, join_rich
from ..runtime.rows import format_table
from ..runtime.vocabulary import scheme_label

__all__ = [
    "swing_table",
    "rollout_table",
    "local_error_table",
    "convergence_table",
    "slopes_table",
    "halving_table",
    "setup_table",
    "backend_table",
    "training_table",
    "dip_table",
    "rate_distance_table",
    "odenet_convergence_table",
    "error_floor_table",
    "interchange_table",
    "control_table",
    "energy_gained_table",
    "flow_period_table",
]


# --------------------------------------------------------------------------- helpers
def _facts(items: Sequence[tuple]) -> Rich:
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


# --------------------------------------------------------------------------- "Numerical integrators"
def swing_table(facts: Mapping) -> Rich:
    """The swing of :func:`~cnet_lib.pendulum.swing_facts`: g, ρ(0), the two periods, the energy."""
    return _facts([
        ("g", facts["g"], "{:g}"),
        ("ρ(0)", facts["rho0"], "{:.6f}"),
        ("period of this swing, 4K(m)/√g", facts["period"], "{:.4f}"),
        ("period of a tiny swing, 2π/√g", facts["small_angle_period"], "{:.4f}"),
        ("this swing takes longer by", facts["longer_percent"], "{:.0f}%"),
        ("energy v²/2 − g cos ρ", facts["energy"], "{:.6f}"),
        ("its largest change along the exact solution", facts["energy_drift"], "{:.1e}"),
    ])


def rollout_table(report: Mapping) -> Rich:
    """One rollout on the true rate (:func:`~cnet_lib.pendulum.true_rate_rollout`): its error,
    energy and whether it went over the top."""
    t = f"{report['t_final']:g}"
    return _facts([
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
    """Local errors (:func:`~cnet_lib.pendulum.local_errors`), one line per scheme and a column per
    Δt, with the fitted slope (:func:`~cnet_lib.pendulum.local_slopes`) and the expected r + 1."""
    wide, dts = _pivot(rows, "scheme", "dt", "error")
    slope = {r["scheme"]: r for r in slopes}
    return format_table(wide, [("scheme", lambda r: scheme_label(r["scheme"]), "{}")]
                        + _pivot_columns(dts, "Δt={:g}", "{:.2e}")
                        + [("slope", lambda r: slope[r["scheme"]]["slope"], "{:.2f}"),
                           ("r+1", lambda r: slope[r["scheme"]]["expected"], "{}")])


def convergence_table(rows: Sequence[Mapping]) -> Rich:
    """Global errors of :func:`~cnet_lib.pendulum.integrator_convergence`: a line per Δt, a column per scheme (the
    narrow way round: a page holds four schemes side by side, not seven step sizes)."""
    wide, schemes = _pivot(rows, "dt", "scheme", "error")
    return format_table(sorted(wide, key=lambda r: r["dt"]), [("Δt", "dt", "{:g}")] + [
        (scheme_label(s), (lambda r, s=s: r["cells"].get(s)), "{:.2e}") for s in schemes])


def slopes_table(slopes: Sequence[Mapping], rows: Sequence[Mapping] = ()) -> Rich:
    """Fitted slopes of :func:`~cnet_lib.pendulum.fit_slopes` (keyed by scheme) against each
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
    """E(Δt)/E(Δt/2) of :func:`~cnet_lib.pendulum.halving_ratios` against 2^r."""
    return format_table(ratios, [("scheme", lambda r: scheme_label(r["scheme"]), "{}"), ("Δt", "dt", "{:g}"),
                                 ("E(Δt) / E(Δt/2)", "ratio", "{:.2f}"), ("2^r", "expected", "{}")])


# --------------------------------------------------------------------------- "Is a ResNet a forward-Euler integrator?"
def setup_table(facts: Mapping) -> Rich:
    """The data and training settings of :func:`~cnet_lib.pendulum.setup_facts`."""
    return _facts([
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
    """The largest difference between torchdiffeq's step and cnet_lib's (:func:`~cnet_lib.pendulum.backend_agreement`)."""
    return format_table(rows, [("scheme", lambda r: scheme_label(r["scheme"]), "{}"),
                               ("largest |torchdiffeq step − cnet_lib step|", "max_difference", "{:.1e}")])


def training_table(rows: Sequence[Mapping]) -> Rich:
    """Loss, one-step residual and time of each trained model (:func:`~cnet_lib.pendulum.training_summary`); the
    seconds are those of the batch its ``trained_with`` models were trained in together, on ``device``."""
    return format_table(rows, [("model", lambda r: odenet_label(r["trained"]), "{}"), ("final loss", "final_loss", "{:.2e}"),
                               ("RMS one-step residual ‖F(x_k) − x_k+1‖", "one_step_rms", "{:.1e}"),
                               ("iterations", "n_iters", "{}"), ("seconds", "seconds", "{:.0f}"),
                               ("trained at once", lambda r: f"{r.get('trained_with', 1)} on {r.get('device', 'cpu')}", "{}")])


def dip_table(rows: Sequence[Mapping]) -> Rich:
    """Each model with its own scheme at Δt_data and Δt_data/2 (:func:`~cnet_lib.pendulum.dip_rows`)."""
    return format_table(rows, [("model", lambda r: odenet_label(r["trained"]), "{}"), ("E(Δt_data)", "error_dt_data", "{:.2e}"),
                               ("E(Δt_data/2)", "error_half", "{:.2e}"), ("E(Δt_data/2) / E(Δt_data)", "ratio", "{:.2f}")])


def rate_distance_table(rows: Sequence[Mapping]) -> Rich:
    """Each trained G's distance to f and to the modified rate (:func:`~cnet_lib.pendulum.rate_distances`)."""
    return format_table(rows, [("model", lambda r: odenet_label(r["trained"]), "{}"), ("closer to", "closer_to", "{}"),
                               ("by", "factor", "{:.1f}×"), ("RMS ‖G − f‖", "rms_to_f", "{:.2e}"),
                               ("RMS ‖G − (f + (Δt_data/2) f'f)‖", "rms_to_modified", "{:.2e}")], left=2)


def odenet_convergence_table(odenet_rows: Sequence[Mapping], numerical_rows: Sequence[Mapping],
                            slopes: Sequence[Mapping] = (), fit_h: Optional[Sequence[float]] = None) -> Rich:
    """E(Δt = h·Δt_data) at T_data of each ODE-Net with its own scheme (:func:`~cnet_lib.pendulum.odenet_convergence`),
    each beside its scheme on the true f (:func:`~cnet_lib.pendulum.integrator_convergence`): a line per h, a column
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
    """What optimisation leaves behind (:func:`~cnet_lib.pendulum.error_floor_rows`); ``flow_h``
    is the step (in units of Δt_data) at which the flow of G was followed with classic RK4."""
    table = format_table(rows, [("model", lambda r: odenet_label(r["trained"]), "{}"), ("one-step RMS", "one_step_rms", "{:.1e}"),
                                ("E own scheme", "error_own", "{:.2e}"), ("E flow of G", "error_flow", "{:.2e}"),
                                ("scheme on f", "error_numerical", "{:.1e}")])
    return join_rich([f"E at T_data; 'flow of G' = G integrated with classic RK4 at Δt = {flow_h:g}·Δt_data", table],
                     sep="\n\n")


def interchange_table(rows: Sequence[Mapping]) -> Rich:
    """E(A→B) / E(A→A) of :func:`~cnet_lib.pendulum.interchange_matrix`: a line per trained A, a
    column per inference scheme B."""
    wide, evaluated = _pivot(rows, "trained", "evaluated", "ratio_to_own")
    cols = [(scheme_label(b), (lambda r, b=b: r["cells"].get(b)), "{:.2f}") for b in evaluated]
    return format_table(wide, [("trained with A / run with B", lambda r: odenet_label(r["trained"]), "{}")] + cols)


def _less_accurate(row: Mapping) -> str:
    """The scheme of a :func:`~cnet_lib.pendulum.dt_data_control` row whose error on f is ``error_numerical``."""
    return row["trained"] if row["error_numerical_trained"] >= row["error_numerical_evaluated"] else row["evaluated"]


def control_table(rows: Sequence[Mapping]) -> Rich:
    """The swaps at coarser Δt_data (:func:`~cnet_lib.pendulum.dt_data_control`): E(A→B), E(A→A),
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
    """The energy gained and the error of each rollout of :func:`~cnet_lib.pendulum.energy_gained`."""
    t = f"{rows[0]['t_final']:g}"
    return format_table(rows, [
        ("rate", "rate", "{}"), ("run with", lambda r: scheme_label(r["scheme"]), "{}"), ("Δt", "dt", "{:g}"),
        ("energy at t = 0", "energy_start", "{:.3f}"), (f"energy at t = {t}", "energy_end", "{:.3f}"),
        ("energy gained", "energy_gained", "{:+.3f}"), (f"E at t = {t}", "error", "{:.2e}"),
    ], left=2)


def flow_period_table(rows: Sequence[Mapping]) -> Rich:
    """The period of each flow at two energies (:func:`~cnet_lib.pendulum.flow_periods`)."""
    e0, e1 = rows[0]["energy_from"], rows[0]["energy_to"]
    return format_table(rows, [
        ("flow of", "rate", "{}"), (f"period at energy {e0:.2f}", "period_from", "{:.3f}"),
        (f"period at energy {e1:.2f}", "period_to", "{:.3f}"), ("change", lambda r: 100 * r["change"], "{:+.1f}%"),
    ])
