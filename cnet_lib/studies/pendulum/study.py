"""The pendulum study: what the chapters *Numerical integrators* and *Is a ResNet a forward-Euler integrator?*
measure, as numbers.

The exact swing and the numerical integrators on the true rate f (rollouts, local and global errors, the fitted
orders); the trained ODE-Nets (:func:`cnet_lib.pendulum.train_models`: obtained once per machine, or as they ship)
rolled out with every scheme at every step (the paper's Figures 3 and 4: the dip, the interchange, the error floor,
the control at coarser data), their rates as flows (their distance to f and to the modified rate, the energy a
rollout gains, the period at an energy) and at steps beyond the chapters' grid (the paper's two sentences about
large steps, for the page *What the paper claims*).

The global error of a rollout with ``N_t`` steps of size ``Δt`` is ``E(Δt) = ‖x_{N_t} − x(t_final)‖₂`` at the final
time ``t_final = N_t Δt``, against the exact elliptic-function solution (:func:`cnet_lib.pendulum.exact_solution`).
Tables are lists of dicts (one row per measurement, column names in the docstrings), so a reader can display them
(:mod:`.show`), filter them with a comprehension or hand them to pandas.  The models are tiny, so everything runs on
the CPU in float64 with one torch thread; the models and the inference schemes of one Δt are rolled out together
(:class:`cnet_lib.pendulum.StackedRate`, :func:`cnet_lib.pendulum.multi_scheme_rollout`).
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Iterable, Mapping, Optional, Sequence

import numpy as np
import torch

from ...core.integrate import integrate
from ...core.schemes import get_scheme
from ...runtime.device import torch_threads
from ...runtime.rich_text import find_row
from ...runtime.settings import Settings
from ...pendulum import (G as G_DEFAULT, ODENet, ODENetFit, PendulumConfig, RHO0, StackedRate, energy, exact_solution,
    modified_rate, multi_scheme_rollout, one_step, period, rollout, steps_for, train_models, true_rate)

__all__ = ["final_error", "thin_indices", "rms", "swing_facts", "true_rate_rollout", "true_rate_rollouts",
           "local_errors", "local_slopes", "integrator_convergence", "fit_slope", "fit_slopes", "halving_ratios",
           "setup_facts", "backend_agreement", "training_summary", "rollout_rows", "dip_rows", "interchange_matrix",
           "odenet_convergence", "error_floor_rows", "dt_data_control", "euler_correction_rms", "rate_distances",
           "energy_gained", "flow_periods", "flow_period", "LARGE_H", "SLOPE_H", "admitted_steps", "large_step_rows",
           "interchange_at_large_steps", "large_step_slopes"]


# --------------------------------------------------------------------------- the measures every table shares
def final_error(path: torch.Tensor, t_final: float, rho0: float, g: float) -> np.ndarray:
    """‖x_N − x(t_final)‖₂ for the last state of ``path`` (shape (N+1, ..., 2)); inf where not finite."""
    xN = path[-1].detach().cpu().numpy()
    err = np.linalg.norm(xN - exact_solution(t_final, rho0, g), axis=-1)
    return np.where(np.all(np.isfinite(xN), axis=-1), err, np.inf)


def thin_indices(n_steps: int, max_points: Optional[int]) -> np.ndarray:
    """Indices of at most about ``max_points`` of the ``n_steps + 1`` states of a path, the last one
    included (all of them when ``max_points`` is None)."""
    if max_points is None:
        return np.arange(n_steps + 1)
    stride = max(1, math.ceil((n_steps + 1) / max_points))
    return np.unique(np.r_[np.arange(0, n_steps + 1, stride), n_steps])


def rms(z: torch.Tensor) -> float:
    """√ mean ‖z_k‖² over the rows z_k of ``z`` (shape (N, 2))."""
    return z.pow(2).sum(-1).mean().sqrt().item()


# --------------------------------------------------------------------------- the exact swing and the integrators on f
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


# --------------------------------------------------------------------------- the trained ODE-Nets: settings and training
def setup_facts(cfg: PendulumConfig) -> dict:
    """The data and training settings of ``cfg``, as a flat dict: ``preset, dt_data, T_data, n_pairs``
    (training pairs (x_k, x_k+1)), ``n_iters, lr, lr_final, seed, hidden`` and ``n_parameters`` (of G)."""
    with torch.random.fork_rng(devices=[]):  # building G draws initial weights: leave the global state alone
        n_parameters = sum(p.numel() for p in ODENet(cfg.hidden).parameters())
    return dict(preset=cfg.name, dt_data=cfg.dt_data, T_data=cfg.T_data, n_pairs=cfg.data().n_pairs, n_iters=cfg.n_iters,
                lr=cfg.lr, lr_final=cfg.lr_final, seed=cfg.seed, hidden=cfg.hidden, n_parameters=n_parameters)


def backend_agreement(cfg: PendulumConfig, seed: int = 0) -> list[dict]:
    """One step of each training scheme with torchdiffeq and with ``cnet_lib.integrate``, from every
    training state, with an untrained G (initialised from ``torch.manual_seed(seed)``).

    Rows: ``scheme, max_difference`` (the largest absolute difference between the two steps).
    The global random state is left as it was.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        G = ODENet(hidden=cfg.hidden).double()
    x_in, _ = cfg.data().pairs()
    rows = []
    with torch.no_grad():
        for s in cfg.train_schemes:
            a = one_step(G, x_in, s, cfg.dt_data, backend="torchdiffeq")
            b = one_step(G, x_in, s, cfg.dt_data, backend="cnet")
            rows.append(dict(scheme=s, max_difference=(a - b).abs().max().item()))
    return rows


def training_summary(models: Mapping[str, ODENetFit]) -> list[dict]:
    """Rows ``trained, final_loss, one_step_rms, n_iters, seconds, trained_with, device``, one per trained model (see
    :class:`ODENetFit`: the seconds of the batch its ``trained_with`` models were trained in)."""
    return [dict(trained=a, final_loss=r.final_loss, one_step_rms=r.one_step_rms(), n_iters=r.n_iters, seconds=r.seconds,
                 trained_with=r.trained_with, device=r.device) for a, r in models.items()]


# --------------------------------------------------------------------------- their rollouts with every scheme (Figures 3 and 4)
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
    and inference schemes of one Δt are rolled out together (:class:`~cnet_lib.pendulum.StackedRate`,
    :func:`~cnet_lib.pendulum.multi_scheme_rollout`).
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


# --------------------------------------------------------------------------- the trained rates as flows
def euler_correction_rms(cfg: PendulumConfig) -> float:
    """RMS of the Euler correction (Δt_data/2)·f'f over the training states: how far the modified rate
    (:func:`cnet_lib.pendulum.modified_rate`) is from f."""
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


# --------------------------------------------------------------------------- steps beyond the chapters' grid (Sec. 3.3)
# The paper says two things about larger steps: the midpoint-trained model, run with RK4, improves "by orders of
# magnitude for Δt > 2Δt_data", and at large steps the models' error curves take the slopes of the baseline, the same
# scheme on the true rate.  The rules that word them are the book's (cnet_lib.book.claims_page).
def admitted_steps(dt_data: float = 0.01, T_data: float = 10.0, above: float = 2.0, up_to: float = 25.0,
                   unit: float = 0.5) -> tuple:
    """Every step h (in units of Δt_data) with ``above`` < h ≤ ``up_to`` that the grid admits: a multiple of ``unit``
    (the half step, Δt = 0.5·Δt_data, of the paper's Figure 3(b) and of the chapters' grids) that divides [0, T_data]
    into a whole number of steps, so that E is measured at T_data itself."""
    out = []
    k = int(above / unit) + 1
    while k * unit <= up_to + 1e-12:
        h = k * unit
        n = T_data / (h * dt_data)
        if abs(n - round(n)) < 1e-9:
            out.append(float(h))
        k += 1
    return tuple(out)


LARGE_H = admitted_steps()
"""The steps, in units of Δt_data, of the large-step rows: every step the grid admits above 2·Δt_data, the range of
the paper's sentence on the interchange (:func:`admitted_steps`: 2.5, 4, 5, 8, 10, 12.5, 20 and 25)."""

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
