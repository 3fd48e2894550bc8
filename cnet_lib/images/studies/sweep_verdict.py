"""The honest verdict of the manifestation sweeps, computed from the numbers.

:func:`judge_sweeps` decides, from a pair of sweeps (the Euler-trained and the RK4-trained model),
whether the blocks matter at all and whether the paper's contrast is there;
:func:`cnet_lib.report.sweep_report.word_sweeps` writes sentences that quote the numbers.  The chapters
display those instead of asserting invariance.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ...core.schemes import get_scheme
from ...runtime.rows import find_row

__all__ = ["Verdict", "judge_sweeps", "off_graph"]


@dataclass
class Verdict:
    """What the numbers say (in words: :func:`cnet_lib.report.sweep_report.word_sweeps`)."""

    blocks_matter: bool
    contrast: bool
    gaps: dict  # run -> trained minus identity accuracy, in points
    drops: dict  # run -> largest loss off the trained graph (order >= 2, N_t >= trained N_t), in points
    euler: str = "euler_fixed"
    rk4: str = "rk4_refined"
    thresholds: dict = field(default_factory=dict)  # matter_points, lose_points, hold_points
    rows: dict = field(default_factory=dict)  # run -> its sweep rows


def _trained_n_steps(rows: Sequence[dict]) -> int:
    tr = find_row(rows, kind="trained")
    return tr["n_steps"] if isinstance(tr["n_steps"], int) else max(tr["n_steps"])


def off_graph(rows: Sequence[dict]) -> list[dict]:
    """Manifestations with a scheme of order >= 2 on a graph at least as fine as the trained one."""
    nt = _trained_n_steps(rows)
    return [r for r in rows if r["kind"] == "manifestation" and not r.get("is_trained")
            and get_scheme(r["scheme"]).order >= 2 and isinstance(r["n_steps"], int) and r["n_steps"] >= nt]


def judge_sweeps(rows: Mapping[str, Sequence[dict]], *, euler: str = "euler_fixed", rk4: str = "rk4_refined",
                 matter_points: float = 10.0, lose_points: float = 5.0, hold_points: float = 2.0) -> Verdict:
    """Judge a pair of sweeps ``{run: rows}`` (Euler-trained ``euler``, RK4-trained ``rk4``), without words.

    * the blocks **matter** when, for both models, removing every OdeBlock (the ``identity`` row)
      costs at least ``matter_points`` percentage points of accuracy;
    * the **contrast** of the paper appears when the blocks matter and, off the trained graph —
      every scheme of order >= 2 at N_t >= the trained N_t — the Euler-trained model loses at least
      ``lose_points`` points somewhere while the RK4-trained model stays within ``hold_points``
      everywhere.
    """
    for name in (euler, rk4):
        if (name not in rows or find_row(rows[name], kind="trained", default=None) is None
                or find_row(rows[name], kind="identity", default=None) is None):
            raise ValueError(f"need sweep rows with 'trained' and 'identity' rows for {name!r}; got runs {list(rows)}")
    gaps, drops = {}, {}
    for name in (euler, rk4):
        tr, ident = find_row(rows[name], kind="trained"), find_row(rows[name], kind="identity")
        gaps[name] = 100.0 * (tr["accuracy"] - ident["accuracy"])
        off = off_graph(rows[name])
        drops[name] = 100.0 * (tr["accuracy"] - min(r["accuracy"] for r in off)) if off else float("nan")
    matter = all(g >= matter_points for g in gaps.values())
    contrast = bool(matter and drops[euler] >= lose_points and drops[rk4] <= hold_points)
    return Verdict(matter, contrast, gaps, drops, euler, rk4,
                   dict(matter_points=matter_points, lose_points=lose_points, hold_points=hold_points),
                   {euler: list(rows[euler]), rk4: list(rows[rk4])})
