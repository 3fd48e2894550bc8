"""Adaptive steps on the pendulum's ODE-Nets: integrated to a tolerance, is a trained rate a good vector field?

Each ODE-Net of the chapter "Is a ResNet a forward-Euler integrator?" (ODE-Net(A) for every training scheme
A, trained at Δt_data; with ``controls`` also the coarse-Δt_data controls) and the true rate f are
integrated over [0, T_data] from the exact initial state by an embedded pair choosing its own steps
(:func:`cnet_lib.core.adaptive.integrate_adaptive`'s rules, ``rtol = atol = tol``; the solves of one pair run
together, :func:`cnet_lib.pendulum.adaptive_solves`, each with its own steps), for every pair and tolerance
of the preset's table (:data:`ADAPTIVE_PENDULUM`).  Rows: the global error ``E = ‖x(T_data) − x_exact‖₂``
against the exact elliptic solution, the rate evaluations (NFE), accepted and rejected steps, and the
error of a fixed-step RK4-classic rollout of equal cost (``N_t = round(NFE / 4)``); and, per ODE-Net, the
error and NFE of its own graph (scheme A at Δt_data).  :func:`torchdiffeq_rows` solves the same problems
with torchdiffeq's ``dopri5`` at the same tolerances (landing on T_data: ``step_t``).

**The verdict's rule** (:data:`PENDULUM_RULE`, fixed before the numbers were computed): with ``dopri5`` at
the tightest tolerance an ODE-Net's error is the error of its *flow*; it is **converged** when the errors
at the two tightest tolerances differ by at most 10%; **continuous** when that flow error is at most
``factor`` (2) times the error of its own graph (its rate is as good a vector field as its training graph
is a map), **discrete** when it is larger.  All on the CPU in float64 with one torch thread.  The tables and
the verdict's sentences are the reporting layer's (:mod:`cnet_lib.report.pendulum_flows_report`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import torch

from ..core.schemes import get_scheme
from ..runtime.preset_names import select_preset
from ..runtime.settings import Settings
from ..runtime.threads import torch_threads
from .batched_adaptive import MemberRates, adaptive_solves, fixed_solves
from .odenet import ODENetFit, odenet_label, rollout
from .physics import exact_solution, steps_for, true_rate
from .trained_models import PendulumConfig, train_models

__all__ = ["ADAPTIVE_PENDULUM", "adaptive_table_for", "PendulumFlow", "pendulum_flows", "flow_rows", "own_rows",
           "torchdiffeq_rows", "PendulumRule", "PENDULUM_RULE", "judge_flows"]

ADAPTIVE_PENDULUM = {
    "smoke": dict(pairs=("bosh3", "dopri5"), tolerances=(1e-2, 1e-3), n_iters=40, controls=False),
    "cpu": dict(pairs=("bosh3", "dopri5"), tolerances=(1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9), n_iters=None,
                controls=False),
    "gpu": dict(pairs=("bosh3", "dopri5"), tolerances=(1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9), n_iters=None,
                controls=True),
    "paper": dict(pairs=("bosh3", "dopri5"), tolerances=(1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10),
                  n_iters=None, controls=True),
}
"""Per preset: the pairs, the tolerances (loosest first), the training iterations of the ODE-Nets (None: the
pendulum preset's own, so the models are those of the pendulum chapters; ``smoke`` trains a few for seconds)
and whether the coarse-Δt_data controls are included (their training takes minutes on a CPU: not in ``cpu``)."""


def adaptive_table_for(preset: str) -> dict:
    """The entry of :data:`ADAPTIVE_PENDULUM` for ``preset``."""
    return dict(select_preset(ADAPTIVE_PENDULUM, preset))


@dataclass(frozen=True)
class PendulumFlow:
    """A rate to integrate: ``name`` (a key), ``label`` (the book's words), ``rate`` (G(x)), ``trained`` (the
    training scheme, None for the true rate) and ``dt_data`` (its training Δt_data)."""

    name: str
    label: str
    rate: object
    trained: Optional[str]
    dt_data: Optional[float]


def pendulum_flows(cfg: PendulumConfig, table: Mapping, models: Optional[Mapping[str, ODENetFit]] = None,
                   progress: bool = True, settings: Optional[Settings] = None) -> list:
    """The true rate f and every ODE-Net the table asks for (:func:`cnet_lib.pendulum.train_models`, with
    ``settings``: obtained once per machine; or ``models`` as given for the main ones): ``[PendulumFlow]``."""
    n_iters = table.get("n_iters")
    main = dict(models) if models is not None else train_models(cfg, n_iters=n_iters, progress=progress, settings=settings)
    out = [PendulumFlow("true_f", "the true rate f", true_rate, None, None)]
    out += [PendulumFlow(a, odenet_label(a), fit.model, a, fit.dt_data) for a, fit in main.items()]
    if table.get("controls"):
        iters = cfg.control_iters if n_iters is None else n_iters
        for dtd in cfg.control_dt_data:
            for a, fit in train_models(cfg, cfg.control_schemes, dt_data=dtd, n_iters=iters, progress=progress,
                                       settings=settings).items():
                out.append(PendulumFlow(f"{a}@{dtd:g}", f"{odenet_label(a)}, Δt_data = {dtd:g}", fit.model, a, dtd))
    return out


def _x0(cfg: PendulumConfig) -> torch.Tensor:
    return torch.tensor(exact_solution(0.0, cfg.rho0, cfg.g), dtype=torch.float64)


def _error(x: torch.Tensor, cfg: PendulumConfig) -> float:
    x = x.detach()
    if not bool(torch.isfinite(x).all()):
        return math.inf
    return float(torch.linalg.norm(x - torch.tensor(exact_solution(cfg.T_data, cfg.rho0, cfg.g), dtype=torch.float64)))


def flow_rows(flows: Sequence[PendulumFlow], cfg: PendulumConfig, table: Mapping) -> list:
    """Rows ``name, label, trained, dt_data, pair, tol, error, nfe, n_accepted, n_rejected, fixed_n_steps,
    fixed_error`` (RK4-classic with ``N_t = round(NFE / 4)`` steps over [0, T_data]), one per flow, pair and
    tolerance.  The solves of one pair run together (:func:`cnet_lib.pendulum.adaptive_solves`, then
    :func:`~cnet_lib.pendulum.fixed_solves`), each with its own steps."""
    members = [(i, tol) for i in range(len(flows)) for tol in table["tolerances"]]
    rate = MemberRates([fl.rate for fl in flows], [i for i, _ in members])
    x0 = _x0(cfg).expand(len(members), 2).clone()
    tols = [tol for _, tol in members]
    found = {}
    with torch_threads(1), torch.no_grad():
        for pair in table["pairs"]:
            x, stats = adaptive_solves(rate, x0, pair, cfg.T_data, tols, tols, max_steps=200_000)
            n_fixed = [max(1, round(st["nfe"] / 4)) for st in stats]
            fixed = fixed_solves(rate, x0, "rk4_classic", cfg.T_data, n_fixed)
            for m, (i, tol) in enumerate(members):
                found[i, pair, tol] = dict(error=_error(x[m], cfg), **stats[m], fixed_n_steps=n_fixed[m],
                                           fixed_error=_error(fixed[m], cfg))
    return [dict(name=fl.name, label=fl.label, trained=fl.trained, dt_data=fl.dt_data, pair=pair, tol=tol,
                 **found[i, pair, tol]) for i, fl in enumerate(flows) for pair in table["pairs"] for tol in table["tolerances"]]


def own_rows(flows: Sequence[PendulumFlow], cfg: PendulumConfig) -> list:
    """Per ODE-Net: ``name, label, trained, dt_data, error_own`` (its training scheme at its Δt_data over
    [0, T_data]) and ``nfe_own`` (stages × N_t)."""
    out = []
    with torch_threads(1):
        for fl in flows:
            if fl.trained is None:
                continue
            n = steps_for(cfg.T_data, fl.dt_data)
            path = rollout(fl.rate, _x0(cfg), fl.trained, fl.dt_data, n)
            out.append(dict(name=fl.name, label=fl.label, trained=fl.trained, dt_data=fl.dt_data,
                            error_own=_error(path[-1], cfg), nfe_own=get_scheme(fl.trained).stages * n))
    return out


def torchdiffeq_rows(flows: Sequence[PendulumFlow], cfg: PendulumConfig, tolerances: Sequence[float],
                     pair: str = "dopri5") -> list:
    """The same solves with torchdiffeq's ``pair`` (its own controller, RMS norm and, for dopri5, Shampine's
    error row): rows ``name, label, tol, difference`` (‖ours − theirs‖ at T_data), ``error, error_torchdiffeq``
    (against the exact solution), ``nfe, nfe_torchdiffeq``."""
    from torchdiffeq import odeint  # imported here, as the ODE-Net's training step does

    x0, rows = _x0(cfg), []
    span = torch.tensor([0.0, cfg.T_data], dtype=torch.float64)
    members = [(i, tol) for i in range(len(flows)) for tol in tolerances]
    with torch_threads(1), torch.no_grad():
        ours, stats = adaptive_solves(MemberRates([fl.rate for fl in flows], [i for i, _ in members]),
                                      x0.expand(len(members), 2).clone(), pair, cfg.T_data, [t for _, t in members],
                                      [t for _, t in members], max_steps=200_000)
        for m, (i, tol) in enumerate(members):
            count = [0]

            def f(t, x, G=flows[i].rate):
                count[0] += 1
                return G(x)

            theirs = odeint(f, x0, span, method=pair, rtol=tol, atol=tol, options=dict(step_t=[cfg.T_data]))[-1]
            rows.append(dict(name=flows[i].name, label=flows[i].label, tol=tol,
                             difference=float(torch.linalg.norm(ours[m] - theirs)), error=_error(ours[m], cfg),
                             error_torchdiffeq=_error(theirs, cfg), nfe=stats[m]["nfe"], nfe_torchdiffeq=count[0]))
    return rows


# --------------------------------------------------------------------------- the verdict
@dataclass(frozen=True)
class PendulumRule:
    """The pendulum verdict's fixed rule (module doc): the pair read, the factor between the flow error and the
    own graph's error, and the relative change between the two tightest tolerances that counts as converged."""

    pair: str = "dopri5"
    factor: float = 2.0
    converged: float = 0.1


PENDULUM_RULE = PendulumRule()
"""Fixed on 2026-11-26, before the study's numbers were computed (README, *Beyond the paper II*)."""


def judge_flows(rows: Sequence[Mapping], own: Sequence[Mapping], rule: PendulumRule = PENDULUM_RULE) -> list:
    """Per ODE-Net: ``name, label, trained, dt_data, tol, error_flow`` (``rule.pair`` at the tightest tolerance),
    ``error_second`` (at the next one), ``error_own, nfe_flow, nfe_own, ratio`` (flow / own) and ``klass``:
    ``continuous``, ``discrete`` or ``not converged`` (module doc)."""
    out = []
    for o in own:
        mine = sorted((r for r in rows if r["name"] == o["name"] and r["pair"] == rule.pair), key=lambda r: -r["tol"])
        if len(mine) < 2:
            raise ValueError(f"{o['label']}: {len(mine)} tolerance(s) of {rule.pair}; the rule needs two")
        tight, second = mine[-1], mine[-2]
        ratio = tight["error"] / o["error_own"] if o["error_own"] > 0 else math.inf
        change = abs(tight["error"] - second["error"]) / max(tight["error"], second["error"], 1e-300)
        if not (math.isfinite(tight["error"]) and change <= rule.converged):
            klass = "not converged"
        else:
            klass = "continuous" if ratio <= rule.factor else "discrete"
        out.append(dict(name=o["name"], label=o["label"], trained=o["trained"], dt_data=o["dt_data"], tol=tight["tol"],
                        error_flow=tight["error"], error_second=second["error"], error_own=o["error_own"],
                        nfe_flow=tight["nfe"], nfe_own=o["nfe_own"], ratio=ratio, klass=klass))
    return out
