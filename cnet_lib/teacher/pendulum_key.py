"""The answer key of the first three chapters' exercises: references and hidden cases (the teacher's only).

Each ``reference_<name>`` computes what the student's ``<name>`` must return; each ``hidden_<name>(rng)`` draws
the hidden cases of one submission from ``rng`` (a :class:`random.Random` seeded per student and exercise),
as recipes (:mod:`cnet_lib.book.exercises.recipes`), built to catch the exercises' named near misses (``catches``; their
words and hints: the exercises' ``near_misses``): a slope from two points or the mean of neighbours' slopes, stage
times t + c_i or t, 2s evaluations of the rate for an embedded pair or its estimate's sign flipped, t_final/dt
truncated or rounded up where it lands a hair below, or above, a whole number.
"""
from __future__ import annotations

import math
import random

import torch

from ..book.exercises.how_to_use import observed_order_cases
from ..book.exercises.pendulum_exercises import EMBEDDED_PAIRS, NODE_MISSES, SCHEMES, embedded_misses, global_error_cases
from ..book.exercises.recipes import recipe
from ..core.integrate import integrate
from ..pendulum import odenet, physics

__all__ = ["reference_observed_order", "hidden_observed_order", "reference_rk_step", "hidden_rk_step",
           "reference_embedded_step", "hidden_embedded_step", "reference_global_error", "hidden_global_error",
           "ratio_rows"]


# --------------------------------------------------------------------------- observed order
def reference_observed_order(dts, errors) -> float:
    """Least-squares slope of log(error) against log(Δt): the observed order r."""
    if len(dts) != len(errors) or len(dts) < 2:
        raise ValueError("need at least two (Δt, error) pairs of equal length")
    lx = [math.log(float(d)) for d in dts]
    ly = [math.log(float(e)) for e in errors]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((x - mx) ** 2 for x in lx)
    sxy = sum((x - mx) * (y - my) for x, y in zip(lx, ly))
    return sxy / sxx


def hidden_observed_order(rng: random.Random) -> list:
    """Exact power laws of two drawn orders, wobbly errors and shuffled arrays, on drawn step sizes."""
    n = rng.randint(4, 6)
    dts = [round(rng.uniform(0.05, 0.5), 4) / 2 ** k for k in range(n)]
    wobbly = [round(rng.uniform(0.02, 0.3), 4) / 2 ** k for k in range(n + 1)]
    shuffled = rng.sample(range(n), n)
    if shuffled == sorted(shuffled) or shuffled == sorted(shuffled, reverse=True):
        shuffled = shuffled[1:] + shuffled[:1]
    return observed_order_cases(dts, tuple(rng.sample((1, 2, 3, 4), 2)), wobbly, shuffled)


# --------------------------------------------------------------------------- one RK step, an embedded pair
def reference_rk_step(f, t: float, x: torch.Tensor, h: float, tableau) -> torch.Tensor:
    """x_{n+1} = x_n + h Σ_i b_i k_i with k_i = f(t + c_i h, x_n + h Σ_{j<i} a_ij k_j), by
    :func:`cnet_lib.integrate` with one step over ``(t, t + h)``."""
    return integrate(f, x, tableau, 1, t_span=(t, t + h))


def reference_embedded_step(f, t: float, x: torch.Tensor, h: float, tableau, b_hat) -> tuple:
    """``(x + h Σ b_i k_i, h Σ (b_i − b̂_i) k_i)`` from the s stages k_i of ``tableau``, each evaluated once."""
    if len(b_hat) != tableau.stages:
        raise ValueError(f"b_hat has {len(b_hat)} weights, the tableau {tableau.stages} stages")
    k = []
    for i in range(tableau.stages):
        xi = x
        for j in range(i):
            if tableau.a[i][j] != 0:
                xi = xi + h * float(tableau.a[i][j]) * k[j]
        k.append(f(t + float(tableau.c[i]) * h, xi))
    x_next = x + h * sum(float(b) * ki for b, ki in zip(tableau.b, k))
    return x_next, h * sum(float(b - bh) * ki for b, bh, ki in zip(tableau.b, b_hat, k))


def _state(rng: random.Random) -> dict:
    rows = rng.randint(1, 4)
    data = [[round(rng.uniform(-2.5, 2.5), 6), round(rng.uniform(-2, 2), 6)] for _ in range(rows)]
    return {"$": "tensor", "data": data[0] if rows == 1 else data}


def _rate(rng: random.Random, forced: bool, counted: bool = False) -> dict:
    if forced:
        return {"$": "rate", "name": "forced", "omega": round(rng.uniform(1.0, 6.0), 3), "counted": counted}
    return {"$": "rate", "name": "pendulum", "g": round(rng.uniform(3.0, 15.0), 3), "counted": counted}


def hidden_rk_step(rng: random.Random) -> list:
    """Six steps of drawn schemes on drawn states, times and step sizes; four on a forced rate with c ≠ 0."""
    cases = []
    for k in range(6):
        forced = k < 4
        name = rng.choice(SCHEMES[1:] if forced else SCHEMES)
        t, h = round(rng.uniform(0.0, 2.0), 4), round(rng.uniform(0.05, 0.5), 4)
        cases.append(recipe(f"{name}: a drawn {'forced' if forced else 'pendulum'} rate, t = {t}, h = {h}",
                            _rate(rng, forced), t, _state(rng), h, {"$": "scheme", "name": name},
                            catches=NODE_MISSES if forced else ()))
    return cases


def hidden_embedded_step(rng: random.Random) -> list:
    """Five drawn (scheme, b̂) pairs on drawn rates (their evaluations counted), states, times and step sizes."""
    cases = []
    for k in range(5):
        name, b_hat = rng.choice(EMBEDDED_PAIRS[:-1]) if k < 4 else EMBEDDED_PAIRS[-1]
        t, h = round(rng.uniform(0.0, 2.0), 4), round(rng.uniform(0.05, 0.4), 4)
        cases.append(recipe(f"{name} with b̂ = ({', '.join(b_hat)}): t = {t}, h = {h}", _rate(rng, k % 2 == 0, True), t,
                            _state(rng), h, {"$": "scheme", "name": name}, {"$": "fractions", "items": list(b_hat)},
                            catches=embedded_misses(name, b_hat)))
    return cases


# --------------------------------------------------------------------------- global error
def reference_global_error(G, scheme, dt: float, t_final: float) -> float:
    """E(Δt) = ‖x_N − x(t_final)‖₂: roll ``G`` out with ``scheme`` from the paper's x(0) for N_t = round(t_final/Δt) steps."""
    n = int(round(t_final / dt))
    x0 = torch.tensor(physics.exact_solution(0.0), dtype=torch.float64)
    return odenet.global_error(odenet.rollout(G, x0, scheme, dt, n), t_final)


def ratio_rows(side: str, rng: random.Random, count: int) -> list:
    """``count`` drawn ``(dt, t_final)`` whose t_final/dt is exactly whole (``"exact"``: dt = 2^-k), a hair below a
    whole number (``"below"``) or a hair above it (``"above"``)."""
    out = []
    while len(out) < count:
        if side == "exact":
            dt = 2.0 ** -rng.randint(2, 6)
            out.append((dt, rng.randint(3, 40) * dt))
            continue
        dt = rng.choice((0.1, 0.2, 0.3, 0.7, 0.01, 0.02, 0.05))
        n = rng.randint(2, 40)
        t_final = round(n * dt, 10)
        if t_final <= 6 and (t_final / dt > n) == (side == "above") and t_final / dt != n and (dt, t_final) not in out:
            out.append((dt, t_final))
    return out


def hidden_global_error(rng: random.Random) -> list:
    """Six rollouts: two whose t_final/dt is exactly whole, two a hair below, two a hair above."""
    rows = []
    for side in ("exact", "below", "above"):
        for dt, t_final in ratio_rows(side, rng, 2):
            g = "true_rate" if rng.random() < 0.5 else rng.randint(0, 10_000)
            rows.append((g, rng.choice(SCHEMES), dt, t_final))
    return global_error_cases(rows)
