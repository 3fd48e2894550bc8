"""The answer key of the adaptive-step chapter's exercise: its reference and hidden cases (the teacher's only).

As in :mod:`.pendulum_key`: ``reference_<name>`` and ``hidden_<name>(rng)``, the hidden cases built to catch the
exercise's named near misses (its ``near_misses``): the RMS over the whole batch, the scale from |y0| alone, the
largest scaled entry instead of the RMS, the RMS along the last axis only."""
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
    """Six drawn cases: two batches of rows (2–6 samples of 2–5 entries) and two of samples of two or three
    dimensions (images, say), each with one sample up to 50 times harder and the state growing 2 to 4 times in the
    step; one batch of samples of more dimensions under an absolute tolerance only; one drawn single state that
    shrinks by half in the step (there the scale from |y0| alone is right)."""
    cases = []
    for k in range(6):
        rows = rng.randint(2, 6) if k < 5 else 1
        sample = [rng.randint(2, 5)] if k < 2 or k == 5 else [rng.randint(2, 4) for _ in range(rng.randint(2, 3))]
        shape = [rows] + sample if k < 5 else sample
        scale = [1.0] * rows
        scale[rng.randrange(rows)] = round(rng.uniform(5.0, 50.0), 2)
        seeds = [rng.randint(0, 10_000) for _ in range(2)]
        growth = round(rng.uniform(2.0, 4.0), 3) if k < 5 else 0.5
        e = {"$": "randn", "shape": shape, "seed": seeds[0], **({"row_scale": scale} if k < 5 else {})}
        y0 = {"$": "randn", "shape": shape, "seed": seeds[1]}
        y1 = {**y0, "row_scale": [growth] * shape[0]}
        rtol = round(rng.uniform(1e-3, 1e-1), 4) if k != 4 else 0.0
        atol = round(rng.uniform(1e-3, 1e-2), 4)
        what = f"a drawn batch of {rows} samples of shape {tuple(sample)}" if k < 5 else "a drawn single state"
        how = f"the state growing {growth}× in the step" if k < 5 else "halving in the step"
        catches = ("rms_over_batch", "y0_only", "max_entry") if k < 2 else \
            ("rms_over_batch", "y0_only", "max_entry", "last_axis") if k < 4 else \
            ("rms_over_batch", "max_entry", "last_axis") if k == 4 else ("max_entry",)
        cases.append(recipe(f"{what}, {how}, rtol = {rtol}, atol = {atol}", e, y0, y1, rtol, atol, catches=catches))
    return cases
