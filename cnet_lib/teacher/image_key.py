"""The answer key of the image chapters' exercises: references and hidden cases (the teacher's only).

As in :mod:`.pendulum_key`: ``reference_<name>`` and ``hidden_<name>(rng)``, the hidden cases built to catch the
exercises' named near misses (their ``near_misses``: h = 1/M or the gain forgotten, every parameter doubled or the
gains not, each coefficient copied or M = 1 left out, the largest N_t for the last, the rows by position or the gap
as a fraction, one scale for the whole tensor or a division by a zero scale).
"""
from __future__ import annotations

import copy
import math
import random

import torch

from ..book.exercises.image_exercises import euler_block_cases, hat_cases, model_cases, schedule_cases, sweep_cases
from ..book.exercises.recipes import recipe
from ..core import bases
from ..studies.robustness import study as perturbations

__all__ = ["reference_euler_block_as_resnet", "hidden_euler_block_as_resnet", "reference_parameters_after_refinement",
           "hidden_parameters_after_refinement", "reference_refine_piecewise_linear", "hidden_refine_piecewise_linear",
           "reference_ideal_speedup", "hidden_ideal_speedup", "reference_identity_gap", "hidden_identity_gap",
           "reference_quantize_per_channel", "hidden_quantize_per_channel"]

_SCHEMES = ("euler", "midpoint", "heun", "rk4_classic", "rk4_38")


# ----------------------------------------------------------------------------- ContinuousNet
def reference_euler_block_as_resnet(block, x):
    """The block's own Euler, N_t = M graph: ``block(x)`` with that manifestation (then restored)."""
    with block.manifested("euler", block.n_basis):
        return block(x)


def hidden_euler_block_as_resnet(rng: random.Random) -> list:
    """Four drawn blocks: M in 1..6, T ≠ 1 in three of them, gains in two, ε and the current graph drawn."""
    rows = []
    for k in range(4):
        T = 1.0 if k == 3 else round(rng.choice((rng.uniform(0.3, 0.9), rng.uniform(1.2, 3.0))), 3)
        rows.append((rng.randint(1, 6), T, k % 2 == 0, round(rng.uniform(0.5, 1.2), 3), rng.choice(_SCHEMES),
                     rng.randint(1, 8), rng.randint(0, 10_000)))
    return euler_block_cases(rows)


# ----------------------------------------------------------------------------- Refinement training
def reference_parameters_after_refinement(model) -> int:
    """Parameters of a refined copy: ``copy.deepcopy(model).refine().n_parameters()``."""
    return copy.deepcopy(model).refine().n_parameters()


def hidden_parameters_after_refinement(rng: random.Random) -> list:
    """Three drawn ContinuousNets: one to three stages of widths 2..8, M per model or per stage, the first with skip
    gains, the others drawn."""
    nets = []
    for k in range(3):
        channels = [rng.randint(2, 8) for _ in range(rng.randint(1, 3))]
        m = rng.randint(1, 4) if rng.random() < 0.5 else [rng.randint(1, 4) for _ in channels]
        nets.append((channels, m, k == 0 or rng.random() < 0.5, rng.choice((10, 100)), rng.randint(0, 10_000)))
    return model_cases(nets)


def reference_refine_piecewise_linear(coeffs: torch.Tensor) -> torch.Tensor:
    """The 2M − 1 coefficients of the refined hat basis (2 for M = 1) with θ(t) unchanged: the library's map."""
    _, cmap = bases.PiecewiseLinear(int(coeffs.shape[0])).refine()
    return cmap.apply(coeffs)


def hidden_refine_piecewise_linear(rng: random.Random) -> list:
    """Four drawn coefficient tensors: M = 1 and three M in 2..9, trailing shapes of 0 to 3 dimensions, both dtypes."""
    rows = []
    for m in (1, rng.randint(2, 4), rng.randint(5, 9), rng.randint(2, 9)):
        shape = [rng.randint(1, 4) for _ in range(rng.randint(0, 3))]
        rows.append((m, shape, rng.choice(("float32", "float64")), rng.randint(0, 10_000)))
    return hat_cases(rows)


def reference_ideal_speedup(n_steps_per_epoch) -> float:
    """epochs × final N_t / Σ N_t: fixed-depth cost over refinement cost when an epoch costs ∝ N_t."""
    n = [int(v) for v in n_steps_per_epoch]
    return len(n) * n[-1] / sum(n)


def hidden_ideal_speedup(rng: random.Random) -> list:
    """Five drawn schedules that double N_t at drawn epochs; the last two end below their largest N_t."""
    schedules = []
    for k in range(5):
        n, out = rng.choice((1, 2)), []
        for _ in range(rng.randint(4, 15)):
            out.append(n)
            if rng.random() < 0.3:
                n *= 2
        if out[-1] == out[0]:
            out.append(2 * out[-1])
        if k >= 3:  # a schedule whose last epochs run shallower than its deepest
            if max(out) == 1:
                out.append(2)
            out += [max(out) // 2] * rng.randint(1, 3)
        schedules.append(out)
    return schedule_cases(schedules)


# ----------------------------------------------------------------------------- Manifestation invariance
def reference_identity_gap(rows) -> float:
    """Accuracy of the ``trained`` row minus that of the ``identity`` row, in percentage points."""
    trained = next(r for r in rows if r["kind"] == "trained")
    ident = next(r for r in rows if r["kind"] == "identity")
    return 100.0 * (trained["accuracy"] - ident["accuracy"])


def hidden_identity_gap(rng: random.Random) -> list:
    """Four drawn sweeps (accuracies at least one point apart), shuffled."""
    rows = [(round(rng.uniform(0.3, 0.9), 4), round(rng.uniform(0.05, 0.28), 4), rng.randint(0, 10_000)) for _ in range(4)]
    return sweep_cases(rows)


# ----------------------------------------------------------------------------- Robustness
def reference_quantize_per_channel(w: torch.Tensor, bits: int) -> torch.Tensor:
    """``w`` rounded to ``bits``-bit symmetric integers, one scale per output channel, dequantized."""
    return perturbations.quantize_per_channel(w, bits, channel_dim=0)


def hidden_quantize_per_channel(rng: random.Random) -> list:
    """Four drawn weights of 2 to 4 dimensions whose channels differ in scale by 10² to 10⁴, with 8 to 64 weights
    each (so that a count of levels off by one never passes by chance), 2 to 8 bits; one with a channel of zeros
    (and at least 3 channels, so that one scale for the whole tensor is never right)."""
    cases = []
    for k in range(4):
        trailing = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
        while math.prod(trailing) < 8:
            trailing[rng.randrange(len(trailing))] += 1
        shape = [rng.randint(3 if k == 3 else 2, 5)] + trailing
        scale = [10 ** rng.uniform(-2, 2) for _ in range(shape[0])]
        scale[rng.randrange(shape[0])] = 100 * max(scale)
        zeros = [rng.randrange(shape[0])] if k == 3 else []
        if zeros and zeros[0] == scale.index(max(scale)):
            zeros = [(zeros[0] + 1) % shape[0]]
        w = {"$": "randn", "shape": shape, "seed": rng.randint(0, 10_000), "dtype": rng.choice(("float32", "float64")),
             "row_scale": scale, "zero_rows": zeros}
        bits = rng.randint(2, 8)
        cases.append(recipe(f"a {tuple(shape)} {w['dtype']} weight, channels spread in scale, {bits} bits"
                            + (", one channel of zeros" if zeros else ""), w, bits,
                            catches=("one_scale",) + (("nan_on_zeros",) if zeros else ()) + ("levels_off_by_one",)))
    return cases
