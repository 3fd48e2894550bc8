"""The honest verdict of the manifestation sweeps, computed from the numbers.

:func:`judge_sweeps` decides, from a pair of sweeps (the Euler-trained and the RK4-trained model),
whether the blocks matter at all and whether the paper's contrast is there;
:func:`cnet_lib.report.sweep_report.word_sweeps` writes sentences that quote the numbers.  The chapters
display those instead of asserting invariance.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

from ...runtime.rows import find_row
from .graph_rule import KEEP_POINTS, graphs_of_kind

__all__ = ["Verdict", "judge_sweeps", "worst_loss"]


@dataclass
class Verdict:
    """What the numbers say (in words: :func:`cnet_lib.report.sweep_report.word_sweeps`)."""

    blocks_matter: bool
    contrast: bool
    gaps: dict  # run -> trained minus identity accuracy, in points
    drops: dict  # run -> largest loss on a valid graph (cnet_lib.images.studies.graph_rule), in points
    euler: str = "euler_fixed"
    rk4: str = "rk4_refined"
    thresholds: dict = field(default_factory=dict)  # matter_points, lose_points, hold_points
    rows: dict = field(default_factory=dict)  # run -> its sweep rows
    straddle_drops: dict = field(default_factory=dict)  # run -> largest loss on graphs whose steps cross θ's jumps
    basis: str = "piecewise_constant"


def worst_loss(rows: Sequence[dict], kind: str = "valid", basis: str = "piecewise_constant") -> tuple[float, Optional[dict]]:
    """The largest loss (points) of one model's sweep ``rows`` on its graphs of ``kind``
    (:func:`cnet_lib.images.studies.graph_rule.graph_kind`) below its own graph, and that graph's row; ``(nan, None)``
    when the sweep has no graph of that kind."""
    tr = find_row(rows, kind="trained")
    graphs = graphs_of_kind(rows, kind, basis)
    if not graphs:
        return float("nan"), None
    worst = min(graphs, key=lambda r: r["accuracy"])
    return 100.0 * (tr["accuracy"] - worst["accuracy"]), worst


def judge_sweeps(rows: Mapping[str, Sequence[dict]], *, euler: str = "euler_fixed", rk4: str = "rk4_refined",
                 matter_points: float = 10.0, lose_points: float = KEEP_POINTS, hold_points: float = KEEP_POINTS,
                 basis: str = "piecewise_constant") -> Verdict:
    """Judge a pair of sweeps ``{run: rows}`` (Euler-trained ``euler``, RK4-trained ``rk4``, θ(t) in ``basis``),
    without words.

    * the blocks **matter** when, for both models, removing every OdeBlock (the ``identity`` row)
      costs at least ``matter_points`` percentage points of accuracy;
    * the **contrast** of the paper appears when the blocks matter and, on the *valid* graphs of each model
      (:mod:`cnet_lib.images.studies.graph_rule`: steps aligned with θ's pieces, order ≥ the training scheme's,
      N_t ≥ the trained N_t), the Euler-trained model loses at least ``lose_points`` points somewhere while the
      RK4-trained model loses less than ``hold_points`` everywhere (both :data:`~.graph_rule.KEEP_POINTS` by default,
      the book's one threshold for "keeps its accuracy").

    The losses on graphs whose steps cross θ's jumps are kept apart (``straddle_drops``): they are shown, never
    judged.
    """
    for name in (euler, rk4):
        if (name not in rows or find_row(rows[name], kind="trained", default=None) is None
                or find_row(rows[name], kind="identity", default=None) is None):
            raise ValueError(f"need sweep rows with 'trained' and 'identity' rows for {name!r}; got runs {list(rows)}")
    gaps, drops, straddle = {}, {}, {}
    for name in (euler, rk4):
        tr, ident = find_row(rows[name], kind="trained"), find_row(rows[name], kind="identity")
        gaps[name] = 100.0 * (tr["accuracy"] - ident["accuracy"])
        drops[name] = worst_loss(rows[name], "valid", basis)[0]
        straddle[name] = worst_loss(rows[name], "straddles", basis)[0]
    matter = all(g >= matter_points for g in gaps.values())
    contrast = bool(matter and drops[euler] >= lose_points and drops[rk4] < hold_points)
    return Verdict(matter, contrast, gaps, drops, euler, rk4,
                   dict(matter_points=matter_points, lose_points=lose_points, hold_points=hold_points),
                   {euler: list(rows[euler]), rk4: list(rows[rk4])}, straddle, basis)
