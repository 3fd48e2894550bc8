"""Maps that carry state along when an OdeBlock's basis changes: the BatchNorm statistics' intervals
(:func:`interval_map`) and an optimizer's per-parameter state (:func:`remap_optimizer_state`).
Used by :meth:`cnet_lib.core.odeblock.OdeBlock.refine` and :meth:`~cnet_lib.core.odeblock.OdeBlock.project`.
"""
from __future__ import annotations

import torch
from torch import nn

from .bases import CoefficientMap, PiecewiseConstant

__all__ = ["interval_map", "remap_optimizer_state", "SQUARED_STATE"]

SQUARED_STATE = frozenset({"exp_avg_sq", "max_exp_avg_sq", "square_avg", "sum"})
"""Optimizer state entries that average squared gradients (Adam, AdamW, RMSprop, Adagrad): non-negative."""


def interval_map(n_old: int, n_new: int) -> CoefficientMap:
    """Map piecewise-constant statistics from n_old to n_new equal intervals."""
    if n_new == n_old:
        return CoefficientMap(n_old, tuple(((i, 1.0),) for i in range(n_old)))
    if n_new == 2 * n_old:
        return PiecewiseConstant(n_old).refine()[1]
    return PiecewiseConstant(n_old).project(PiecewiseConstant(n_new))


def remap_optimizer_state(
    optimizer: torch.optim.Optimizer, replaced: dict[nn.Parameter, nn.Parameter], cmap: CoefficientMap
) -> None:
    """Point ``optimizer`` at the new Parameters and carry their state through ``cmap``.

    ``replaced`` maps each old coefficient Parameter to its successor.  The optimizer's
    parameter groups are updated in place, and every per-parameter state tensor of the old
    parameter's shape (SGD's momentum buffer, Adam's moments) is mapped along its leading
    (basis) axis, so momentum survives refinement; scalars such as Adam's step are kept.
    The running averages of squared gradients (:data:`SQUARED_STATE`: Adam's ``exp_avg_sq``,
    RMSprop's ``square_avg``, Adagrad's ``sum``) are mapped with the absolute weights, so that a
    projection with negative weights leaves them non-negative (refinement's weights are non-negative
    already: there both maps agree).
    """
    absolute = CoefficientMap(cmap.n_old, tuple(tuple((j, abs(w)) for j, w in row) for row in cmap.rows))
    for group in optimizer.param_groups:
        group["params"] = [replaced.get(p, p) for p in group["params"]]
    for old, new in replaced.items():
        state = optimizer.state.pop(old, None)
        if state:
            optimizer.state[new] = {
                k: (absolute if k in SQUARED_STATE else cmap).apply(v)
                if torch.is_tensor(v) and v.dim() > 0 and v.shape == old.shape else v
                for k, v in state.items()
            }
