"""The answer key (the teacher's only: a student's install carries none of it).

* **References and hidden cases**, per exercise: ``reference_<name>`` computes what the student's ``<name>`` must
  return; ``hidden_<name>(rng)`` draws the hidden cases of one submission from ``rng`` as recipes
  (:mod:`cnet_lib.book.exercises.recipes`), built to catch the exercise's named near misses (each case's
  ``catches``; their words and hints: the exercises' ``near_misses``).  :func:`hidden_cases` seeds ``rng`` from the
  key's secret, the student, the exercise and the grading run, so every submission and every regrading gets its
  own and no table built from another's, or from earlier feedback, can pass; :func:`expected_outputs` are the
  references' values, computed in the grading process and nowhere else.
* **Near misses' code** (:data:`CODES`): what a student writes who makes that one mistake and no other.  The grader
  runs it on the cases a submission failed (:func:`near_miss_outputs`), so the feedback's hint is the one of the
  near miss whose values the submission's are, never a guess from which cases failed; a submission that fails a
  case catching a named near miss gets at most :data:`NEAR_MISS_SHARE` of the points.
* **Public answers** (:func:`write_public_answers`): the public cases' expected outputs, and each near miss's
  values on the cases that catch it, as data (``cnet_lib/book/exercises/public_answers.json``) that the book's
  checks read, so a student's install needs no reference and a failed check aims its hint the same way;
  ``python -m cnet_lib answers --write`` rewrites it, :func:`stale_answers` says which exercises it no longer
  matches (``tests/test_grading.py`` checks it).
* **The class's key** (:class:`AnswerKey`): ``python -m cnet_lib student OUTDIR --key KEYDIR`` writes
  ``KEYDIR/key.json`` (the class's exercises with their points, the students' library build, the default time
  limit, and the random secret every submission's hidden cases are drawn from: keep the folder to yourself) and
  ``KEYDIR/answer_key.md`` (per exercise its objective, minutes, difficulty and points, the solution, the hints,
  the public cases, what the hidden cases are, the near misses they catch with the points each gets and its hint,
  and what an exercise cell may not use); ``python -m cnet_lib grade SUBMISSIONS --key KEYDIR`` reads it back.
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import inspect
import json
import math
import random
import secrets
from contextlib import nullcontext
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

import torch

from ..book.exercises.catalogue import DIFFICULTY, EXERCISES, chapter_exercises, exercise, info
from ..book.exercises.image_exercises import euler_block_cases, hat_cases, model_cases, schedule_cases, sweep_cases
from ..book.exercises.pendulum_exercises import (EMBEDDED_PAIRS, NODE_MISSES, SCHEMES, embedded_misses,
    global_error_cases, observed_order_cases)
from ..book.exercises.public_checks import PUBLIC_ANSWERS
from ..book.exercises.recipes import build_call, decode, encode, observed, recipe, recipes_digest
from ..book.exercise_cells import exercise_pairs, function_signatures
from ..book.notebook_cells import SOLUTION_TITLE, cell_source, read_notebook
from ..book.project import toc_notebooks
from ..core.adaptive import error_norm
from ..core.integrate import integrate
from ..studies.robustness import study as perturbations
from ..core import bases
from ..pendulum import odenet, physics
from .submissions import name_bytes

__all__ = ["reference_observed_order", "hidden_observed_order", "reference_rk_step", "hidden_rk_step",
           "reference_embedded_step", "hidden_embedded_step", "reference_global_error", "hidden_global_error",
           "reference_error_ratio", "hidden_error_ratio", "reference_euler_block_as_resnet",
           "hidden_euler_block_as_resnet", "reference_parameters_after_refinement", "hidden_parameters_after_refinement",
           "reference_refine_piecewise_linear", "hidden_refine_piecewise_linear", "reference_ideal_speedup",
           "hidden_ideal_speedup", "reference_identity_gap", "hidden_identity_gap", "reference_quantize_per_channel",
           "hidden_quantize_per_channel", "ratio_rows", "CODES", "NEAR_MISS_SHARE", "Key", "KEYS", "key",
           "submission_seed", "hidden_cases", "expected_outputs", "near_miss_function", "near_miss_outputs",
           "public_answers", "write_public_answers", "stale_answers", "AnswerKey", "write_key", "solution_sources",
           "KEY_FILE", "DEFAULT_TIME_LIMIT"]

NEAR_MISS_SHARE = 1 / 3
"""The most a submission that fails a case catching a named near miss gets, as a share of the points."""
KEY_FILE = "key.json"
FORMAT = "cnet-answer-key/1"
DEFAULT_TIME_LIMIT = 60.0
BLOCK_SCHEMES = ("euler", "midpoint", "heun", "rk4_classic", "rk4_38")
"""The schemes a drawn OdeBlock's current graph uses (euler_block_as_resnet)."""



# ----------------------------------------------------------------------------- observed order
def reference_observed_order(dts, errors) -> float:
    """Least-squares slope of log(error) against log(Δt): the observed order r."""
    if len(dts) != len(errors) or len(dts) < 2:
        raise ValueError("need at least two (Δt, error) pairs of equal length")
    lx = [math.log(float(d)) for d in dts]
    ly = [math.log(float(e)) for e in errors]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((x - mx) ** 2 for x in lx)
    sxy = sum((x - mx) * (y - my) for x, y in zip(lx, ly))
    return sxy / sxx


def hidden_observed_order(rng: random.Random) -> list:
    """Exact power laws of two drawn orders, wobbly errors and shuffled arrays, on drawn step sizes."""
    n = rng.randint(4, 6)
    dts = [round(rng.uniform(0.05, 0.5), 4) / 2 ** k for k in range(n)]
    wobbly = [round(rng.uniform(0.02, 0.3), 4) / 2 ** k for k in range(n + 1)]
    shuffled = rng.sample(range(n), n)
    if shuffled == sorted(shuffled) or shuffled == sorted(shuffled, reverse=True):
        shuffled = shuffled[1:] + shuffled[:1]
    return observed_order_cases(dts, tuple(rng.sample((1, 2, 3, 4), 2)), wobbly, shuffled)


# ----------------------------------------------------------------------------- one RK step, an embedded pair
def reference_rk_step(f, t: float, x: torch.Tensor, h: float, tableau) -> torch.Tensor:
    """x_{n+1} = x_n + h Σ_i b_i k_i with k_i = f(t + c_i h, x_n + h Σ_{j<i} a_ij k_j), by
    :func:`cnet_lib.integrate` with one step over ``(t, t + h)``."""
    return integrate(f, x, tableau, 1, t_span=(t, t + h))


def reference_embedded_step(f, t: float, x: torch.Tensor, h: float, tableau, b_hat) -> tuple:
    """``(x + h Σ b_i k_i, h Σ (b_i − b̂_i) k_i)`` from the s stages k_i of ``tableau``, each evaluated once."""
    if len(b_hat) != tableau.stages:
        raise ValueError(f"b_hat has {len(b_hat)} weights, the tableau {tableau.stages} stages")
    k = []
    for i in range(tableau.stages):
        xi = x
        for j in range(i):
            if tableau.a[i][j] != 0:
                xi = xi + h * float(tableau.a[i][j]) * k[j]
        k.append(f(t + float(tableau.c[i]) * h, xi))
    x_next = x + h * sum(float(b) * ki for b, ki in zip(tableau.b, k))
    return x_next, h * sum(float(b - bh) * ki for b, bh, ki in zip(tableau.b, b_hat, k))


def _state(rng: random.Random) -> dict:
    rows = rng.randint(1, 4)
    data = [[round(rng.uniform(-2.5, 2.5), 6), round(rng.uniform(-2, 2), 6)] for _ in range(rows)]
    return {"$": "tensor", "data": data[0] if rows == 1 else data}


def _rate(rng: random.Random, forced: bool, counted: bool = False) -> dict:
    if forced:
        return {"$": "rate", "name": "forced", "omega": round(rng.uniform(1.0, 6.0), 3), "counted": counted}
    return {"$": "rate", "name": "pendulum", "g": round(rng.uniform(3.0, 15.0), 3), "counted": counted}


def hidden_rk_step(rng: random.Random) -> list:
    """Six steps of drawn schemes on drawn states, times and step sizes; four on a forced rate with c ≠ 0."""
    cases = []
    for k in range(6):
        forced = k < 4
        name = rng.choice(SCHEMES[1:] if forced else SCHEMES)
        t, h = round(rng.uniform(0.0, 2.0), 4), round(rng.uniform(0.05, 0.5), 4)
        cases.append(recipe(f"{name}: a drawn {'forced' if forced else 'pendulum'} rate, t = {t}, h = {h}",
                            _rate(rng, forced), t, _state(rng), h, {"$": "scheme", "name": name},
                            catches=NODE_MISSES if forced else ()))
    return cases


def hidden_embedded_step(rng: random.Random) -> list:
    """Five drawn (scheme, b̂) pairs on drawn rates (their evaluations counted), states, times and step sizes."""
    cases = []
    for k in range(5):
        name, b_hat = rng.choice(EMBEDDED_PAIRS[:-1]) if k < 4 else EMBEDDED_PAIRS[-1]
        t, h = round(rng.uniform(0.0, 2.0), 4), round(rng.uniform(0.05, 0.4), 4)
        cases.append(recipe(f"{name} with b̂ = ({', '.join(b_hat)}): t = {t}, h = {h}", _rate(rng, k % 2 == 0, True), t,
                            _state(rng), h, {"$": "scheme", "name": name}, {"$": "fractions", "items": list(b_hat)},
                            catches=embedded_misses(name, b_hat)))
    return cases


# ----------------------------------------------------------------------------- global error
def reference_global_error(G, scheme, dt: float, t_final: float) -> float:
    """E(Δt) = ‖x_N − x(t_final)‖₂: roll ``G`` out with ``scheme`` from the paper's x(0) for N_t = round(t_final/Δt) steps."""
    n = int(round(t_final / dt))
    x0 = torch.tensor(physics.exact_solution(0.0), dtype=torch.float64)
    return odenet.global_error(odenet.rollout(G, x0, scheme, dt, n), t_final)


def ratio_rows(side: str, rng: random.Random, count: int) -> list:
    """``count`` drawn ``(dt, t_final)`` whose t_final/dt is exactly whole (``"exact"``: dt = 2^-k), a hair below a
    whole number (``"below"``) or a hair above it (``"above"``)."""
    out = []
    while len(out) < count:
        if side == "exact":
            dt = 2.0 ** -rng.randint(2, 6)
            out.append((dt, rng.randint(3, 40) * dt))
            continue
        dt = rng.choice((0.1, 0.2, 0.3, 0.7, 0.01, 0.02, 0.05))
        n = rng.randint(2, 40)
        t_final = round(n * dt, 10)
        if t_final <= 6 and (t_final / dt > n) == (side == "above") and t_final / dt != n and (dt, t_final) not in out:
            out.append((dt, t_final))
    return out


def hidden_global_error(rng: random.Random) -> list:
    """Six rollouts: two whose t_final/dt is exactly whole, two a hair below, two a hair above."""
    rows = []
    for side in ("exact", "below", "above"):
        for dt, t_final in ratio_rows(side, rng, 2):
            g = "true_rate" if rng.random() < 0.5 else rng.randint(0, 10_000)
            rows.append((g, rng.choice(SCHEMES), dt, t_final))
    return global_error_cases(rows)


# ----------------------------------------------------------------------------- the error ratio of an adaptive step
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
        rows.append((rng.randint(1, 6), T, k % 2 == 0, round(rng.uniform(0.5, 1.2), 3), rng.choice(BLOCK_SCHEMES),
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


# ----------------------------------------------------------------------------- the near misses' code
RK_STAGES = '''def rk_step(f, t, x, h, tableau):
    k = []
    for i in range(tableau.stages):
        X = x
        for j in range(i):
            X = X + h * float(tableau.a[i][j]) * k[j]
        k.append(f({time}, X))
    return x + h * sum(float(b) * ki for b, ki in zip(tableau.b, k))'''

EMBEDDED_FLIPPED = '''def embedded_step(f, t, x, h, tableau, b_hat):
    k = []
    for i in range(tableau.stages):
        X = x
        for j in range(i):
            X = X + h * float(tableau.a[i][j]) * k[j]
        k.append(f(t + float(tableau.c[i]) * h, X))
    step = x + h * sum(float(b) * ki for b, ki in zip(tableau.b, k))
    return step, h * sum(float(c - b) * ki for b, c, ki in zip(tableau.b, b_hat, k))  # the sign flipped'''

GLOBAL_ERROR = '''import math

import numpy as np
import torch

from cnet_lib.pendulum import exact_solution, rollout


def global_error(G, scheme, dt, t_final):
    x0 = torch.tensor(exact_solution(0.0), dtype=torch.float64)
    path = rollout(G, x0, scheme, dt, {count})
    return float(np.linalg.norm(path[-1].numpy() - exact_solution(t_final)))'''

EULER_BLOCK = '''from torch.func import functional_call


def euler_block_as_resnet(block, x):
    m = block.n_basis
    h = {h}
    for k in range(m):
        t = k * block.T / m
        x = x + h * ({gain}functional_call(block.residual, block.theta(t), (x,)))
    return x'''

QUANTIZE = '''import torch


def quantize_per_channel(w, bits):
    levels = 2 ** (bits - 1) - 1
    scale = {scale}
    return (torch.round(w / scale).clamp(-levels, levels) * scale).to(w.dtype)'''

ERROR_RATIO = '''import torch


def error_ratio(e, y0, y1, rtol, atol):
    z = e / (atol + rtol * {scale})
    if z.dim() <= 1:
        z = z.unsqueeze(0)
    return {norm}'''

CODES = {
    "observed_order": {
        "two_point": '''import math


def observed_order(dts, errors):
    return math.log(errors[-2] / errors[-1]) / math.log(dts[-2] / dts[-1])  # the last two points only''',
        "mean_of_slopes": '''import math


def observed_order(dts, errors):
    points = [(math.log(float(d)), math.log(float(e))) for d, e in zip(dts, errors)]
    slopes = [(b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(points, points[1:])]
    return sum(slopes) / len(slopes)''',
    },
    "rk_step": {"stage_time_without_h": RK_STAGES.format(time="t + float(tableau.c[i])"),
                "no_nodes": RK_STAGES.format(time="t")},
    "embedded_step": {
        "two_steps": '''def embedded_step(f, t, x, h, tableau, b_hat):
    def combine(weights):  # a whole step per weight vector: 2s evaluations of f
        k = []
        for i in range(tableau.stages):
            X = x
            for j in range(i):
                X = X + h * float(tableau.a[i][j]) * k[j]
            k.append(f(t + float(tableau.c[i]) * h, X))
        return x + h * sum(float(w) * ki for w, ki in zip(weights, k))
    high, low = combine(tableau.b), combine(b_hat)
    return high, high - low''',
        "flipped_estimate": EMBEDDED_FLIPPED,
    },
    "global_error": {"int": GLOBAL_ERROR.format(count="int(t_final / dt)"),
                     "ceil": GLOBAL_ERROR.format(count="math.ceil(t_final / dt)")},
    "euler_block_as_resnet": {"h_without_T": EULER_BLOCK.format(h="1 / m", gain="block.gain(t) * "),
                              "without_gain": EULER_BLOCK.format(h="block.T / m", gain="")},
    "parameters_after_refinement": {
        "doubled_everything": '''def parameters_after_refinement(model):
    return 2 * model.n_parameters()''',
        "without_gains": '''def parameters_after_refinement(model):
    return model.n_parameters() + sum(p.numel() for b in model.blocks for p in b.coeffs.values())''',
    },
    "refine_piecewise_linear": {
        "constant_refinement": '''import torch


def refine_piecewise_linear(coeffs):
    return torch.repeat_interleave(coeffs, 2, dim=0)  # as for piecewise-constant θ''',
        "m_is_one": '''import torch


def refine_piecewise_linear(coeffs):
    refined = torch.empty((2 * coeffs.shape[0] - 1, *coeffs.shape[1:]), dtype=coeffs.dtype)
    refined[0::2] = coeffs
    refined[1::2] = 0.5 * (coeffs[:-1] + coeffs[1:])
    return refined''',
    },
    "ideal_speedup": {"max_not_last": '''def ideal_speedup(n_steps_per_epoch):
    n = list(n_steps_per_epoch)
    return len(n) * max(n) / sum(n)  # the largest N_t, not the last'''},
    "identity_gap": {
        "by_position": '''def identity_gap(rows):
    return 100.0 * (rows[4]["accuracy"] - rows[6]["accuracy"])  # where the rows stood before the shuffle''',
        "as_fraction": '''def identity_gap(rows):
    trained = next(r for r in rows if r["kind"] == "trained")
    identity = next(r for r in rows if r["kind"] == "identity")
    return trained["accuracy"] - identity["accuracy"]  # a fraction, not points''',
    },
    "quantize_per_channel": {
        "one_scale": QUANTIZE.format(scale="w.abs().max() / levels"),
        "nan_on_zeros": QUANTIZE.format(scale="w.abs().flatten(1).amax(dim=1).reshape(-1, *[1] * (w.dim() - 1)) / levels"),
        "levels_off_by_one": '''import torch


def quantize_per_channel(w, bits):
    levels = 2 ** (bits - 1)  # one level too many on each side of zero
    amax = w.abs().flatten(1).amax(dim=1).reshape(-1, *[1] * (w.dim() - 1))
    scale = torch.where(amax > 0, amax / levels, torch.ones_like(amax))
    return (torch.round(w / scale).clamp(-levels, levels) * scale).to(w.dtype)''',
    },
    "error_ratio": {
        "rms_over_batch": ERROR_RATIO.format(scale="torch.maximum(y0.abs(), y1.abs())", norm="z.square().mean().sqrt().item()"),
        "y0_only": ERROR_RATIO.format(scale="y0.abs()", norm="z.flatten(1).square().mean(1).sqrt().max().item()"),
        "max_entry": ERROR_RATIO.format(scale="torch.maximum(y0.abs(), y1.abs())", norm="z.abs().max().item()"),
        "last_axis": ERROR_RATIO.format(scale="torch.maximum(y0.abs(), y1.abs())",
                                        norm="z.square().mean(-1).sqrt().max().item()  # per row of the last axis"),
    },
}
"""Exercise -> near miss tag -> the code of a student who makes that mistake."""


# ----------------------------------------------------------------------------- the key of an exercise
@dataclass(frozen=True)
class Key:
    """An exercise's ``reference`` (what the student's function must return) and ``hidden(rng)`` (its hidden cases)."""

    reference: Callable
    hidden: Callable[[random.Random], list]


KEYS: dict[str, Key] = {name: Key(globals()[f"reference_{name}"], globals()[f"hidden_{name}"]) for name in EXERCISES}


def key(name: str) -> Key:
    """The key of exercise ``name``."""
    exercise(name)  # a clear error for an unknown name
    return KEYS[name]


def submission_seed(secret: str, student: str, name: str, nonce: str = "") -> int:
    """The seed of one submission's hidden cases of exercise ``name`` in the grading run ``nonce``: SHA-256 of the
    key's secret, the student's exact name, the exercise and the run's nonce (so the cases differ between students
    and between grading runs, and cannot be predicted without the secret)."""
    data = b"\0".join([secret.encode(), name_bytes(student), name.encode(), nonce.encode()])
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big")


def hidden_cases(name: str, secret: str, student: str, nonce: str = "") -> list:
    """The hidden case recipes of exercise ``name`` for ``student``'s submission in the grading run ``nonce``
    (the gradebook records each row's)."""
    return key(name).hidden(random.Random(submission_seed(secret, student, name, nonce)))


def _values(name: str, fn: Callable, recipes: list, none_on_error: bool = False) -> list:
    """``fn``'s values on ``recipes`` of exercise ``name``, observed with what the arguments saw (e.g. evaluations of
    a rate); None where it raises when ``none_on_error``."""
    ex, out = exercise(name), []
    for r in recipes:
        args, kwargs = build_call(r)
        try:
            with (ex.context() or nullcontext)():
                out.append(observed(fn(*args, **kwargs), args, kwargs))
        except Exception:  # noqa: BLE001 - a near miss that raises on a case has no value there
            if not none_on_error:
                raise
            out.append(None)
    return out


def expected_outputs(name: str, recipes: list) -> list:
    """The reference's values on ``recipes`` (with what the arguments observed, e.g. evaluations of a rate)."""
    return _values(name, key(name).reference, recipes)


@lru_cache(maxsize=None)
def near_miss_function(name: str, tag: str) -> Callable:
    """The function of exercise ``name``'s near miss ``tag`` (its code run once)."""
    ns: dict = {"__name__": f"near_miss_{name}_{tag}"}
    exec(compile(CODES[name][tag], f"<near miss {name}:{tag}>", "exec"), ns)
    return ns[name]


def near_miss_outputs(name: str, tag: str, recipes: list) -> list[Optional[object]]:
    """The near miss ``tag``'s values on ``recipes``, observed as the reference's are (None where it raises)."""
    return _values(name, near_miss_function(name, tag), recipes, none_on_error=True)


# ----------------------------------------------------------------------------- public answers, as data
def public_answers() -> dict:
    """``{"format": 1, "exercises": {name: {"recipes_sha256", "expected": [encoded values], "near_misses": {tag:
    [encoded value, or None where the case does not catch it]}}}}`` from the references and the near misses' code."""
    out = {}
    for name in EXERCISES:
        ex = exercise(name)
        recipes = ex.public()
        near = {}
        for m in ex.near_misses:
            values = near_miss_outputs(name, m.tag, recipes)
            near[m.tag] = [encode(v) if v is not None and m.tag in r.get("catches", ()) else None
                           for v, r in zip(values, recipes)]
        out[name] = {"recipes_sha256": recipes_digest(recipes),
                     "expected": [encode(v) for v in expected_outputs(name, recipes)], "near_misses": near}
    return {"format": 1, "exercises": out}


def write_public_answers(path: Optional[Path] = None) -> Path:
    """Write :func:`public_answers` to ``path`` (default: the package's ``public_answers.json``)."""
    path = Path(path or PUBLIC_ANSWERS)
    path.write_text(json.dumps(public_answers(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def stale_answers(path: Optional[Path] = None, margin: float = 1.0) -> list[str]:
    """The exercises whose stored public answers no longer serve their checks (missing ones included): the cases
    changed, or the reference's values on this machine fail the exercise's comparison with the stored ones at
    ``margin`` times its tolerances (1: the check's own; the tests ask for 0.1)."""
    path = Path(path or PUBLIC_ANSWERS)
    stored = json.loads(path.read_text(encoding="utf-8")).get("exercises", {}) if path.is_file() else {}
    stale = []
    for name, entry in public_answers()["exercises"].items():
        old = stored.get(name)
        if (not isinstance(old, dict) or old.get("recipes_sha256") != entry["recipes_sha256"]
                or not isinstance(old.get("expected"), list) or len(old["expected"]) != len(entry["expected"])
                or not isinstance(old.get("near_misses"), dict) or set(old["near_misses"]) != set(entry["near_misses"])):
            stale.append(name)
            continue
        ex = exercise(name)
        tight = dataclasses.replace(ex, rtol=ex.rtol * margin, atol=ex.atol * margin)
        if not all(tight.matches(decode(new), decode(kept)) for new, kept in zip(entry["expected"], old["expected"])):
            stale.append(name)
    return stale


# ----------------------------------------------------------------------------- the class's key
@dataclass(frozen=True)
class AnswerKey:
    """What grading needs: the ``secret``, the class's ``chapters`` and ``exercises`` (in order) with their
    ``points``, the students' library ``build`` and the default ``time_limit`` per exercise (seconds)."""

    secret: str
    chapters: tuple[str, ...]
    exercises: tuple[str, ...]
    points: Mapping[str, int]
    build: str = ""
    time_limit: float = DEFAULT_TIME_LIMIT

    @classmethod
    def load(cls, path: Path) -> "AnswerKey":
        """The key in folder ``path`` (or the ``key.json`` file ``path``); a clear error for anything else."""
        path = Path(path)
        file = path / KEY_FILE if path.is_dir() else path
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ValueError(f"no answer key at {file} ({err}); pass the KEYDIR that `python -m cnet_lib student "
                             "... --key KEYDIR` wrote") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"{file} is not an answer key of this library (format {found!r})")
        for name in data.get("exercises", []):
            try:
                exercise(name)
            except KeyError as err:  # a key from another version of the book: one sentence, no traceback
                raise ValueError(f"{file} names an exercise this version of the book does not have ({err.args[0]}); "
                                 "grade with the version of cnet_lib the key was written for, or write the key again "
                                 "with `python -m cnet_lib student`") from None
        try:
            return cls(str(data["secret"]), tuple(data["chapters"]), tuple(data["exercises"]),
                       {k: int(v) for k, v in data["points"].items()}, data.get("build", ""),
                       float(data.get("time_limit", DEFAULT_TIME_LIMIT)))
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ValueError(f"{file} is damaged ({type(err).__name__}: {err}); write the key again with "
                             "`python -m cnet_lib student`") from None

    @classmethod
    def new(cls, chapters: Sequence[str], build: str = "", time_limit: float = DEFAULT_TIME_LIMIT) -> "AnswerKey":
        """A key for ``chapters`` with a fresh secret and the catalogue's points."""
        names = tuple(n for c in chapters for n in chapter_exercises(c))
        if not names:
            raise ValueError(f"the chapters {list(chapters)} have no exercises")
        return cls(secrets.token_hex(16), tuple(chapters), names, {n: info(n).points for n in names}, build, time_limit)

    def data(self) -> dict:
        """The key as ``key.json`` stores it."""
        return {"format": FORMAT, "secret": self.secret, "chapters": list(self.chapters),
                "exercises": list(self.exercises), "points": dict(self.points), "build": self.build,
                "time_limit": self.time_limit}


def write_key(keydir: Path, key_: AnswerKey, solutions: Optional[Mapping[str, str]] = None) -> Path:
    """Write ``key.json`` and ``answer_key.md`` into ``keydir`` (``solutions``: exercise -> solution source);
    returns the folder."""
    keydir = Path(keydir)
    keydir.mkdir(parents=True, exist_ok=True)
    (keydir / KEY_FILE).write_text(json.dumps(key_.data(), indent=1) + "\n", encoding="utf-8")
    try:
        (keydir / KEY_FILE).chmod(0o600)
    except OSError:  # a file system without modes: nothing to do
        pass
    (keydir / "answer_key.md").write_text(_markdown(key_, solutions or {}), encoding="utf-8")
    return keydir


def _markdown(key_: AnswerKey, solutions: Mapping[str, str]) -> str:
    lines = [f"# Answer key (cnet-lib {key_.build or 'working tree'})", "",
             f"Chapters: {', '.join(key_.chapters)}. Total: {sum(key_.points.values())} points. Keep this folder to "
             "yourself: `key.json` holds the secret every submission's hidden cases are drawn from.", "",
             "Grade with `python -m cnet_lib grade SUBMISSIONS --key THIS_FOLDER --out gradebook.csv`.", ""]
    for name in key_.exercises:
        lines += _exercise_section(name, key_.points[name], solutions.get(name))
    return "\n".join(lines) + "\n"


def _exercise_section(name: str, points: int, solution: Optional[str]) -> list[str]:
    row, ex, k = info(name), exercise(name), key(name)
    public = ex.public()
    hidden_doc = inspect.getdoc(k.hidden) or ""
    rules = ex.rules
    most = round(points * NEAR_MISS_SHARE, 2)
    lines = [f"## `{name}` ({row.chapter})", "",
             f"- objective: {row.objective}", f"- about {row.minutes} min; difficulty {row.difficulty} ({DIFFICULTY[row.difficulty]}); "
             f"{points} point{'s' if points != 1 else ''}, in proportion to the hidden cases passed, and at most a third "
             f"({most:g}) for a submission that fails a case built to catch a near miss below",
             f"- public cases ({len(public)}): " + "; ".join(r["label"] for r in public),
             f"- hidden cases, drawn per submission and grading run: {hidden_doc}",
             f"- near misses, each caught by the hidden cases of every draw and getting at most {most:g} of {points}:"]
    lines += [f"  - {m.words} (the hint it gets: \"{m.hint}\")" for m in ex.near_misses] or ["  - none named"]
    lines += [f"- an exercise cell may not use: {', '.join(rules.banned_names + rules.banned_modules) or 'nothing named'}"
              + (f"; of cnet_lib only {', '.join(rules.allowed_imports)}" if rules.allowed_imports else "; nothing of cnet_lib"),
              "- hints: " + " / ".join(ex.hints), ""]
    if solution:
        lines += ["```python", solution.strip(), "```", ""]
    return lines


def solution_sources(root: Optional[Path] = None) -> dict[str, str]:
    """``{exercise: the source of its solution cell}`` from the chapters (without the cell's title line, the
    ``@solution`` decorator and its import): what a right answer in the exercise cell looks like."""
    out = {}
    for path in toc_notebooks(root):
        nb = read_notebook(path)
        for _, sol in exercise_pairs(nb):
            if sol is None:
                continue
            text = cell_source(nb["cells"][sol])
            lines = [ln for ln in text.split("\n") if ln.strip() not in (SOLUTION_TITLE, "@solution",
                                                                          "from cnet_lib.book.exercises import solution")]
            clean = "\n".join(lines).strip("\n")
            while "\n\n\n\n" in clean:
                clean = clean.replace("\n\n\n\n", "\n\n\n")
            for name in function_signatures(text):
                out[name] = clean
    return out
