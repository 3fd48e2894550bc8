"""The trained ODE-Nets rolled out with every scheme (the paper's Figures 3 and 4): the rollouts' rows and
what the chapter reads from them (the dip, the interchange matrix, the error floor, the coarse-Δt_data
control).

Rows are lists of dicts (one row per measurement, column names in the docstrings); their tables and sentences
are the reporting layer's (:mod:`cnet_lib.report.pendulum_report`).  The models and the
inference schemes of one Δt are rolled out together (:class:`StackedRate`,
:func:`cnet_lib.pendulum.multi_scheme_rollout`), on the CPU in float64 with one torch thread.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Mapping, Optional, Sequence

import torch
from torch import nn

from ..runtime.rows import find_row
from ..runtime.settings import Settings
from ..runtime.threads import torch_threads
from .convergence import integrator_convergence
from .odenet import ODENet, ODENetFit
from .path_errors import final_error, steps_for, thin_indices
from .pendulum_presets import PendulumConfig
from .physics import exact_solution
from .scheme_batches import multi_scheme_rollout
from .trained_models import train_models

__all__ = ["StackedRate", "rollout_rows", "dip_rows", "interchange_matrix", "odenet_convergence",
           "error_floor_rows", "dt_data_control", "summary"]


class StackedRate(nn.Module):
    """Several ODE-Nets evaluated at once: state ``x`` of shape (M, 2) -> ``[G_m(x_m)]`` (M, 2).

    Rolling M models out together costs about as much as rolling out one (the work is tiny,
    the per-call overhead is what counts).
    """

    def __init__(self, models: Sequence[ODENet]):
        super().__init__()
        with torch.no_grad():
            self.W = torch.stack([m.inner.weight for m in models]).double()  # (M, H, 2)
            self.b = torch.stack([m.inner.bias for m in models]).double().unsqueeze(-1)  # (M, H, 1)
            self.A = torch.stack([m.outer.weight for m in models]).double()  # (M, 2, H)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.baddbmm(self.b, self.W, x.unsqueeze(-1))
        return torch.bmm(self.A, torch.tanh(z)).squeeze(-1)


def rollout_rows(
    models: Mapping[str, ODENetFit],
    eval_schemes: Sequence[str],
    h_values: Sequence[float],
    cfg: PendulumConfig,
    keep_paths: bool = False,
    max_points: int = 600,
) -> list[dict]:
    """Every trained G rolled out with every inference scheme at Δt = h·Δt_data over [0, T_data].

    Rows: ``trained, evaluated, h, dt, n_steps, error`` (E at t_final = T_data), plus ``t`` and
    ``x`` (the path, thinned to at most ``max_points`` points) when ``keep_paths``.  The models
    and inference schemes of one Δt are rolled out together (:class:`StackedRate`,
    :func:`cnet_lib.pendulum.multi_scheme_rollout`).
    """
    names = list(models)
    dt_data = {r.dt_data for r in models.values()}
    if len(dt_data) != 1:
        raise ValueError(f"the models were trained at different Δt_data {sorted(dt_data)}; pass one set at a time")
    dt_data = dt_data.pop()
    members = [(ev, n) for ev in eval_schemes for n in names]
    stacked = StackedRate([models[n].model for _, n in members])
    x0 = torch.tensor(exact_solution(0.0, cfg.rho0, cfg.g), dtype=torch.float64).expand(len(members), 2).clone()
    found = {}
    with torch_threads(1):
        for h in h_values:
            dt = h * dt_data
            N = steps_for(cfg.T_data, dt)
            path = multi_scheme_rollout(stacked, x0, [ev for ev, _ in members], dt, N)
            errs = final_error(path, cfg.T_data, cfg.rho0, cfg.g)
            idx = thin_indices(N, max_points)
            for m, (ev, n) in enumerate(members):
                row = dict(trained=n, evaluated=ev, h=h, dt=dt, n_steps=N, error=float(errs[m]))
                if keep_paths:
                    row["t"] = dt * idx
                    row["x"] = path[idx, m].numpy().copy()
                found[ev, h, n] = row
    return [found[ev, h, n] for ev in eval_schemes for h in h_values for n in names]


def dip_rows(rows: Sequence[Mapping]) -> list[dict]:
    """Each ODE-Net(A) run with its own scheme A at Δt_data and at Δt_data/2 (paper Figure 3).

    Rows: ``trained, error_dt_data, error_half, ratio`` with ratio = E(Δt_data/2) / E(Δt_data):
    > 1 means halving the step made the model *worse*, the signature of a discrete map.
    """
    out = []
    for a in dict.fromkeys(r["trained"] for r in rows):
        e1 = find_row(rows, trained=a, evaluated=a, h=1.0)["error"]
        e2 = find_row(rows, trained=a, evaluated=a, h=0.5)["error"]
        out.append(dict(trained=a, error_dt_data=e1, error_half=e2, ratio=e2 / e1))
    return out


def interchange_matrix(rows: Sequence[Mapping], h: float = 1.0) -> list[dict]:
    """Trained with A, evaluated with B at Δt = h·Δt_data (paper Figure 4(b)).

    Rows: ``trained, evaluated, h, error, ratio_to_own`` with ratio_to_own = E(A→B) / E(A→A).
    """
    out = []
    for r in rows:
        if math.isclose(r["h"], h):
            own = find_row(rows, trained=r["trained"], evaluated=r["trained"], h=h)["error"]
            out.append(dict(trained=r["trained"], evaluated=r["evaluated"], h=h, error=r["error"], ratio_to_own=r["error"] / own))
    return out


def odenet_convergence(rows: Sequence[Mapping]) -> list[dict]:
    """E(Δt) of each ODE-Net(A) run with its own scheme A (the curves of paper Figure 4(a)).

    Rows: ``trained, scheme, h, dt, error``.
    """
    return [
        dict(trained=r["trained"], scheme=r["evaluated"], h=r["h"], dt=r["dt"], error=r["error"])
        for r in rows
        if r["trained"] == r["evaluated"]
    ]


def error_floor_rows(models: Mapping[str, ODENetFit], rows: Sequence[Mapping], cfg: PendulumConfig) -> list[dict]:
    """What optimisation leaves behind, per ODE-Net(A).

    Rows: ``trained, final_loss, one_step_rms`` (√ mean ‖F(x_k) − x_{k+1}‖², the training
    residual), ``error_own`` (E with scheme A at Δt_data), ``error_flow`` (E of G integrated
    with classic RK4 at Δt = cfg.flow_h·Δt_data: the flow of G itself, whatever the scheme; the floor that
    the E(Δt) curves of midpoint and RK4 flatten onto) and ``error_numerical`` (scheme A on the
    true rate at Δt_data: the truncation error the model would have if G were f exactly).
    """
    names = list(models)
    num = {r["scheme"]: r["error"] for r in integrator_convergence(names, (1.0,), cfg.dt_data, cfg.T_data, cfg.rho0, cfg.g)}
    flow = rollout_rows(models, ("rk4_classic",), (cfg.flow_h,), cfg)
    out = []
    for a in names:
        res = models[a]
        out.append(
            dict(
                trained=a,
                final_loss=res.final_loss,
                one_step_rms=res.one_step_rms(),
                error_own=find_row(rows, trained=a, evaluated=a, h=1.0)["error"],
                error_flow=find_row(flow, trained=a)["error"],
                error_numerical=num[a],
            )
        )
    return out


def dt_data_control(cfg: PendulumConfig, base_models: Optional[Mapping[str, ODENetFit]] = None, progress: bool = True,
                    settings: Optional[Settings] = None) -> list[dict]:
    """Swap the scheme at coarser Δt_data: does a swapped model approach the new scheme's own error?

    For each Δt_data in ``(cfg.dt_data, *cfg.control_dt_data)`` the models ODE-Net(A) for A in
    ``cfg.control_schemes`` are trained (``cfg.n_iters`` iterations at cfg.dt_data, reusing
    ``base_models``; ``cfg.control_iters`` at the coarser ones) and run at Δt = Δt_data with
    every other control scheme B.  Rows: ``dt_data, trained, evaluated, error_swapped``
    (A→B), ``error_own`` (A→A), ``error_numerical_trained`` and ``error_numerical_evaluated``
    (A and B on the true rate f at the same Δt), ``error_numerical`` (the larger of the two: the
    truncation error of the less accurate scheme), ``ratio_to_own`` and ``ratio_to_numerical``
    (E(A→B) divided by ``error_own`` and by ``error_numerical``).

    Why the larger one: G trained with A absorbs A's truncation error (step_A(G) ≈ exact map),
    so run with B it carries A's error in its rate *and* adds B's own; whichever is larger wins.
    """
    schemes = tuple(cfg.control_schemes)
    out = []
    for dtd in (cfg.dt_data, *cfg.control_dt_data):
        if dtd == cfg.dt_data:
            models = dict(base_models) if base_models is not None else train_models(cfg, progress=progress, settings=settings)
            models = {s: models[s] for s in schemes}
        else:
            models = train_models(cfg, schemes, dt_data=dtd, n_iters=cfg.control_iters, progress=progress,
                                  settings=settings)
        sub = replace(cfg, dt_data=dtd)
        rows = rollout_rows(models, schemes, (1.0,), sub)
        num = {r["scheme"]: r["error"] for r in integrator_convergence(schemes, (1.0,), dtd, cfg.T_data, cfg.rho0, cfg.g)}
        for a in schemes:
            own = find_row(rows, trained=a, evaluated=a)["error"]
            for b in schemes:
                if b == a:
                    continue
                e = find_row(rows, trained=a, evaluated=b)["error"]
                worst = max(num[a], num[b])
                out.append(
                    dict(
                        dt_data=dtd,
                        trained=a,
                        evaluated=b,
                        error_swapped=e,
                        error_own=own,
                        error_numerical_trained=num[a],
                        error_numerical_evaluated=num[b],
                        error_numerical=worst,
                        ratio_to_own=e / own,
                        ratio_to_numerical=e / worst,
                    )
                )
    return out


def summary(rows: Sequence[Mapping], integrator_slopes: Sequence[Mapping] = ()) -> dict:
    """The headline numbers of the chapter, as a flat dict (used by the tests and printed in the book).

    ``dip_<A>``: E(Δt_data/2)/E(Δt_data) for ODE-Net(A) with its own scheme;
    ``swap_<A>_to_<B>``: E(A→B)/E(A→A) at Δt_data; ``slope_<scheme>``: fitted integrator slopes.
    """
    out = {}
    for r in dip_rows(rows):
        out[f"dip_{r['trained']}"] = r["ratio"]
    for r in interchange_matrix(rows, 1.0):
        if r["trained"] != r["evaluated"]:
            out[f"swap_{r['trained']}_to_{r['evaluated']}"] = r["ratio_to_own"]
    for r in integrator_slopes:
        out[f"slope_{r['scheme']}"] = r["slope"]
    return out
