"""Exercises of the pendulum chapters: one explicit Runge–Kutta step, and the global error E(Δt).

* "Numerical integrators": ``rk_step(f, t, x, h, tableau)``, one explicit RK step read off a
  Butcher tableau, checked against :func:`cnet_lib.integrate` on seven tableaux (the student's
  function may not call the integrator, torchdiffeq or the pendulum's stepping functions).
* "Is a ResNet a forward-Euler integrator?": ``global_error(G, scheme, dt, t_final)``, the
  error at the final time of a rollout against the exact pendulum, checked on the true rate
  and on a small fixed network, including step counts where ``int(t_final / dt)`` is one short.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import torch

from ...core import integrate as integrate_module
from ...core.integrate import integrate
from ...core.schemes import get_scheme
from ...pendulum import convergence, odenet, path_errors, physics, rate_flows, rollouts, trained_models
from .framework import Case, Forbidden, check

STUDY = (convergence, path_errors, rollouts, rate_flows, trained_models)
"""The pendulum study's measurement modules: the exercises ask for code they hold."""

__all__ = [
    "reference_rk_step",
    "check_rk_step",
    "RK_STEP_HINTS",
    "reference_global_error",
    "check_global_error",
    "GLOBAL_ERROR_HINTS",
]

RK_STEP_HINTS = (
    "a tableau with s stages needs s evaluations of the rate, one per stage, each using the slopes "
    "of the stages before it. Keep the slopes k_0, k_1, ... in a list as you compute them.",
    "stage i is evaluated at time t + c[i]·h, at the state x + h·Σ_{j<i} a[i][j]·k_j. The tableau's "
    "entries are Fractions: convert them with float() before multiplying a tensor.",
    "the step returns x + h·Σ_i b[i]·k_i. If only the cases with the forced (time-dependent) rate "
    "fail, look at the stage times; if Euler passes but the other schemes fail, look at the a[i][j] sums.",
)

GLOBAL_ERROR_HINTS = (
    "N_t = t_final / dt steps of size dt from the exact state at t = 0 end at t_final: roll the rate "
    "out for that many steps and compare the last state with the exact one there.",
    "t_final / dt is a float: 0.3 / 0.1 is 2.9999999999999996, and int() of it is 2. Round to the "
    "nearest whole number. rollout(G, x0, scheme, dt, n_steps) returns the whole path; its last row is x_N.",
    "E is the Euclidean norm of x_N − exact_solution(t_final) over both components (ρ and v), as a "
    "Python float; x0 is torch.tensor(exact_solution(0.0)), in float64.",
)


# --------------------------------------------------------------------------- one RK step
def reference_rk_step(f: Callable, t: float, x: torch.Tensor, h: float, tableau) -> torch.Tensor:
    """x_{n+1} = x_n + h Σ_i b_i k_i with k_i = f(t + c_i h, x_n + h Σ_{j<i} a_ij k_j).

    Computed by :func:`cnet_lib.integrate` with one step over ``(t, t + h)``.
    """
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
    pend = _Rate("pendulum f(t, x) = [v, -9.81 sin ρ]", lambda t, x: torch.stack([x[..., 1], -9.81 * torch.sin(x[..., 0])], -1))
    # time-dependent and nonlinear: a step that ignores c_i or the a_ij is caught
    forced = _Rate("forced f(t, x) = [v, -sin ρ + cos 3t]", lambda t, x: torch.stack([x[..., 1], -torch.sin(x[..., 0]) + math.cos(3 * t)], -1))
    x = torch.tensor([3 * math.pi / 4, 0.0], dtype=torch.float64)
    xb = torch.tensor([[0.5, -1.0], [2.0, 0.3], [-1.0, 1.5]], dtype=torch.float64)
    cases = []
    for name in ("euler", "midpoint", "heun", "ralston", "rk3", "rk4_classic", "rk4_38"):
        tab = get_scheme(name)
        cases.append(Case((pend, 0.0, x, 0.1, tab), label=f"{name}: {pend}, t = 0, x = [3π/4, 0], h = 0.1"))
        cases.append(Case((forced, 0.7, xb, 0.25, tab), label=f"{name}: {forced}, t = 0.7, a batch of 3 states, h = 0.25"))
    return cases


def _integrators() -> list:
    """What rk_step may not call: the library's integrator and stepping functions, torchdiffeq."""
    stepping = (integrate_module.integrate, integrate_module.integrate_positions, integrate_module.stage_positions)
    rules = [
        Forbidden(functions=stepping, modules=STUDY,
                  why="cnet_lib's integrator takes the whole step for you; write the stage loop yourself."),
        Forbidden(functions=(odenet.one_step, odenet.rollout),
                  why="one_step and rollout call the integrator; write the stage loop yourself."),
    ]
    try:
        import torchdiffeq
    except ImportError:  # pragma: no cover - a dependency of cnet_lib
        return rules
    return rules + [Forbidden(modules=(torchdiffeq,), why="torchdiffeq takes the step for you; write the stage loop yourself.")]


def check_rk_step(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``rk_step(f, t, x, h, tableau)`` against the library on seven tableaux (Euler to RK4 3/8)."""
    return check(
        student_fn,
        reference_rk_step,
        _rk_cases(),
        name="rk_step",
        hints=RK_STEP_HINTS,
        hint=hint,
        checker="check_rk_step",
        forbidden=_integrators(),
        rtol=1e-12,
        atol=1e-12,
    )


# --------------------------------------------------------------------------- global error
def reference_global_error(G: Callable, scheme, dt: float, t_final: float) -> float:
    """E(Δt) = ‖x_N − x(t_final)‖₂: roll ``G`` out with ``scheme`` from the paper's x(0) for N_t = t_final/Δt steps."""
    n = int(round(t_final / dt))
    x0 = torch.tensor(physics.exact_solution(0.0), dtype=torch.float64)
    return odenet.global_error(odenet.rollout(G, x0, scheme, dt, n), t_final)


def _small_net():
    with torch.random.fork_rng(devices=[]):  # leave the caller's random state alone
        torch.manual_seed(123)
        net = odenet.ODENet(hidden=8).double().eval()
    return _Rate("a small fixed ODENet G(x) (hidden=8)", net)


def _ge_cases() -> list:
    f = _Rate("true_rate", lambda x: physics.true_rate(x))
    net = _small_net()
    rows = [
        (f, "euler", 0.01, 1.0),
        (f, "midpoint", 0.02, 1.0),
        (f, "rk4_classic", 0.05, 2.0),
        (net, "rk4_38", 0.01, 0.5),
        (net, "midpoint", 0.005, 0.25),
        # t_final / dt = 2.9999999999999996 and 6.999999999999999: int() is one step short
        (f, "rk4_classic", 0.1, 0.3),
        (net, "euler", 0.1, 0.7),
    ]
    return [Case(r, label=f"G = {r[0]}, {r[1]}, dt = {r[2]}, t_final = {r[3]}") for r in rows]


def check_global_error(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``global_error(G, scheme, dt, t_final)`` on the true rate and a small fixed network."""
    return check(
        student_fn,
        reference_global_error,
        _ge_cases(),
        name="global_error",
        hints=GLOBAL_ERROR_HINTS,
        hint=hint,
        checker="check_global_error",
        forbidden=[Forbidden(functions=(odenet.global_error,), modules=STUDY,
                             why="Compare the last state with exact_solution(t_final) yourself.")],
        rtol=1e-9,
        atol=1e-12,
    )
