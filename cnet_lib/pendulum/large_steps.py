"""The pendulum's ODE-Nets at steps beyond the chapters' grid: two sentences of the paper about its Figure 3.

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

__all__ = ["LARGE_H", "SLOPE_H", "large_step_rows", "interchange_at_large_steps", "large_step_slopes"]

LARGE_H = (4.0, 5.0, 8.0, 10.0, 20.0, 25.0)
"""The steps, in units of Δt_data, of the large-step rows: all above 2·Δt_data, the range of the paper's sentence on
the interchange, and each a whole number of steps over [0, T_data]."""

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
