"""Rollouts of several schemes at once: row m of the state advances with its own scheme, at one shared Δt.

The rollout tables of the pendulum chapters run every scheme at every Δt; one rollout per (scheme, Δt) pays
the per-step overhead of torch once per scheme.  :func:`multi_scheme_rollout` runs the rows of a state (M, 2)
with a scheme per row: every row evaluates as many stages as the longest scheme has, with its own tableau's
coefficients (zero where its scheme has no such entry: a stage it does not use is evaluated and weighted by
0).  An added 0 is exact, so each row is the rollout :func:`cnet_lib.integrate` computes with its own scheme, given
the same rate values: bit for bit where every row of the tableau is a single weight (Euler, midpoint), to rounding
where integrate sums equal weights first (:func:`cnet_lib.core.integrate.combination`) and a row here takes the
weights one by one (tests/test_pendulum_batched.py).
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch

from ..core.integrate import check_n_steps
from ..core.schemes import get_scheme

__all__ = ["multi_scheme_rollout"]


def _coefficients(schemes: Sequence[str], dtype) -> tuple:
    """``(a, b, stages)``: ``a[i]`` the ``(j, column (M, 1))`` of stage i's non-zero columns over all rows,
    ``b`` likewise for the weights, ``stages`` the most used stages of any row."""
    tabs = [get_scheme(s) for s in schemes]
    stages = max(max(t.used_stages) + 1 for t in tabs)

    def column(values: list):
        return torch.tensor(values, dtype=dtype).unsqueeze(1)

    a = []
    for i in range(stages):
        rows = [[float(t.a[i][j]) if i < t.stages and j < len(t.a[i]) else 0.0 for t in tabs] for j in range(i)]
        a.append([(j, column(r)) for j, r in enumerate(rows) if any(r)])
    b_rows = [[float(t.b[j]) if j < t.stages else 0.0 for t in tabs] for j in range(stages)]
    return a, [(j, column(r)) for j, r in enumerate(b_rows) if any(r)], stages


def _combine(pairs: list, ks: list) -> torch.Tensor:
    acc = pairs[0][1] * ks[pairs[0][0]]
    for j, w in pairs[1:]:
        acc = acc + w * ks[j]
    return acc


def multi_scheme_rollout(rate: Callable[[torch.Tensor], torch.Tensor], x0: torch.Tensor, schemes: Sequence[str],
                         dt: float, n_steps: int) -> torch.Tensor:
    """Row m of ``x0`` (M, 2) rolled out with ``schemes[m]`` for ``n_steps`` steps of ``dt`` (the step
    :func:`cnet_lib.pendulum.rollout` takes: ``(dt · N_t) / N_t``); returns the path (n_steps + 1, M, 2),
    without gradients.  ``rate`` maps the states of all rows (M, 2) to their rates."""
    check_n_steps(n_steps)
    a, b, stages = _coefficients(schemes, x0.dtype)
    h = (float(dt) * n_steps - 0.0) / n_steps
    x = x0
    path = [x0]
    with torch.no_grad():
        for _ in range(n_steps):
            ks: list = [None] * stages
            for i in range(stages):
                ks[i] = rate(x + h * _combine(a[i], ks) if a[i] else x)
            x = x + h * _combine(b, ks)
            path.append(x)
    return torch.stack(path)
