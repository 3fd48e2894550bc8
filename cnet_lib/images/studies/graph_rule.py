"""Which graphs a trained model is judged on: the rule of the manifestation verdict.

The rule is post hoc: it was set on 2026-11-28 (issue 40), after the three ``gpu`` training seeds had been judged on
every graph, when their verdicts were found to rest on graphs whose steps cross θ's jumps (CHANGELOG).

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

__all__ = ["GRAPH_KINDS", "KIND_WORDS", "KEEP_POINTS", "graph_kind", "graphs_of_kind", "trained_row"]

KEEP_POINTS = 2.0
"""The book's one threshold for "keeps its accuracy", in points: a trained model keeps its accuracy on another graph
(another scheme, N_t or solver for the same θ(t)) when it loses less than this there, and loses it when it loses this
much or more.  *Manifestation invariance* (:func:`cnet_lib.images.studies.sweep_verdict.judge_sweeps`, over seeds
:func:`cnet_lib.images.studies.seed_verdict.contrast_over_seeds`), *Adaptive steps*
(:data:`cnet_lib.studies.adaptive.IMAGE_RULE`, with its paired 95% interval) and the page *The
paper's claims, checked* all judge by it.  Why 2: it is the paper's own yardstick for an unchanged model, "within the
minimum and maximum of the repeated training samples" (Sec. 5.3.2), read on the book's models: retraining from another
seed moves one method's accuracy by up to 0.9 points (``gpu``, three seeds) and 1.75 (``cpu``, two seeds); it lies
above the sampling error of a comparison of two graphs on the same images (about ±0.6 points on 5,000 images, ±1 on
2,000); and it is the smallest effect of the planned manifestation study
(``cnet_lib/studies/manifestation_factorial/analysis_plan.md``).  Set on 2026-11-29 (issue 51), after the chapters'
numbers were seen: before, *Manifestation invariance* asked a 5-point loss of the Euler-trained model (and at most 2
of the RK4-trained one) and *Adaptive steps* 1 point; the CHANGELOG keeps what each said."""

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
