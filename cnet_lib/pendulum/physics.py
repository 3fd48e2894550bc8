"""The nonlinear pendulum of the paper's Section 3: the exact solution and the data.

The pendulum is the first-order system x = [ρ, v],

.. math::

    \\dot\\rho = v, \\qquad \\dot v = -g \\sin\\rho, \\qquad \\text{i.e.}\\quad \\dot x = f(x),

with ``g = 9.81`` (the paper writes ρ̈ = g sin ρ with g = −9.81: the same physics), and ``ρ(0) = 3π/4`` and ``v(0) = 0``
as in the paper.

*Ground truth is exact.*  With ``k = sin(ρ0/2)``, parameter ``m = k²`` (scipy's
convention: ``ellipj(u, m)`` and ``ellipk(m)`` take the parameter ``m``, not the
modulus ``k``), ``ω0 = √g`` and the quarter period ``K = K(m)``,

.. math::

    \\rho(t) = 2 \\arcsin\\big(k\\, \\mathrm{sn}(K - \\omega_0 t \\mid m)\\big), \\qquad
    v(t) = -2 k \\omega_0\\, \\mathrm{cn}(K - \\omega_0 t \\mid m),

for any amplitude ``|ρ0| < π``; the period is ``4K/ω0``.  The learned rate and its training are
in :mod:`cnet_lib.pendulum.odenet`.  Nothing here runs at import time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from ..core.validation import check_float

__all__ = ["G", "RHO0", "PendulumData", "exact_solution", "true_rate", "modified_rate", "energy", "period",
           "make_data", "n_intervals", "steps_for"]

G = 9.81
"""Gravitational acceleration g (unit pendulum length); the paper writes it as −9.81 in ρ̈ = g sin ρ."""
RHO0 = 3 * math.pi / 4
"""The paper's initial angle ρ(0) = 3π/4 (released from rest)."""


# --------------------------------------------------------------------------- exact solution
def _check_amplitude(rho0: float) -> float:
    rho0 = check_float("rho0", rho0, example=RHO0)
    if not abs(rho0) < math.pi:
        raise ValueError(
            f"rho0 = {rho0!r}: the elliptic-function solution covers oscillations |ρ0| < π "
            "(at ρ0 = π the pendulum balances upside down and the period is infinite)"
        )
    return rho0


def exact_solution(t, rho0: float = RHO0, g: float = G) -> np.ndarray:
    """The exact state ``[ρ(t), v(t)]`` of the pendulum released from rest at ``ρ0``.

    ``ρ(t) = 2 arcsin(k sn(K − ω0 t | m))`` and ``v(t) = −2 k ω0 cn(K − ω0 t | m)`` with
    ``k = sin(ρ0/2)``, ``m = k²``, ``K = K(m)``, ``ω0 = √g``.  Vectorised over ``t`` (any
    shape; a scalar gives shape ``(2,)``); returns float64 with a trailing axis of size 2
    (columns ρ, v), so ``len(t)`` times give an array of shape ``(len(t), 2)``.
    """
    from scipy.special import ellipj, ellipk  # scipy is imported only when needed

    rho0 = _check_amplitude(rho0)
    check_float("g", g, low=0, low_open=True, example=G)
    t = np.asarray(t, dtype=np.float64)
    if not np.all(np.isfinite(t)):
        raise ValueError("t must hold finite times; it contains NaN or infinity")
    k = math.sin(rho0 / 2)
    m = k * k
    K = float(ellipk(m))
    w0 = math.sqrt(g)
    # sn and cn have period 4K; reducing the argument keeps the AGM algorithm accurate.
    u = np.mod(K - w0 * t, 4 * K)
    sn, cn, _, _ = ellipj(u, m)
    rho = 2 * np.arcsin(np.clip(k * sn, -1.0, 1.0))
    v = -2 * k * w0 * cn
    return np.stack([rho, v], axis=-1)


def period(rho0: float = RHO0, g: float = G) -> float:
    """The period ``4 K(m) / √g`` of the oscillation with amplitude ``ρ0`` (``m = sin²(ρ0/2)``)."""
    from scipy.special import ellipk

    rho0 = _check_amplitude(rho0)
    g = check_float("g", g, low=0, low_open=True, example=G)
    return 4 * float(ellipk(math.sin(rho0 / 2) ** 2)) / math.sqrt(g)


def true_rate(x, g: float = G):
    """The true rate ``f(x) = [v, −g sin ρ]`` for ``x = [..., 2]`` (numpy array or torch tensor)."""
    if isinstance(x, torch.Tensor):
        return torch.stack([x[..., 1], -g * torch.sin(x[..., 0])], dim=-1)
    x = np.asarray(x, dtype=np.float64)
    return np.stack([x[..., 1], -g * np.sin(x[..., 0])], axis=-1)


def modified_rate(x: torch.Tensor, dt: float, g: float = G) -> torch.Tensor:
    """The rate ``f + (Δt/2) f'f`` whose forward-Euler step at ``Δt`` matches the exact step to second order.

    For the pendulum ``f'f = [−g sin ρ, −g v cos ρ]`` (``f'`` the Jacobian of :func:`true_rate`);
    ``x`` of shape (..., 2), a torch tensor, and the result has its shape.  An ODE-Net trained
    inside one Euler step at ``Δt_data`` converges to this rate, not to ``f``.
    """
    fprime_f = torch.stack([-g * torch.sin(x[..., 0]), -g * x[..., 1] * torch.cos(x[..., 0])], dim=-1)
    return true_rate(x, g) + dt / 2 * fprime_f


def energy(x, g: float = G):
    """The energy ``E = v²/2 − g cos ρ`` (per unit mass and length), conserved by the exact flow."""
    if isinstance(x, torch.Tensor):
        return 0.5 * x[..., 1] ** 2 - g * torch.cos(x[..., 0])
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x[..., 1] ** 2 - g * np.cos(x[..., 0])


# --------------------------------------------------------------------------- data
def n_intervals(T: float, dt: float, what: str = "T_data / Δt_data", names: tuple = ("T_data", "dt_data")) -> int:
    """The whole number ``T / dt`` (within 1e-9 relative: ``1.0 / 0.1`` is 10), or a ValueError that
    names ``what``.  ``names`` are the arguments' names in the messages about their signs."""
    check_float(names[1], dt, low=0, low_open=True, example=0.01)
    check_float(names[0], T, low=0, low_open=True, example=10.0)
    n = T / dt
    N = int(round(n))
    if N < 1 or abs(n - N) > 1e-9 * max(1.0, n):
        raise ValueError(f"{what} = {T!r} / {dt!r} = {n!r} must be a positive integer")
    return N


def steps_for(t_final: float, dt: float) -> int:
    """N_t = t_final / Δt, which must be a whole number."""
    return n_intervals(t_final, dt, "t_final / Δt (the number of steps N_t)", names=("t_final", "Δt"))


@dataclass(frozen=True)
class PendulumData:
    """States ``x_k = [ρ(t_k), v(t_k)]`` at ``t_k = k Δt_data``, k = 0..N, from the exact solution.

    ``t``: shape (N+1,); ``x``: shape (N+1, 2), float64 numpy.  :meth:`pairs` gives the
    training pairs ``(x_k, x_{k+1})`` as float64 torch tensors of shape (N, 2).
    """

    t: np.ndarray
    x: np.ndarray
    dt_data: float
    T_data: float
    rho0: float = RHO0
    g: float = G

    @property
    def n_pairs(self) -> int:
        return len(self.t) - 1

    def pairs(self, device: Optional[torch.device] = None) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.as_tensor(self.x, dtype=torch.float64, device=device)
        return x[:-1], x[1:]


def make_data(dt_data: float = 0.01, T_data: float = 10.0, rho0: float = RHO0, g: float = G) -> PendulumData:
    """Sample the exact trajectory every ``Δt_data`` over ``[0, T_data]`` (``T_data/Δt_data`` must be an integer)."""
    N = n_intervals(T_data, dt_data)
    _check_amplitude(rho0)
    check_float("g", g, low=0, low_open=True, example=G)
    t = dt_data * np.arange(N + 1)
    return PendulumData(t=t, x=exact_solution(t, rho0, g), dt_data=float(dt_data), T_data=float(T_data), rho0=rho0, g=g)
