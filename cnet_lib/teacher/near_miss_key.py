"""The answer key's code for every near miss the exercises name (:attr:`cnet_lib.book.exercises.Exercise.near_misses`):
what a student writes who makes that one mistake and no other, as source (:data:`CODES`, exercise -> tag -> code).

The grader runs it on the cases a submission failed (:func:`near_miss_outputs`), so that the feedback's hint is the
one of the near miss the submission actually makes (its values are that near miss's values), never a guess from
which cases failed; ``python -m cnet_lib answers --write`` stores its values on the public cases beside the expected
ones, so that the notebook's check aims its hint the same way.  ``tests/test_grading.py`` checks that the hidden
cases catch each one in every draw, exactly where their ``catches`` say, and that it gets at most a third of the
exercise's points.
"""
from __future__ import annotations

from contextlib import nullcontext
from functools import lru_cache
from typing import Callable, Optional

from ..book.exercises.recipes import build_call, observed
from ..book.exercises.registry import exercise

__all__ = ["CODES", "near_miss_function", "near_miss_outputs"]

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


@lru_cache(maxsize=None)
def near_miss_function(name: str, tag: str) -> Callable:
    """The function of exercise ``name``'s near miss ``tag`` (its code run once)."""
    ns: dict = {"__name__": f"near_miss_{name}_{tag}"}
    exec(compile(CODES[name][tag], f"<near miss {name}:{tag}>", "exec"), ns)
    return ns[name]


def near_miss_outputs(name: str, tag: str, recipes: list) -> list[Optional[object]]:
    """The near miss ``tag``'s values on ``recipes``, observed as the reference's are (None where it raises)."""
    ex, fn, out = exercise(name), near_miss_function(name, tag), []
    for r in recipes:
        args, kwargs = build_call(r)
        try:
            with (ex.context() or nullcontext)():
                out.append(observed(fn(*args, **kwargs), args, kwargs))
        except Exception:  # noqa: BLE001 - a near miss that raises on a case has no value there
            out.append(None)
    return out
