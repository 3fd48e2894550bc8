"""What each run-size preset means for the pendulum chapters (:class:`PendulumConfig`).

Which preset a session runs is its setting (``ctx.preset``, :class:`cnet_lib.runtime.settings.Settings`);
:func:`config_for` returns the configuration of a preset, with field overrides.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional

from ..core.schemes import get_scheme
from ..core.validation import check_float, check_int
from ..runtime.preset_names import select_preset
from .physics import RHO0, G as G_DEFAULT, make_data

__all__ = ["PendulumConfig", "PENDULUM_PRESETS", "config_for"]


@dataclass(frozen=True)
class PendulumConfig:
    """Sizes of one run of the study (one entry of :data:`PENDULUM_PRESETS`).

    Data: ``Δt_data``, ``T_data``, ``ρ0``, ``g``.  Training: ``train_schemes`` (ODE-Net(A) for
    each A; the paper's "RK4" is torchdiffeq's ``rk4``, i.e. ``rk4_38``), ``n_iters`` full-batch
    Adam iterations with the learning rate decaying from ``lr`` to ``lr_final``, ``seed``.
    Evaluation: ``eval_schemes``; ``h_values`` (Δt = h·Δt_data) for Fig. 4(a) and the rollout
    explorer, ``interchange_h`` for Fig. 4(b); the ODE-Net slopes are fitted over
    ``h ∈ fit_h_odenet``.  Integrators: ``integrator_h`` and ``integrator_t_final`` for the
    convergence study on the true rate, slopes fitted over ``h ∈ fit_h_integrators``.
    Control: ODE-Nets trained at each coarser ``control_dt_data`` for ``control_iters``.
    ``flow_h``: the flow of a trained G is followed with classic RK4 at Δt = flow_h·Δt_data
    (its truncation error, ~1e-9, is far below any trained model's error).
    """

    name: str
    dt_data: float = 0.01
    T_data: float = 10.0
    rho0: float = RHO0
    g: float = G_DEFAULT
    train_schemes: tuple = ("euler", "midpoint", "rk4_38")
    eval_schemes: tuple = ("euler", "midpoint", "rk4_classic", "rk4_38")
    n_iters: int = 4000
    lr: float = 1e-2
    lr_final: float = 1e-5
    seed: int = 0
    hidden: int = 50
    h_values: tuple = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
    interchange_h: tuple = (0.5, 1.0, 2.0)
    fit_h_odenet: tuple = (2.0, 8.0)
    integrator_h: tuple = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0)
    integrator_t_final: float = 1.0
    fit_h_integrators: tuple = (1 / 16, 1.0)
    control_dt_data: tuple = (0.02, 0.05, 0.1)
    control_schemes: tuple = ("midpoint", "rk4_38")
    control_iters: int = 3000
    flow_h: float = 0.25

    def __post_init__(self) -> None:
        """Check every size before any work (see :mod:`cnet_lib.core.validation`)."""
        for name, example in (("dt_data", 0.01), ("T_data", 10.0), ("g", G_DEFAULT), ("lr", 1e-2), ("lr_final", 1e-5),
                              ("integrator_t_final", 1.0), ("flow_h", 0.25)):
            check_float(name, getattr(self, name), low=0, low_open=True, example=example)
        check_float("rho0", self.rho0, low=-math.pi, high=math.pi, low_open=True, high_open=True, example=RHO0)
        for name, example in (("n_iters", 4000), ("control_iters", 3000), ("hidden", 50)):
            check_int(name, getattr(self, name), low=1 if name == "hidden" else 0, example=example)
        for name in ("train_schemes", "eval_schemes", "control_schemes"):
            for scheme in getattr(self, name):
                get_scheme(scheme)
        for name in ("h_values", "interchange_h", "fit_h_odenet", "integrator_h", "fit_h_integrators", "control_dt_data"):
            for i, v in enumerate(getattr(self, name)):
                check_float(f"{name}[{i}]", v, low=0, low_open=True, example=1.0)

    def data(self, dt_data: Optional[float] = None):
        """The training data of this config (at ``dt_data`` instead of its own, when given)."""
        return make_data(self.dt_data if dt_data is None else dt_data, self.T_data, self.rho0, self.g)


PENDULUM_PRESETS: dict = {
    # CI: the smallest run at which every qualitative claim of the chapter still holds.
    "smoke": PendulumConfig(
        name="smoke",
        n_iters=1000,
        lr_final=1e-4,
        h_values=(0.5, 1.0, 2.0),
        interchange_h=(0.5, 1.0, 2.0),
        fit_h_odenet=(1.0, 2.0),
        integrator_h=(1 / 8, 1 / 4, 1 / 2, 1.0),
        fit_h_integrators=(1 / 8, 1.0),
        control_dt_data=(0.05,),
        control_iters=500,
    ),
    # The default without a GPU: each chapter in a few minutes on 2 CPU cores.
    "cpu": PendulumConfig(name="cpu", n_iters=4000, control_iters=3000),
    # The models are tiny and train on the CPU either way; the gpu preset just trains longer.
    "gpu": PendulumConfig(name="gpu", n_iters=10000, control_iters=6000, h_values=(0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)),
    "paper": PendulumConfig(
        name="paper",
        n_iters=20000,
        lr_final=1e-6,
        control_iters=10000,
        h_values=(0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
        integrator_h=(1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0),
        fit_h_integrators=(1 / 32, 1.0),
    ),
}


def config_for(preset: str, **overrides) -> PendulumConfig:
    """The :class:`PendulumConfig` of ``preset`` (``ctx.preset`` in a chapter), with field overrides."""
    cfg = select_preset(PENDULUM_PRESETS, preset)
    return replace(cfg, **overrides) if overrides else cfg
