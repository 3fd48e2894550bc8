"""Exercises of the image chapters ("ContinuousNet", "Refinement training", "Manifestation invariance").

* :func:`check_euler_block_as_resnet`: one OdeBlock, Euler, piecewise-constant θ, N_t = M, written as
  the residual loop of a ResNet.
* :func:`check_parameters_after_refinement`: the parameter count after every OdeBlock doubles M.
* :func:`check_ideal_speedup`: Σ N_t over the epochs, the ideal speed-up of a refinement schedule.
* :func:`check_identity_gap`: how many accuracy points the blocks are worth, from sweep rows.
"""
from __future__ import annotations

import copy
from typing import Callable, Sequence

import torch
from torch import nn

from .core import Case, check

__all__ = [
    "reference_euler_block_as_resnet",
    "check_euler_block_as_resnet",
    "reference_parameters_after_refinement",
    "check_parameters_after_refinement",
    "reference_ideal_speedup",
    "check_ideal_speedup",
    "reference_identity_gap",
    "check_identity_gap",
]


# ----------------------------------------------------------------------------- chapter "ContinuousNet"
def reference_euler_block_as_resnet(block, x):
    """x_{k+1} = x_k + h · ε s(t_k) · R(x_k, θ(t_k)), t_k = k h, h = T / M, for k = 0 .. M-1."""
    from fractions import Fraction

    from torch.func import functional_call

    m = block.n_basis
    h = block.T / m
    for k in range(m):
        t = Fraction(k, m) * Fraction(block.T)  # exact: a float k*h may fall just left of the piece's start
        x = x + h * (block.gain(t) * functional_call(block.residual, block.theta(t), (x,)))
    return x


def _small_blocks():
    from ..odeblock import OdeBlock

    cases = []
    for m, skip, seed in ((1, False, 0), (3, False, 1), (4, True, 2)):
        torch.manual_seed(seed)
        residual = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 5))
        block = OdeBlock(residual, m, scheme="euler", epsilon=0.8, skip_init=skip)
        if skip:
            with torch.no_grad():
                block.skip_gain.copy_(torch.linspace(0.3, 1.1, m))
        cases.append(Case((block, torch.randn(6, 5, generator=torch.Generator().manual_seed(seed)))))
    return cases


def check_euler_block_as_resnet(student_fn: Callable) -> bool:
    """Check ``euler_block_as_resnet(block, x)`` against the reference (and against ``block(x)``)."""
    cases = _small_blocks()
    with torch.no_grad():
        for c in cases:  # the reference is what the block itself computes in this manifestation
            block, x = c.args
            assert torch.allclose(block(x), reference_euler_block_as_resnet(block, x), atol=1e-6)
    return check(
        lambda block, x: _no_grad(student_fn, block, x), lambda block, x: _no_grad(reference_euler_block_as_resnet, block, x),
        cases, name="euler_block_as_resnet",
        hint="loop k = 0..M-1 with h = block.T / block.n_basis and the exact step start t = Fraction(k, M) * block.T "
        "(a float k*h can land just left of piece k): "
        "x = x + h * block.gain(t) * torch.func.functional_call(block.residual, block.theta(t), (x,))",
        rtol=1e-5, atol=1e-6,
    )


def _no_grad(fn, *args):
    with torch.no_grad():
        return fn(*args)


# ----------------------------------------------------------------------------- chapter "Refinement training"
def reference_parameters_after_refinement(model) -> int:
    """Parameters after ``model.refine()``: every OdeBlock's coefficients (and skip gain) double."""
    block_params = sum(p.numel() for b in model.blocks for p in b.parameters())
    return model.n_parameters() + block_params


def check_parameters_after_refinement(student_fn: Callable) -> bool:
    """Check ``parameters_after_refinement(model)`` on a few ContinuousNets (counted by refining a copy)."""
    from ..models import ContinuousNet

    cases = [Case((ContinuousNet(channels=ch, n_basis=m, skip_init=s),))
             for ch, m, s in (((4, 8, 8), 1, True), ((3, 5), 2, False), ((2, 4, 6), [1, 2, 4], True))]
    refined = lambda model: copy.deepcopy(model).refine().n_parameters()  # noqa: E731
    for c in cases:
        assert refined(c.args[0]) == reference_parameters_after_refinement(c.args[0])
    return check(student_fn, refined, cases, name="parameters_after_refinement",
                 hint="only the OdeBlocks grow: their parameters double (M -> 2M coefficient sets); the stem, "
                 "stitches and head do not. Count sum(p.numel() for b in model.blocks for p in b.parameters()).")


def reference_ideal_speedup(n_steps_per_epoch: Sequence[int]) -> float:
    """epochs × final N_t / Σ N_t: fixed-depth cost over refinement cost when an epoch costs ∝ N_t."""
    n = [int(v) for v in n_steps_per_epoch]
    return len(n) * n[-1] / sum(n)


def check_ideal_speedup(student_fn: Callable) -> bool:
    """Check ``ideal_speedup(n_steps_per_epoch)`` on a few refinement schedules."""
    cases = [Case(([1, 2, 2],)), Case(([8] * 5,)), Case(([1, 1, 2, 2, 4, 4, 8, 8, 8, 8],)),
             Case(([1] * 20 + [2] * 20 + [4] * 20 + [8] * 10 + [16] * 10 + [32] * 40,))]
    return check(student_fn, reference_ideal_speedup, cases, name="ideal_speedup",
                 hint="a fixed-depth run costs len(n) * n[-1] step-units, the schedule sum(n); return the ratio")


# ----------------------------------------------------------------------------- chapter "Manifestation invariance"
def reference_identity_gap(rows: Sequence[dict]) -> float:
    """Accuracy of the ``trained`` row minus that of the ``identity`` row, in percentage points."""
    trained = next(r for r in rows if r["kind"] == "trained")
    ident = next(r for r in rows if r["kind"] == "identity")
    return 100.0 * (trained["accuracy"] - ident["accuracy"])


def check_identity_gap(student_fn: Callable) -> bool:
    """Check ``identity_gap(rows)`` on synthetic sweep rows."""
    def rows(acc_tr, acc_id, extra=()):
        return ([{"kind": "manifestation", "scheme": "euler", "n_steps": 1, "accuracy": 0.3}]
                + [{"kind": "trained", "scheme": "rk4_classic", "n_steps": 8, "accuracy": acc_tr}]
                + list(extra) + [{"kind": "identity", "scheme": None, "n_steps": 0, "accuracy": acc_id}])

    cases = [Case((rows(0.775, 0.183),)), Case((rows(0.18, 0.18),)),
             Case((rows(0.5, 0.6, [{"kind": "compressed", "scheme": "rk4_38", "n_steps": 2, "accuracy": 0.1}]),))]
    return check(student_fn, reference_identity_gap, cases, name="identity_gap",
                 hint="find the row with kind 'trained' and the row with kind 'identity'; return "
                 "100 * (trained accuracy - identity accuracy)", rtol=1e-9, atol=1e-9)
