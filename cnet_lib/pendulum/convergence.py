"""The exact pendulum and the numerical integrators on its true rate (the chapter "Numerical
integrators", and the reference curves of the ODE-Net chapter): rollouts, local and global errors, the
fitted orders.

Tables are lists of dicts (one row per measurement, column names in the docstrings), so a reader can
display them as tables (:mod:`cnet_lib.report.pendulum_report`), filter them with a comprehension or hand them to
pandas.  The models are tiny, so everything runs on the CPU in float64 with one torch thread.
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping, Optional, Sequence

import numpy as np
import torch

from ..core.integrate import integrate
from ..core.schemes import get_scheme
from ..runtime.rows import find_row
from ..runtime.threads import torch_threads
from .odenet import rollout
from .path_errors import final_error, steps_for, thin_indices
from .physics import RHO0, G as G_DEFAULT, energy, exact_solution, period, true_rate
from .scheme_batches import multi_scheme_rollout

__all__ = ["swing_facts", "true_rate_rollout", "true_rate_rollouts", "local_errors", "local_slopes",
           "integrator_convergence", "fit_slope", "fit_slopes", "halving_ratios"]


def swing_facts(t_final: float = 10.0, n_points: int = 2001, rho0: float = RHO0, g: float = G_DEFAULT) -> dict:
    """The numbers that describe the paper's swing, as a flat dict.

    ``g, rho0``; ``period`` (4K(m)/√g) and ``small_angle_period`` (2π/√g, the period of a
    tiny swing); ``longer_percent`` = 100 (period / small_angle_period − 1); ``energy`` (v²/2 −
    g cos ρ at t = 0) and ``energy_drift``, its largest change along the exact solution sampled at
    ``n_points`` times in [0, t_final] (round-off: the exact flow conserves it).
    """
    x = exact_solution(np.linspace(0.0, t_final, n_points), rho0, g)
    e = energy(x, g)
    T, T_small = period(rho0, g), 2 * math.pi / math.sqrt(g)
    return dict(g=g, rho0=rho0, period=T, small_angle_period=T_small,
                longer_percent=100 * (T / T_small - 1), energy=float(e[0]), energy_drift=float(np.abs(e - e[0]).max()))


# --------------------------------------------------------------------------- integrators on the true rate
def true_rate_rollout(
    scheme: str,
    dt: float,
    t_final: float = 10.0,
    rho0: float = RHO0,
    g: float = G_DEFAULT,
    max_points: Optional[int] = None,
) -> dict:
    """``scheme`` on the true rate f from the exact initial state, ``N_t = t_final / Δt`` steps of ``Δt``.

    Returns a dict: ``scheme, dt, n_steps, t_final, g``; ``error`` (E = ‖x_N − x(t_final)‖₂);
    ``energy_start``, ``energy_end`` and ``over_the_top`` (whether the energy ever exceeds g, the
    energy of the pendulum balanced upside down: beyond it the pendulum rotates); ``max_abs_rho``
    (the largest |ρ| on the path); ``t`` and ``x``, the path (every state, or about
    ``max_points`` of them with the last one).
    """
    N = steps_for(t_final, dt)
    x0 = torch.tensor(exact_solution(0.0, rho0, g), dtype=torch.float64)
    with torch_threads(1):
        path = rollout(lambda x: true_rate(x, g), x0, scheme, dt, N).numpy()
    e = energy(path, g)
    idx = thin_indices(N, max_points)
    return dict(scheme=scheme, dt=dt, n_steps=N, t_final=t_final, g=g,
                error=float(np.linalg.norm(path[-1] - exact_solution(t_final, rho0, g))),
                energy_start=float(e[0]), energy_end=float(e[-1]), over_the_top=bool((e > g).any()),
                max_abs_rho=float(np.abs(path[:, 0]).max()), t=dt * idx, x=path[idx])


def true_rate_rollouts(schemes: Sequence[str], dts: Sequence[float], t_final: float = 10.0,
                       max_points: int = 600) -> list[dict]:
    """:func:`true_rate_rollout` for every scheme and Δt (paths thinned to ``max_points``): one row each."""
    return [true_rate_rollout(s, dt, t_final, max_points=max_points) for s in schemes for dt in dts]


def local_errors(schemes: Sequence[str], dts: Sequence[float], t_start: float = 1.0, rho0: float = RHO0,
                 g: float = G_DEFAULT) -> list[dict]:
    """The local error of one step of each scheme from the exact state x(t_start), for each Δt.

    Rows: ``scheme, t_start, dt, error`` with error = ‖step(f, x(t_start), Δt) − x(t_start + Δt)‖₂.
    """
    x_start = torch.tensor(exact_solution(t_start, rho0, g), dtype=torch.float64)
    rows = []
    for s in schemes:
        for d in dts:
            x1 = integrate(lambda t, x: true_rate(x, g), x_start, s, 1, (t_start, t_start + d)).numpy()
            rows.append(dict(scheme=s, t_start=t_start, dt=d, error=float(np.linalg.norm(x1 - exact_solution(t_start + d, rho0, g)))))
    return rows


def local_slopes(rows: Sequence[Mapping]) -> list[dict]:
    """The slope of log(local error) against log Δt for each scheme of :func:`local_errors` rows, every
    point used.  Rows: ``scheme, slope, expected`` (order + 1: a scheme of order r has local error O(Δt^(r+1)))."""
    out = []
    for s in dict.fromkeys(r["scheme"] for r in rows):
        rs = [r for r in rows if r["scheme"] == s]
        out.append(dict(scheme=s, slope=fit_slope([r["dt"] for r in rs], [r["error"] for r in rs]),
                        expected=get_scheme(s).order + 1))
    return out


def integrator_convergence(
    schemes: Sequence[str] = ("euler", "midpoint", "rk4_classic", "rk4_38"),
    h_values: Sequence[float] = (1 / 8, 1 / 4, 1 / 2, 1.0),
    dt_data: float = 0.01,
    t_final: float = 1.0,
    rho0: float = RHO0,
    g: float = G_DEFAULT,
) -> list[dict]:
    """E(Δt) of each numerical integrator on the true rate, Δt = h·Δt_data, at ``t_final``.

    Rows: ``scheme, h, dt, n_steps, t_final, error``.
    """
    schemes = list(schemes)
    for s in schemes:
        get_scheme(s)  # an unknown name is refused before any work
    x0 = torch.tensor(exact_solution(0.0, rho0, g), dtype=torch.float64).expand(len(schemes), 2).clone()
    rate = lambda x: true_rate(x, g)  # noqa: E731
    found = {}
    with torch_threads(1):
        for h in h_values:  # the schemes of one Δt together (multi_scheme_rollout): one row each
            dt = h * dt_data
            N = steps_for(t_final, dt)
            errs = final_error(multi_scheme_rollout(rate, x0, schemes, dt, N), t_final, rho0, g)
            for s, e in zip(schemes, errs):
                found[s, h] = dict(scheme=s, h=h, dt=dt, n_steps=N, t_final=t_final, error=float(e))
    return [found[s, h] for s in schemes for h in h_values]


def fit_slope(dts: Sequence[float], errors: Sequence[float]) -> float:
    """Least-squares slope of log E against log Δt: the observed order r in E ≈ C Δt^r."""
    lx, ly = np.log(np.asarray(dts, float)), np.log(np.asarray(errors, float))
    if len(lx) < 2:
        return math.nan
    return float(np.polyfit(lx, ly, 1)[0])


def fit_slopes(
    rows: Iterable[Mapping],
    h_range: Sequence[float],
    key: str = "scheme",
    min_error: float = 1e-12,
    max_error: float = 1.0,
) -> list[dict]:
    """One fitted slope per ``key`` over the rows with ``h_range[0] <= h <= h_range[1]``.

    Points outside ``[min_error, max_error]`` are left out: below, round-off dominates; above,
    the error is no longer small and Δt is outside the asymptotic range.  Rows: ``<key>, slope,
    n_points, dt_min, dt_max``.
    """
    lo, hi = h_range
    groups: dict = {}
    for r in rows:
        if lo - 1e-12 <= r["h"] <= hi + 1e-12 and min_error <= r["error"] <= max_error:
            groups.setdefault(r[key], []).append(r)
    out = []
    for k, rs in groups.items():
        out.append(
            dict(
                **{key: k},
                slope=fit_slope([r["dt"] for r in rs], [r["error"] for r in rs]),
                n_points=len(rs),
                dt_min=min(r["dt"] for r in rs),
                dt_max=max(r["dt"] for r in rs),
            )
        )
    return out


def halving_ratios(rows: Sequence[Mapping], h: float = 1.0) -> list[dict]:
    """What halving the step does to the global error of each scheme of :func:`integrator_convergence` rows.

    Rows: ``scheme, dt, ratio, expected`` with ratio = E(Δt) / E(Δt/2) at Δt = h·Δt_data and
    expected = 2^r (r the scheme's order), what the ratio tends to in the asymptotic range.
    """
    out = []
    for s in dict.fromkeys(r["scheme"] for r in rows):
        full, half = find_row(rows, scheme=s, h=h), find_row(rows, scheme=s, h=h / 2)
        out.append(dict(scheme=s, dt=full["dt"], ratio=full["error"] / half["error"], expected=2 ** get_scheme(s).order))
    return out
