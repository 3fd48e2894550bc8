"""Exercises of the image chapters ("ContinuousNet", "Refinement training", "Manifestation invariance").

* :func:`check_euler_block_as_resnet`: one OdeBlock, Euler, piecewise-constant θ, N_t = M, written as
  the residual loop of a ResNet (blocks with T ≠ 1, with and without skip gains, whose current
  manifestation is another graph; the block's own forward and the integrator are off limits).
* :func:`check_parameters_after_refinement`: the parameter count after every OdeBlock doubles M
  (without refining: ``refine`` is off limits).
* :func:`check_ideal_speedup`: Σ N_t over the epochs, the ideal speed-up of a refinement schedule.
* :func:`check_identity_gap`: how many accuracy points the blocks are worth, from sweep rows in any order.
"""
from __future__ import annotations

import copy
import random
from typing import Callable, Optional, Sequence

import torch
from torch import nn

from ...core import bases, integrate, models, odeblock, resnet
from ...images import cached_studies as image_study
from ...images import image_tables
from ...images import verdict as image_verdict
from ...runtime import rows as row_tables
from .framework import Case, Forbidden, check

__all__ = [
    "reference_euler_block_as_resnet",
    "check_euler_block_as_resnet",
    "EULER_BLOCK_HINTS",
    "reference_parameters_after_refinement",
    "check_parameters_after_refinement",
    "PARAMETERS_AFTER_REFINEMENT_HINTS",
    "reference_ideal_speedup",
    "check_ideal_speedup",
    "IDEAL_SPEEDUP_HINTS",
    "reference_identity_gap",
    "check_identity_gap",
    "IDENTITY_GAP_HINTS",
]

EULER_BLOCK_HINTS = (
    "an Euler step adds h times the rate to x. With N_t = M steps, step k starts at t_k = k·h and reads "
    "θ there: one residual update per step, in a loop over k.",
    "h = block.T / block.n_basis: T is not always 1. The rate at time t is "
    "block.gain(t) * functional_call(block.residual, block.theta(t), (x,)).",
    "each step starts from the x the previous step produced: update x inside the loop, k = 0, …, M − 1, "
    "then return it. The block's current scheme and N_t play no role: the exercise fixes Euler and N_t = M.",
)

PARAMETERS_AFTER_REFINEMENT_HINTS = (
    "which parts of a ContinuousNet hold weight functions θ(t)? Only those grow when M doubles.",
    "a refinement doubles every trainable tensor inside model.blocks (the coefficient sets θ̂_β and the "
    "gains s_β); the stem, the stitches and the head keep their size.",
    "count the trainable scalars inside the blocks (p.numel() of each of their parameters) and add that "
    "count once more to model.n_parameters().",
)

IDEAL_SPEEDUP_HINTS = (
    "an epoch costs in proportion to its N_t. What does the whole schedule cost, and what would the same "
    "number of epochs cost, all at the final N_t?",
    "the schedule costs Σ_e N_t(e) units; fixed depth costs E epochs × the final N_t. The speed-up is "
    "fixed-depth cost over schedule cost, as a float.",
)

IDENTITY_GAP_HINTS = (
    "find the rows by their 'kind', not by their position: the order of the rows is not fixed.",
    "take the 'accuracy' of the row whose kind is 'trained' and of the row whose kind is 'identity'. "
    "Accuracies are fractions of 1; the gap is asked in percentage points.",
)


def _integrator_functions() -> tuple:
    """The functions of :mod:`cnet_lib.core.integrate` that integrate (its helpers stay allowed)."""
    return (integrate.integrate, integrate.integrate_positions, integrate.stage_positions)


# ----------------------------------------------------------------------------- chapter "ContinuousNet"
def reference_euler_block_as_resnet(block, x):
    """The block's own Euler, N_t = M graph: ``block(x)`` with that manifestation (then restored)."""
    with block.manifested("euler", block.n_basis):
        return block(x)


def _small_blocks() -> list:
    cases = []
    # (M, T, skip gains, epsilon, the block's current manifestation)
    for m, T, skip, eps, graph, seed in ((1, 1.0, False, 1.0, ("euler", 1), 0),
                                         (3, 0.5, False, 0.8, ("midpoint", 3), 1),
                                         (4, 2.5, True, 1.0, ("rk4_classic", 2), 2),
                                         (7, 1.3, True, 0.6, ("euler", 14), 3)):
        torch.manual_seed(seed)
        residual = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 5))
        block = odeblock.OdeBlock(residual, m, scheme=graph[0], n_steps=graph[1], epsilon=eps, T=T, skip_init=skip)
        if skip:
            with torch.no_grad():
                block.skip_gain.copy_(torch.linspace(0.3, 1.1, m) * torch.tensor([(-1.0) ** k for k in range(m)]))
        x = torch.randn(6, 5, generator=torch.Generator().manual_seed(seed))
        label = (f"an OdeBlock with M = {m}, T = {T}, ε = {eps}, {'skip gains s(t)' if skip else 'no skip gains'}, "
                 f"currently set to {graph[0]} with N_t = {graph[1]}; x of shape {tuple(x.shape)}")
        cases.append(Case((block, x), label=label))
    return cases


def check_euler_block_as_resnet(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``euler_block_as_resnet(block, x)`` against the block's own Euler, N_t = M graph."""
    return check(
        student_fn, reference_euler_block_as_resnet, _small_blocks(), name="euler_block_as_resnet",
        hints=EULER_BLOCK_HINTS, hint=hint, checker="check_euler_block_as_resnet",
        forbidden=[
            Forbidden(functions=(odeblock.OdeBlock.forward, odeblock.OdeBlock.rate),
                      why="block(x) integrates the whole block; write the M residual updates yourself with "
                      "block.theta, block.gain and functional_call."),
            Forbidden(functions=_integrator_functions(), modules=(resnet,),
                      why="write the M residual updates yourself with block.theta, block.gain and functional_call."),
        ],
        context=torch.no_grad, rtol=1e-5, atol=1e-6,
    )


# ----------------------------------------------------------------------------- chapter "Refinement training"
def reference_parameters_after_refinement(model) -> int:
    """Parameters of a refined copy: ``copy.deepcopy(model).refine().n_parameters()``."""
    return copy.deepcopy(model).refine().n_parameters()


def _models() -> list:
    cases = []
    for ch, m, skip, classes in (((4, 8, 8), 1, True, 10), ((3, 5), 2, False, 10), ((2, 4, 6), [1, 2, 4], True, 10),
                                 ((6,), 3, False, 100)):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            model = models.ContinuousNet(channels=ch, n_basis=m, skip_init=skip, num_classes=classes)
        cases.append(Case((model,), label=f"ContinuousNet(channels={ch}, n_basis={m}, skip_init={skip}, "
                                          f"num_classes={classes})"))
    return cases


def _refine_functions() -> tuple:
    """Every ``refine`` of the library (models, OdeBlock, bases) and the maps it applies."""
    out = []
    for mod in (models, odeblock, bases):
        for cls in vars(mod).values():
            if isinstance(cls, type) and cls.__module__ == mod.__name__:
                out += [f for key, f in vars(cls).items() if callable(f) and hasattr(f, "__code__")
                        and ("refine" in key or key == "_apply_map")]
    return tuple(out)


def check_parameters_after_refinement(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``parameters_after_refinement(model)`` on a few ContinuousNets (counted by refining a copy)."""
    return check(
        student_fn, reference_parameters_after_refinement, _models(), name="parameters_after_refinement",
        hints=PARAMETERS_AFTER_REFINEMENT_HINTS, hint=hint, checker="check_parameters_after_refinement",
        forbidden=[Forbidden(functions=_refine_functions(),
                             why="The exercise is to count without refining: which tensors double?")],
    )


def reference_ideal_speedup(n_steps_per_epoch: Sequence[int]) -> float:
    """epochs × final N_t / Σ N_t: fixed-depth cost over refinement cost when an epoch costs ∝ N_t."""
    n = [int(v) for v in n_steps_per_epoch]
    return len(n) * n[-1] / sum(n)


def check_ideal_speedup(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``ideal_speedup(n_steps_per_epoch)`` on a few refinement schedules."""
    schedules = [[1, 2, 2], [8] * 5, [1, 1, 2, 2, 4, 4, 8, 8, 8, 8], (1, 2, 4),
                 [1] * 20 + [2] * 20 + [4] * 20 + [8] * 10 + [16] * 10 + [32] * 40]
    cases = [Case((s,), label=f"N_t per epoch {list(s) if len(s) < 12 else str(list(s)[:6])[:-1] + ', …]'}")
             for s in schedules]
    return check(student_fn, reference_ideal_speedup, cases, name="ideal_speedup",
                 hints=IDEAL_SPEEDUP_HINTS, hint=hint, checker="check_ideal_speedup",
                 forbidden=[Forbidden(modules=(image_tables, image_study),
                                      why="the image study computes the measured and ideal speed-ups; compute it yourself.")])


# ----------------------------------------------------------------------------- chapter "Manifestation invariance"
def reference_identity_gap(rows: Sequence[dict]) -> float:
    """Accuracy of the ``trained`` row minus that of the ``identity`` row, in percentage points."""
    trained = next(r for r in rows if r["kind"] == "trained")
    ident = next(r for r in rows if r["kind"] == "identity")
    return 100.0 * (trained["accuracy"] - ident["accuracy"])


def _sweep_rows(acc_trained: float, acc_identity: float, seed: int) -> list:
    """Rows like a sweep's, in an order drawn from ``seed`` (no row has a fixed position)."""
    rows = [{"kind": "manifestation", "scheme": s, "n_steps": n, "accuracy": a, "is_trained": False}
            for s, n, a in (("euler", 1, 0.31), ("midpoint", 2, 0.42), ("rk4_classic", 4, acc_trained - 0.01))]
    rows.append({"kind": "manifestation", "scheme": "rk4_classic", "n_steps": 8, "accuracy": acc_trained,
                 "is_trained": True})
    rows.append({"kind": "trained", "scheme": "rk4_classic", "n_steps": 8, "accuracy": acc_trained})
    rows.append({"kind": "compressed", "scheme": "rk4_38", "n_steps": 2, "n_basis": 2, "accuracy": 0.12})
    rows.append({"kind": "identity", "scheme": None, "n_steps": 0, "accuracy": acc_identity})
    random.Random(seed).shuffle(rows)
    return rows


def check_identity_gap(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``identity_gap(rows)`` on synthetic sweep rows, in shuffled orders."""
    cases = [Case((_sweep_rows(tr, ident, seed),), label=f"{7} sweep rows in a shuffled order (seed {seed})")
             for tr, ident, seed in ((0.775, 0.183, 0), (0.18, 0.18, 1), (0.5, 0.6, 2), (0.723, 0.208, 3))]
    return check(student_fn, reference_identity_gap, cases, name="identity_gap",
                 hints=IDENTITY_GAP_HINTS, hint=hint, checker="check_identity_gap",
                 forbidden=[Forbidden(modules=(image_study, image_tables, image_verdict, row_tables),
                                      why="the image study reads the rows for you; find them yourself.")],
                 rtol=1e-9, atol=1e-9)
