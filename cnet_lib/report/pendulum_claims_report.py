"""What the pendulum chapters say about their numbers, worded from them.

*Is a ResNet a forward-Euler integrator?* argues what the trained ODE-Nets do (the dip, the modified
rate, the floor, the interchange, the control at coarser data); *Numerical integrators* what the fitted
slopes are.  Whether a run shows it depends on the preset (its step sizes) and on training, so the
chapters' prose explains the prediction and each of these functions states, from the rows a chapter has
just printed, whether this run shows it: a sentence that quotes the numbers and the threshold it was
judged by (the module's constants).  Nothing here computes a measurement.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

from ..core.schemes import get_scheme
from ..pendulum.odenet import odenet_label
from ..runtime.rich_text import Rich, paragraphs
from ..runtime.rows import find_row, select_rows
from ..runtime.vocabulary import scheme_label

__all__ = ["SAME_FIT", "FALLS_APART", "STEADY", "SEVERAL", "FLAT", "SAME_FLOOR", "ORDERS", "BREAKS", "SMALL_COST",
           "MANY_TIMES", "SAME_GAIN", "ORDER_OFF", "ORDER_ONE", "times", "span", "word_orders", "word_long_window", "word_fit", "word_dip", "word_rate_distances", "word_odenet_curves",
           "word_error_floor", "word_interchange", "word_control", "word_energy"]

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
    """Whether every fitted slope (:func:`~cnet_lib.pendulum.fit_slopes` rows, keyed by ``scheme``) rounds to
    its scheme's order: the orders of the tableaux, measured."""
    got = [(r["scheme"], r["slope"], get_scheme(r["scheme"]).order) for r in slopes]
    listed = ", ".join(f"{scheme_label(s)} {v:.2f}" for s, v, _ in got)
    ok = all(round(v) == o for _, v, o in got)
    return paragraphs([f"Fitted slopes: {listed}. " + (
        "Each rounds to its scheme's order (" + ", ".join(str(o) for *_, o in got) + "): the orders of the tableaux, "
        "measured." if ok else "Not every slope rounds to its scheme's order: these step sizes are not all in the "
        "asymptotic range.")])


def word_long_window(rows: Sequence[Mapping], slopes: Sequence[Mapping]) -> Rich:
    """Over a long window (:func:`~cnet_lib.pendulum.integrator_convergence` rows and their fitted slopes):
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


def times(x: float) -> str:
    """A ratio as a sentence says it: two decimals below 10 (``0.81``), one below 100 (``20.3``), three significant
    digits with thousands separators above (``1,540``, ``80,500``): no false precision, no ``80466``."""
    if not math.isfinite(x):
        return "infinitely many"
    if abs(x) < 10:
        return f"{x:.2f}"
    if abs(x) < 100:
        return f"{x:.1f}"
    digits = int(math.floor(math.log10(abs(x)))) - 2
    return f"{round(x, -digits):,.0f}"


def span(lo: float, hi: float, fmt=times) -> str:
    """``lo to hi``, or the one number when both print the same (never "715 to 715")."""
    a, b = fmt(lo), fmt(hi)
    return a if a == b else f"{a} to {b}"


def word_fit(summary: Sequence[Mapping]) -> Rich:
    """Whether the trained models fit the data about equally well (:func:`~cnet_lib.pendulum.training_summary`
    rows): their final losses within :data:`SAME_FIT` of each other."""
    losses = [r["final_loss"] for r in summary]
    f = _factor(losses)
    head = f"Final training losses from {min(losses):.2e} to {max(losses):.2e}, a factor {f:.1f} apart: "
    if f <= SAME_FIT:
        return paragraphs([head + "all the models fit the data about equally well (within a factor "
                           f"{SAME_FIT:g}); by the training loss alone there is nothing to choose between them."])
    return paragraphs([head + f"more than a factor {SAME_FIT:g}, so the models do not fit the data equally well in "
                       "this run."])


def word_dip(dip: Sequence[Mapping]) -> Rich:
    """The dip (:func:`~cnet_lib.pendulum.dip_rows` rows): whether the Euler-trained model's error grows by at
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
    every other G closer to f (:func:`~cnet_lib.pendulum.rate_distances` rows)."""
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
    (:func:`~cnet_lib.pendulum.odenet_convergence` rows ``trained, h, error``): ODE-Net(Euler) a V with its tip
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
            s.append(f"{odenet_label(a)}: errors from {min(errors):.1e} to {max(errors):.1e} over every step, "
                     + (f"flat (within a factor {times(_factor(errors))})." if flat else
                        f"a factor {times(_factor(errors))} apart: not flat within {FLAT:g}."))
    return paragraphs(s)


def word_error_floor(rows: Sequence[Mapping], trained: str = "rk4_38") -> Rich:
    """For the model trained with ``trained`` (:func:`~cnet_lib.pendulum.error_floor_rows` rows): whether its
    own-scheme error is the error of G's exact flow (within :data:`SAME_FLOOR`) and how far it lies above the
    scheme's truncation error on f (:data:`ORDERS`: orders of magnitude)."""
    r = find_row(rows, trained=trained)
    same = max(r["error_own"], r["error_flow"]) / min(r["error_own"], r["error_flow"]) <= SAME_FLOOR
    equal = f"{r['error_own']:.2e}" == f"{r['error_flow']:.2e}"
    above = r["error_own"] / r["error_numerical"]
    verdict = ("the same to three digits: the floor." if equal else
               f"the same within a factor {SAME_FLOOR:g}: the floor." if same else "not the same in this run.")
    return paragraphs([
        f"{odenet_label(trained)}: with its own scheme E = {r['error_own']:.2e}, along the exact flow of its G "
        f"{r['error_flow']:.2e}: {verdict}",
        f"That is about {times(above)} times {scheme_label(trained)}'s truncation error on f at the same step"
        + (" (orders of magnitude above it)." if above >= ORDERS else ".")])


def word_interchange(matrix: Sequence[Mapping]) -> Rich:
    """The interchange at one step (:func:`~cnet_lib.pendulum.interchange_matrix` rows): whether the
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
    """The swaps at coarser Δt_data (:func:`~cnet_lib.pendulum.dt_data_control` rows): at the finest Δt_data
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
    :data:`SAME_GAIN`, :func:`~cnet_lib.pendulum.energy_gained` rows) and whether its period grows more slowly
    with the energy than the true one (:func:`~cnet_lib.pendulum.flow_periods` rows)."""
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
