"""Which graphs a trained model is judged on: the rule of the manifestation verdict, fixed before the numbers.

A graph (scheme, N_t) evaluated on the trained θ(t) tests manifestation invariance only when it is *at least as
accurate a discretisation* of the trained model's ODE as its own graph.  Three conditions make it so
(:func:`graph_kind` says which a row meets):

1. **its steps align with θ's pieces**: every break point of θ's basis is a step boundary
   (:meth:`cnet_lib.core.bases.Basis.steps_align`: N_t a multiple of M for piecewise-constant θ).  A step that holds
   a jump of θ inside it integrates a right-hand side that jumps within the step, and the scheme loses its order
   there (*Adaptive steps*); such a graph is no finer discretisation, however many steps it has;
2. **its scheme's order is at least the training scheme's** (a fourth-order model is not judged on Euler);
3. **its N_t is at least the trained N_t** (in every block).

A graph that meets 1-3 is ``"valid"``: the verdict (:func:`cnet_lib.images.studies.sweep_verdict.judge_sweeps`, and
over seeds :func:`cnet_lib.images.studies.seed_verdict.contrast_over_seeds`) takes the worst of these.  One that meets
2 and 3 but not 1 ``"straddles"`` θ's jumps: shown as its own row, never in the verdict.  The others are
``"coarser"`` (fewer steps than trained) or ``"lower order"``: shown, not judged.  The trained graph itself is
``"trained"``.
"""
from __future__ import annotations

from typing import Sequence, Union

from ...core.bases import make_basis
from ...core.schemes import get_scheme

__all__ = ["GRAPH_KINDS", "KIND_WORDS", "graph_kind", "graphs_of_kind", "trained_row"]

GRAPH_KINDS = ("trained", "valid", "straddles", "coarser", "lower order")
KIND_WORDS = {
    "trained": "its own graph",
    "valid": "steps aligned with θ's pieces, order ≥ the training scheme's, N_t ≥ the trained N_t",
    "straddles": "steps that cross θ's jumps",
    "coarser": "fewer steps than the trained graph",
    "lower order": "a scheme of lower order than the training scheme",
}
"""Each kind in words, for the tables' notes and the sentences."""


def _per_block(value: Union[int, Sequence[int]], n_blocks: int) -> list[int]:
    return list(value) if isinstance(value, (list, tuple)) else [value] * n_blocks


def _scheme(value) -> str:
    """A row's scheme: one name (the blocks share it), or the first of a list whose names agree."""
    if isinstance(value, (list, tuple)):
        if len(set(value)) != 1:
            raise ValueError(f"a graph with different schemes per block cannot be judged: {value}")
        return value[0]
    return value


def trained_row(rows: Sequence[dict]) -> dict:
    """The row of kind ``"trained"`` of one model's sweep."""
    found = [r for r in rows if r.get("kind") == "trained"]
    if len(found) != 1:
        raise ValueError(f"a sweep has exactly one row of kind 'trained', these rows have {len(found)}")
    return found[0]


def graph_kind(row: dict, trained: dict, basis: str = "piecewise_constant") -> str:
    """Which of :data:`GRAPH_KINDS` the manifestation ``row`` is, for the model whose trained graph is ``trained``
    (both rows of one sweep: ``scheme``, ``n_steps`` and ``n_basis``, an int or one per block) and whose θ(t) lives
    in ``basis``.  The conditions are checked in this order: trained graph, coarser, lower order, straddles, valid."""
    if row.get("kind") != "manifestation":
        raise ValueError(f"only manifestation rows are graphs of the trained θ(t); this row is {row.get('kind')!r}")
    if row.get("is_trained"):
        return "trained"
    lists = [v for v in (row["n_steps"], trained["n_steps"], trained["n_basis"]) if isinstance(v, (list, tuple))]
    n_blocks = len(lists[0]) if lists else 1
    steps, trained_steps = _per_block(row["n_steps"], n_blocks), _per_block(trained["n_steps"], n_blocks)
    pieces = _per_block(trained["n_basis"], n_blocks)
    if any(n < t for n, t in zip(steps, trained_steps)):
        return "coarser"
    if get_scheme(_scheme(row["scheme"])).order < get_scheme(_scheme(trained["scheme"])).order:
        return "lower order"
    if not all(make_basis(basis, m).steps_align(n) for n, m in zip(steps, pieces)):
        return "straddles"
    return "valid"


def graphs_of_kind(rows: Sequence[dict], kind: str, basis: str = "piecewise_constant") -> list[dict]:
    """The manifestation rows of one model's sweep that are of ``kind`` (:func:`graph_kind`)."""
    if kind not in GRAPH_KINDS:
        raise ValueError(f"unknown graph kind {kind!r}; the kinds are {', '.join(GRAPH_KINDS)}")
    tr = trained_row(rows)
    return [r for r in rows if r.get("kind") == "manifestation" and graph_kind(r, tr, basis) == kind]
