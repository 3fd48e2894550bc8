"""The measures every pendulum table shares: the number of steps of a rollout, the global error of its
last state, a path thinned for drawing, and an RMS.

The global error of a rollout with ``N_t`` steps of size ``Δt`` is ``E(Δt) = ‖x_{N_t} − x(t_final)‖₂``
at the final time ``t_final = N_t Δt``, against the exact elliptic-function solution
(:func:`cnet_lib.pendulum.physics.exact_solution`).
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch

from .physics import exact_solution, n_intervals

__all__ = ["steps_for", "final_error", "thin_indices", "rms"]


def steps_for(t_final: float, dt: float) -> int:
    """N_t = t_final / Δt, which must be a whole number."""
    return n_intervals(t_final, dt, "t_final / Δt (the number of steps N_t)", names=("t_final", "Δt"))


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
