"""The pendulum's adaptive steps in tables and sentences: the flows' errors and rate evaluations per tolerance
beside the fixed-step RK4 rollout of equal cost (:func:`flow_table`), the check against torchdiffeq
(:func:`torchdiffeq_table`, :func:`word_torchdiffeq`) and the verdict on each ODE-Net's flow (:func:`word_flows`).
The numbers are the study's (:mod:`cnet_lib.pendulum.adaptive_flows`); nothing here computes a measurement."""
from __future__ import annotations

import math
from typing import Mapping, Sequence

from ..pendulum.adaptive_flows import PENDULUM_RULE, PendulumRule
from ..pendulum.trained_models import PendulumConfig
from ..runtime.rich_text import Rich, paragraphs
from ..runtime.rows import format_table

__all__ = ["flow_table", "torchdiffeq_table", "word_torchdiffeq", "word_flows"]


def _flow_sentences(judged: Sequence[Mapping], cfg: PendulumConfig, rule: PendulumRule) -> list:
    """The sentences of :func:`word_flows`, one string each."""
    s = [f"E = ‖x(T_data) − x_exact(T_data)‖ at T_data = {cfg.T_data:g}. Rule, fixed before the numbers: an ODE-Net "
         f"is continuous when its flow ({rule.pair} at the tightest tolerance) has at most {rule.factor:g}× the error "
         f"of its own graph, discrete when more; converged when its error changes by at most {100 * rule.converged:g}% "
         "between the two tightest tolerances."]
    for j in judged:
        s.append(f"{j['label']}: flow E = {j['error_flow']:.2e} at tol {j['tol']:g} ({j['nfe_flow']} rate evaluations; "
                 f"{j['error_second']:.2e} at the next tolerance), own graph E = {j['error_own']:.2e} "
                 f"({j['nfe_own']} evaluations): ratio {j['ratio']:.3g}: {j['klass']}.")
    groups = {k: [j["label"] for j in judged if j["klass"] == k] for k in ("continuous", "discrete", "not converged")}
    parts = [f"{k}: {', '.join(v)}" for k, v in groups.items() if v]
    euler = next((j for j in judged if j["trained"] == "euler" and j["dt_data"] == cfg.dt_data), None)
    others = [j for j in judged if j is not euler and j["dt_data"] == cfg.dt_data]
    at = f"at Δt_data = {cfg.dt_data:g}"
    if euler is not None and euler["klass"] == "discrete" and others and all(j["klass"] == "continuous" for j in others):
        tail = f"{at} the error-controlled solver tells the Euler-trained ODE-Net from the others."
    elif euler is not None and all(j["klass"] == euler["klass"] for j in others):
        tail = f"{at} the solver does not tell the Euler-trained ODE-Net from the others: all are {euler['klass']}."
    else:
        tail = f"{at} the classes do not split along the training scheme as the question supposes."
    coarse = [j["label"] for j in judged if j["dt_data"] != cfg.dt_data and j["klass"] == "discrete"]
    if coarse:
        tail += (f" At coarser data the solver classes {', '.join(coarse)} as discrete too: trained at a larger step, "
                 "a rate absorbs its own scheme's truncation error, whatever the scheme, and its flow is no longer the "
                 "graph it was trained on.")
    s.append(f"VERDICT (one trained model per scheme; rule: {rule.pair}, factor {rule.factor:g}): " + "; ".join(parts)
             + f". So {tail}")
    return s


def word_flows(judged: Sequence[Mapping], cfg: PendulumConfig, rule: PendulumRule = PENDULUM_RULE) -> Rich:
    """The verdict on the flows (:func:`~cnet_lib.pendulum.judge_flows` rows) in sentences, quoting the numbers; the
    last, ``VERDICT:``, says which ODE-Nets are continuous and which discrete, and whether the solver tells the
    Euler-trained from the others."""
    return paragraphs(_flow_sentences(judged, cfg, rule), width=92)


def flow_table(rows: Sequence[Mapping], pair: str = "dopri5") -> Rich:
    """E and NFE per flow and tolerance of ``pair``, with the fixed-step RK4-classic rollout of equal cost."""
    cols = [("rate", "label", "{}"), ("tol", "tol", "{:g}"), ("E adaptive", "error", "{:.2e}"), ("NFE", "nfe", "{}"),
            ("rejected", "n_rejected", "{}"), ("RK4 N_t", "fixed_n_steps", "{}"), ("E RK4, equal cost", "fixed_error", "{:.2e}")]
    return format_table([r for r in rows if r["pair"] == pair], cols,
                        note=f"{pair}, rtol = atol = tol, over [0, T_data]; E = ‖x(T_data) − exact‖; RK4 N_t = round(NFE / 4)")


def torchdiffeq_table(rows: Sequence[Mapping]) -> Rich:
    """:func:`~cnet_lib.pendulum.torchdiffeq_rows` as a table."""
    cols = [("rate", "label", "{}"), ("tol", "tol", "{:g}"), ("‖ours − torchdiffeq‖", "difference", "{:.1e}"),
            ("E ours", "error", "{:.2e}"), ("E torchdiffeq", "error_torchdiffeq", "{:.2e}"), ("NFE ours", "nfe", "{}"),
            ("NFE torchdiffeq", "nfe_torchdiffeq", "{}")]
    return format_table(rows, cols, note="dopri5 in both, same rtol = atol; torchdiffeq: its own controller, RMS norm and "
                                         "error row (Shampine's), landing on T_data")


def word_torchdiffeq(rows: Sequence[Mapping]) -> Rich:
    """How far :func:`~cnet_lib.pendulum.torchdiffeq_rows`'s two solutions lie apart, in units of the tolerance, and how that distance
    scales with the tolerance: the least-squares slope of log(distance) on log(tol) over every rate (1 when the
    distance is proportional to the tolerance)."""
    pts = [(math.log10(r["tol"]), math.log10(r["difference"])) for r in rows if r["difference"] > 0]
    ratios = [r["difference"] / r["tol"] for r in rows]
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    decades = max(x for x, _ in pts) - min(x for x, _ in pts)
    return paragraphs([f"The two solutions lie {min(ratios):.0f} to {max(ratios):,.0f} times the tolerance apart, and "
                       f"the distance falls in proportion to it: slope {slope:.2f} of log(distance) on log(tol), over "
                       f"{decades:.0f} decades of tolerance, every rate pooled."])
