"""The pendulum study behind the chapters "Numerical integrators" and "Is a ResNet a forward-Euler
integrator?": the exact solution and data (:mod:`.physics`), the ODE-Net and its training
(:mod:`.odenet`), the presets (:mod:`.presets`), the study's measurements as rows (:mod:`.study`),
those rows as text tables (:mod:`.tables`) and its figures and live app (:mod:`.figures`, which
imports plotly; import it yourself).
"""
from .odenet import ODENet, ODENetFit, global_error, odenet_label, one_step, rollout, train_odenet
from .physics import (G, RHO0, PendulumData, energy, exact_solution, make_data, modified_rate, period, true_rate,
                      true_rate_fn)
from .presets import PENDULUM_PRESETS, PendulumConfig, config_for

__all__ = ["G", "RHO0", "PendulumData", "energy", "exact_solution", "make_data", "modified_rate", "period", "true_rate",
           "true_rate_fn", "ODENet", "ODENetFit", "global_error", "odenet_label", "one_step", "rollout", "train_odenet",
           "PENDULUM_PRESETS", "PendulumConfig", "config_for"]
