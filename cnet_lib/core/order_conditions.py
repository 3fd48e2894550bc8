"""Butcher's order conditions, in exact rational arithmetic: rooted trees and elementary weights.

A Runge–Kutta method with matrix ``A`` and a weight row ``w`` has order ``p`` when, for every rooted
tree ``τ`` with at most ``p`` vertices (Butcher 1963; Hairer, Nørsett and Wanner I, §II.2),

.. math::

    \\sum_i w_i\\, \\Phi_i(\\tau) = \\frac{1}{\\gamma(\\tau)},

with the stage weights ``Φ_i`` (``Φ_i(•) = 1``; ``Φ_i(τ) = Π_{children u} (A Φ(u))_i``) and the density
``γ(τ) = |τ| · Π_{children u} γ(u)``.  Every quantity here is a :class:`fractions.Fraction`, so a
condition holds or fails exactly.  :class:`cnet_lib.core.schemes.Tableau` checks its weight row ``b``
and an embedded pair also its second row ``b_hat`` (:func:`check_row_order`).
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Iterator, Sequence

__all__ = ["rooted_trees", "tree_order", "density", "stage_weights", "elementary_weight", "row_satisfies",
           "check_row_order"]


# A rooted tree is the sorted tuple of its children's trees; the single vertex is ().
def _grow(tree: tuple) -> Iterator[tuple]:
    """Every tree obtained by attaching one new leaf to some vertex of ``tree``."""
    yield tuple(sorted(tree + ((),)))
    for i, child in enumerate(tree):
        for grown in _grow(child):
            yield tuple(sorted(tree[:i] + (grown,) + tree[i + 1 :]))


@lru_cache(maxsize=None)
def rooted_trees(order: int) -> tuple[tuple, ...]:
    """All rooted trees with ``order`` vertices (1, 1, 2, 4, 9, 20, ... of them)."""
    if order < 1:
        raise ValueError(f"order must be >= 1, got {order}")
    if order == 1:
        return ((),)
    found = {g for t in rooted_trees(order - 1) for g in _grow(t)}
    return tuple(sorted(found))


def tree_order(tree: tuple) -> int:
    """|τ|: the number of vertices."""
    return 1 + sum(tree_order(c) for c in tree)


def density(tree: tuple) -> int:
    """γ(τ): |τ| times the densities of the subtrees."""
    return tree_order(tree) * math.prod(density(c) for c in tree)


def stage_weights(tree: tuple, a: Sequence[Sequence[Fraction]]) -> list[Fraction]:
    """Φ_i(τ) = Π over children u of (A Φ(u))_i, with Φ(single vertex) = 1."""
    s = len(a)
    phi = [Fraction(1)] * s
    for child in tree:
        inner = stage_weights(child, a)
        for i in range(s):
            phi[i] *= sum(a[i][j] * inner[j] for j in range(s))
    return phi


def elementary_weight(tree: tuple, a: Sequence[Sequence[Fraction]], weights: Sequence[Fraction]) -> Fraction:
    """Σ_i w_i Φ_i(τ); the order condition for ``tree`` is that this equals 1/γ(τ)."""
    return sum(w * p for w, p in zip(weights, stage_weights(tree, a)))


def row_satisfies(a: Sequence[Sequence[Fraction]], weights: Sequence[Fraction], p: int) -> bool:
    """True when the weight row satisfies every order condition for trees with at most ``p`` vertices."""
    return all(elementary_weight(t, a, weights) == Fraction(1, density(t))
               for q in range(1, p + 1) for t in rooted_trees(q))


def check_row_order(name: str, row: str, a: Sequence[Sequence[Fraction]], weights: Sequence[Fraction],
                    order: int) -> None:
    """Raise ``ValueError`` unless the weight row ``row`` (e.g. ``"b"``) of tableau ``name`` has exactly
    the declared ``order``: every condition up to ``order`` holds and at least one of order ``order + 1``
    fails (so the declared order is the true one)."""
    if sum(weights) != 1:
        raise ValueError(f"tableau {name!r}: the weights {row} sum to {sum(weights)}, not 1 (inconsistent scheme)")
    for p in range(1, order + 1):
        for tree in rooted_trees(p):
            lhs = elementary_weight(tree, a, weights)
            if lhs != Fraction(1, density(tree)):
                reached = max((q for q in range(order) if row_satisfies(a, weights, q)), default=0)
                shown = "(" + ", ".join(str(w) for w in weights) + ")"
                raise ValueError(
                    f"tableau {name!r} claims order {order} for {row} but fails the order-{p} condition "
                    f"for tree {tree}: {row}.Phi = {lhs}, needs 1/{density(tree)}. The weights {row} = {shown} reach "
                    f"order {reached}: declare that order for them; to combine a tableau's stages with other weights "
                    "(an embedded pair's b_hat), compute the combination from the stages yourself"
                )
    if row_satisfies(a, weights, order + 1):
        raise ValueError(
            f"tableau {name!r} claims order {order} for {row} but satisfies every order-{order + 1} "
            "condition too; declare its true order"
        )
