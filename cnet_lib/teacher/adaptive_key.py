"""The answer key of the adaptive-step chapter's exercise: its reference and hidden cases (the teacher's only).

As in :mod:`.pendulum_key`: ``reference_<name>`` and ``hidden_<name>(rng)``, the hidden cases built to catch the
exercise's named near misses (its ``near_misses``): the RMS over the whole batch, the scale from |y0| alone, the
largest scaled entry instead of the RMS."""
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
    """Four drawn batches (2–6 samples of 2–5 entries, one sample up to 50 times harder, the state growing 2 to 4
    times in the step) and one drawn single state that shrinks by half in the step (there the scale from |y0|
    alone is right)."""
    cases = []
    for k in range(5):
        batch = k < 4
        rows, cols = (rng.randint(2, 6), rng.randint(2, 5)) if batch else (1, rng.randint(2, 5))
        scale = [1.0] * rows
        scale[rng.randrange(rows)] = round(rng.uniform(5.0, 50.0), 2)
        seeds = [rng.randint(0, 10_000) for _ in range(2)]
        shape = [rows, cols] if batch else [cols]
        growth = round(rng.uniform(2.0, 4.0), 3) if batch else 0.5
        e = {"$": "randn", "shape": shape, "seed": seeds[0], **({"row_scale": scale} if batch else {})}
        y0 = {"$": "randn", "shape": shape, "seed": seeds[1]}
        y1 = {**y0, "row_scale": [growth] * shape[0]}
        rtol, atol = round(rng.uniform(1e-3, 1e-1), 4), round(rng.uniform(1e-3, 1e-2), 4)
        label = (f"a drawn batch of {rows}, the state growing {growth}× in the step" if batch
                 else "a drawn single state, halving in the step")
        cases.append(recipe(f"{label}, rtol = {rtol}, atol = {atol}", e, y0, y1, rtol, atol,
                            catches=("rms_over_batch", "y0_only", "max_entry") if batch else ("max_entry",)))
    return cases
