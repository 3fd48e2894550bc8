"""The answer key of the adaptive-step chapter's exercise: its reference and hidden cases (the teacher's only).

As in :mod:`.pendulum_key`: ``reference_<name>`` and ``hidden_<name>(rng)``.  The near misses the hidden cases
catch: ``rms_over_batch`` (the RMS over the whole batch), ``y0_only`` (the scale from |y0| alone), ``max_entry``
(the largest scaled entry instead of the RMS)."""
from __future__ import annotations

import random

import torch

from ..book.exercises.recipes import recipe
from ..core.step_control import error_norm

__all__ = ["reference_error_ratio", "hidden_error_ratio"]


def reference_error_ratio(e: torch.Tensor, y0: torch.Tensor, y1: torch.Tensor, rtol: float, atol: float) -> float:
    """‖e / (atol + rtol·max(|y0|, |y1|))‖: the RMS per sample (first dimension), the largest over the batch."""
    return error_norm(e, y0, y1, rtol, atol, "max")


def hidden_error_ratio(rng: random.Random) -> list:
    """Four drawn batches (2–6 samples of 2–5 entries, one sample up to 50 times harder), one drawn single state."""
    cases = []
    for k in range(5):
        rows, cols = (rng.randint(2, 6), rng.randint(2, 5)) if k < 4 else (1, rng.randint(2, 5))
        scale = [1.0] * rows
        scale[rng.randrange(rows)] = round(rng.uniform(5.0, 50.0), 2)
        seeds = [rng.randint(0, 10_000) for _ in range(3)]
        shape = [rows, cols] if k < 4 else [cols]
        e = {"$": "randn", "shape": shape, "seed": seeds[0], **({"row_scale": scale} if k < 4 else {})}
        rtol, atol = round(rng.uniform(1e-3, 1e-1), 4), round(rng.uniform(1e-3, 1e-2), 4)
        cases.append(recipe(f"a drawn {'batch of ' + str(rows) if k < 4 else 'single state'}, rtol = {rtol}, atol = {atol}",
                            e, {"$": "randn", "shape": shape, "seed": seeds[1]},
                            {"$": "randn", "shape": shape, "seed": seeds[2]}, rtol, atol,
                            catches=("rms_over_batch", "y0_only") if k < 4 else ("max_entry",)))
    return cases
