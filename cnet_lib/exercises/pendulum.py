"""Exercises of the pendulum chapters: one explicit Runge–Kutta step, and the global error E(Δt).

* "Numerical integrators": ``rk_step(f, t, x, h, tableau)``, one explicit RK step read off a
  Butcher tableau, checked against :func:`cnet_lib.integrate` on several tableaux.
* "Is a ResNet a forward-Euler integrator?": ``global_error(G, scheme, dt, t_final)``, the
  error at the final time of a rollout against the exact pendulum, checked on the true rate
  and on a small fixed network.
"""
from __future__ import annotations

import math
from typing import Callable

import torch

from .core import Case, check

__all__ = [
    "reference_rk_step",
    "check_rk_step",
    "reference_global_error",
    "check_global_error",
]


# --------------------------------------------------------------------------- one RK step
def reference_rk_step(f: Callable, t: float, x: torch.Tensor, h: float, tableau) -> torch.Tensor:
    """x_{n+1} = x_n + h Σ_i b_i k_i with k_i = f(t + c_i h, x_n + h Σ_{j<i} a_ij k_j).

    Computed by :func:`cnet_lib.integrate` with one step over ``(t, t + h)``.
    """
    from ..integrate import integrate

    return integrate(f, x, tableau, 1, t_span=(t, t + h))


class _Rate:
    """A named rate f(t, x) (so the check's messages say which one failed)."""

    def __init__(self, name: str, fn: Callable):
        self.name, self.fn = name, fn

    def __call__(self, *args):
        return self.fn(*args)

    def __repr__(self) -> str:
        return self.name


def _rk_cases() -> list:
    from ..schemes import get_scheme

    pend = _Rate("pendulum f(t, x) = [v, -9.81 sin ρ]", lambda t, x: torch.stack([x[..., 1], -9.81 * torch.sin(x[..., 0])], -1))
    # time-dependent and nonlinear: a step that ignores c_i or the a_ij is caught
    forced = _Rate("forced f(t, x) = [v, -sin ρ + cos 3t]", lambda t, x: torch.stack([x[..., 1], -torch.sin(x[..., 0]) + math.cos(3 * t)], -1))
    x = torch.tensor([3 * math.pi / 4, 0.0], dtype=torch.float64)
    xb = torch.tensor([[0.5, -1.0], [2.0, 0.3], [-1.0, 1.5]], dtype=torch.float64)
    cases = []
    for name in ("euler", "midpoint", "heun", "ralston", "rk3", "rk4_classic", "rk4_38"):
        tab = get_scheme(name)
        cases.append(Case((pend, 0.0, x, 0.1, tab)))
        cases.append(Case((forced, 0.7, xb, 0.25, tab)))
    return cases


def check_rk_step(student_fn: Callable) -> bool:
    """Check ``rk_step(f, t, x, h, tableau)`` against the library on seven tableaux (Euler to RK4 3/8)."""
    return check(
        student_fn,
        reference_rk_step,
        _rk_cases(),
        name="rk_step",
        hint="loop over the stages i = 0..s-1: X_i = x + h * sum_{j<i} a[i][j] * k[j], k_i = f(t + c[i] * h, X_i); "
        "return x + h * sum_i b[i] * k[i]. The entries are Fractions: convert them with float(...).",
        rtol=1e-12,
        atol=1e-12,
    )


# --------------------------------------------------------------------------- global error
def reference_global_error(G: Callable, scheme, dt: float, t_final: float) -> float:
    """E(Δt) = ‖x_N − x(t_final)‖₂: roll ``G`` out with ``scheme`` from the paper's x(0) for N_t = t_final/Δt steps."""
    from ..pendulum import exact_solution, global_error, rollout

    n = int(round(t_final / dt))
    x0 = torch.tensor(exact_solution(0.0), dtype=torch.float64)
    return global_error(rollout(G, x0, scheme, dt, n), t_final)


def _small_net():
    from ..pendulum import ODENet

    with torch.random.fork_rng(devices=[]):  # leave the caller's random state alone
        torch.manual_seed(123)
        net = ODENet(hidden=8).double().eval()
    return _Rate("a small fixed ODENet G(x) (hidden=8)", net)


def _ge_cases() -> list:
    from ..pendulum import true_rate

    f = _Rate("true_rate", lambda x: true_rate(x))
    net = _small_net()
    return [
        Case((f, "euler", 0.01, 1.0)),
        Case((f, "midpoint", 0.02, 1.0)),
        Case((f, "rk4_classic", 0.05, 2.0)),
        Case((net, "rk4_38", 0.01, 0.5)),
        Case((net, "midpoint", 0.005, 0.25)),
    ]


def check_global_error(student_fn: Callable) -> bool:
    """Check ``global_error(G, scheme, dt, t_final)`` on the true rate and a small fixed network."""
    return check(
        student_fn,
        reference_global_error,
        _ge_cases(),
        name="global_error",
        hint="n = round(t_final / dt); x0 = torch.tensor(exact_solution(0.0)); path = rollout(G, x0, scheme, dt, n); "
        "return the 2-norm of path[-1] minus exact_solution(t_final) as a float",
        rtol=1e-9,
        atol=1e-12,
    )
