"""The trained rates as flows: how far each is from the true rate f and from the modified rate
f + (Δt_data/2)·f'f, the energy a rollout gains, and the period of the flow at an energy.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import torch

from ..runtime.threads import torch_threads
from .odenet import ODENetFit, rollout
from .path_errors import rms, steps_for
from .pendulum_presets import PendulumConfig
from .physics import G as G_DEFAULT, energy, exact_solution, modified_rate, true_rate

__all__ = ["euler_correction_rms", "rate_distances", "energy_gained", "flow_periods", "flow_period"]


def euler_correction_rms(cfg: PendulumConfig) -> float:
    """RMS of the Euler correction (Δt_data/2)·f'f over the training states: how far the modified rate
    (:func:`cnet_lib.pendulum.physics.modified_rate`) is from f."""
    x, _ = cfg.data().pairs()
    return rms(modified_rate(x, cfg.dt_data, cfg.g) - true_rate(x, cfg.g))


def rate_distances(models: Mapping[str, ODENetFit], cfg: PendulumConfig) -> list[dict]:
    """How close each trained G is to the true rate f and to the modified rate f + (Δt_data/2)·f'f.

    RMS over the training states.  Rows: ``trained, rms_to_f, rms_to_modified, closer_to`` ("f" or
    "the modified rate") and ``factor`` (the larger distance over the smaller one).
    """
    x, _ = cfg.data().pairs()
    f, modified = true_rate(x, cfg.g), modified_rate(x, cfg.dt_data, cfg.g)
    out = []
    with torch.no_grad():
        for a, r in models.items():
            g_x = r.model(x)
            d_f, d_mod = rms(g_x - f), rms(g_x - modified)
            out.append(dict(trained=a, rms_to_f=d_f, rms_to_modified=d_mod, closer_to="f" if d_f < d_mod else "the modified rate",
                            factor=max(d_f, d_mod) / min(d_f, d_mod)))
    return out


def energy_gained(rates: Mapping[str, object], scheme: str, dt: float, cfg: PendulumConfig) -> list[dict]:
    """Each rate (name -> G(x), e.g. ``true_rate`` or a trained ODE-Net) rolled out with ``scheme`` at
    ``dt`` over [0, T_data] from the exact initial state.

    Rows: ``rate, scheme, dt, n_steps, t_final`` (T_data), ``energy_start, energy_end,
    energy_gained`` (energy_end − energy_start, energy v²/2 − g cos ρ) and ``error`` (E at T_data).
    """
    N = steps_for(cfg.T_data, dt)
    x0 = torch.tensor(exact_solution(0.0, cfg.rho0, cfg.g), dtype=torch.float64)
    e0 = float(energy(x0.numpy(), cfg.g))
    out = []
    with torch_threads(1):
        for name, rate in rates.items():
            path = rollout(rate, x0, scheme, dt, N).numpy()
            e1 = float(energy(path[-1], cfg.g))
            out.append(dict(rate=name, scheme=scheme, dt=dt, n_steps=N, t_final=cfg.T_data, energy_start=e0, energy_end=e1, energy_gained=e1 - e0,
                            error=float(np.linalg.norm(path[-1] - exact_solution(cfg.T_data, cfg.rho0, cfg.g)))))
    return out


def flow_periods(rates: Mapping[str, object], energies: Sequence[float], g: float = G_DEFAULT) -> list[dict]:
    """The period of each rate's flow (:func:`flow_period`) at two energies.

    Rows: ``rate, energy_from, energy_to, period_from, period_to, change`` with change =
    period_to / period_from − 1.
    """
    e0, e1 = energies
    out = []
    for name, rate in rates.items():
        p0, p1 = flow_period(rate, e0, g), flow_period(rate, e1, g)
        out.append(dict(rate=name, energy_from=e0, energy_to=e1, period_from=p0, period_to=p1, change=p1 / p0 - 1))
    return out


def flow_period(rate, energy_level: float, g: float = G_DEFAULT, dt: float = 2e-3, t_max: float = 6.0) -> float:
    """Period of the flow of ``rate`` (G or the true f) from rest at the angle with energy ``energy_level``.

    Starts at ρ0 = arccos(−E/g), v = 0 (so E = v²/2 − g cos ρ = ``energy_level``), integrates with
    classic RK4 at step ``dt`` and returns twice the time between the first two sign changes
    of v (the time between two turning points is half a period).  NaN if not found by ``t_max``.
    """
    rho0 = math.acos(max(-1.0, min(1.0, -energy_level / g)))
    x0 = torch.tensor([rho0, 0.0], dtype=torch.float64)
    with torch_threads(1):
        v = rollout(rate, x0, "rk4_classic", dt, int(round(t_max / dt)))[:, 1].numpy()
    s = np.nonzero(v[1:-1] * v[2:] < 0)[0] + 1  # v changes sign between samples s and s+1
    if len(s) < 2:
        return math.nan
    cross = [(k + v[k] / (v[k] - v[k + 1])) * dt for k in s[:2]]  # linear interpolation of the zero
    return 2 * (cross[1] - cross[0])
