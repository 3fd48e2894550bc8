"""The pendulum's ODE-Nets at steps beyond the chapters' grid: two sentences of the paper about its Figure 4 (Sec. 3.3).

The chapters run the trained rates G up to Δt = 8·Δt_data.  The paper says two things about larger steps: the
midpoint-trained model, run with RK4, improves "by orders of magnitude for Δt > 2Δt_data", and at large steps the
models' error curves take the slopes of the baseline, the same scheme on the true rate.  Numbers only (the rules
that word them are the book's, :mod:`cnet_lib.book.paper_claims`):

* :func:`large_step_rows`: every trained G rolled out with every inference scheme at Δt = h·Δt_data for h in
  :data:`LARGE_H`, and the numerical integrators on the true rate at the same steps (``trained = None``);
* :func:`interchange_at_large_steps`: the model trained with one scheme run with another, as a ratio to its own
  scheme's error, per h;
* :func:`large_step_slopes`: the least-squares slope of each model's own-scheme error over :data:`SLOPE_H`, beside the
  baseline's over the same steps.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from ..runtime.rows import find_row
from .convergence import fit_slope, integrator_convergence
from .pendulum_presets import PendulumConfig
from .rollouts import rollout_rows
from .trained_models import ODENetFit

__all__ = ["LARGE_H", "SLOPE_H", "admitted_steps", "large_step_rows", "interchange_at_large_steps", "large_step_slopes"]


def admitted_steps(dt_data: float = 0.01, T_data: float = 10.0, above: float = 2.0, up_to: float = 25.0,
                   unit: float = 0.5) -> tuple:
    """Every step h (in units of Δt_data) with ``above`` < h ≤ ``up_to`` that the grid admits: a multiple of ``unit``
    (the half step, Δt = 0.5·Δt_data, of the paper's Figure 3(b) and of the chapters' grids) that divides [0, T_data]
    into a whole number of steps, so that E is measured at T_data itself."""
    out = []
    k = int(above / unit) + 1
    while k * unit <= up_to + 1e-12:
        h = k * unit
        n = T_data / (h * dt_data)
        if abs(n - round(n)) < 1e-9:
            out.append(float(h))
        k += 1
    return tuple(out)


LARGE_H = admitted_steps()
"""The steps, in units of Δt_data, of the large-step rows: every step the grid admits above 2·Δt_data, the range of
the paper's sentence on the interchange (:func:`admitted_steps`: 2.5, 4, 5, 8, 10, 12.5, 20 and 25)."""

SLOPE_H = (10.0, 20.0, 25.0)
"""The steps of :func:`large_step_slopes`: Δt ≥ 10·Δt_data, the paper's "Δt ≳ 10" read in units of Δt_data.  (Below
it the trained models' error is their training floor, which is flat, and no slope is the scheme's.)"""


def large_step_rows(models: Mapping[str, ODENetFit], cfg: PendulumConfig,
                    h_values: Sequence[float] = LARGE_H) -> list[dict]:
    """Rows ``trained, evaluated, h, dt, error`` (E at T_data) of every model with every inference scheme of
    ``cfg`` at ``h_values``, then the baseline: each scheme on the true rate (``trained`` None)."""
    rows = rollout_rows(models, cfg.eval_schemes, h_values, cfg)
    base = integrator_convergence(cfg.eval_schemes, h_values, cfg.dt_data, cfg.T_data, cfg.rho0, cfg.g)
    return [{k: r[k] for k in ("trained", "evaluated", "h", "dt", "error")} for r in rows] + \
        [{"trained": None, "evaluated": r["scheme"], "h": r["h"], "dt": r["dt"], "error": r["error"]} for r in base]


def interchange_at_large_steps(rows: Sequence[dict], trained: str = "midpoint", evaluated: str = "rk4_38") -> list[dict]:
    """The model trained with ``trained`` run with ``evaluated`` at every h of ``rows``: ``h, own, other, ratio`` with
    ratio = E(trained → evaluated) / E(trained → trained) (below 1: the other scheme is better)."""
    out = []
    for h in sorted({r["h"] for r in rows if r["trained"] == trained}):
        own = find_row(rows, trained=trained, evaluated=trained, h=h)["error"]
        other = find_row(rows, trained=trained, evaluated=evaluated, h=h)["error"]
        out.append({"h": h, "own": own, "other": other, "ratio": other / own})
    return out


def large_step_slopes(rows: Sequence[dict], h_values: Sequence[float] = SLOPE_H) -> list[dict]:
    """Per trained model: the fitted slope of log E against log Δt of its own-scheme error over ``h_values``, the
    baseline's (its scheme on the true rate) over the same steps, and their difference."""
    out = []
    rows = [r for r in rows if any(abs(r["h"] - h) < 1e-12 for h in h_values)]
    for trained in dict.fromkeys(r["trained"] for r in rows if r["trained"] is not None):
        own = sorted((r for r in rows if r["trained"] == trained and r["evaluated"] == trained), key=lambda r: r["h"])
        base = sorted((r for r in rows if r["trained"] is None and r["evaluated"] == trained), key=lambda r: r["h"])
        s_own = fit_slope([r["dt"] for r in own], [r["error"] for r in own])
        s_base = fit_slope([r["dt"] for r in base], [r["error"] for r in base])
        out.append({"trained": trained, "slope": s_own, "baseline": s_base, "difference": s_own - s_base,
                    "h": [r["h"] for r in own]})
    return out
