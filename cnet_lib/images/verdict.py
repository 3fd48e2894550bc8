"""The honest verdict of the manifestation sweeps: computed from the numbers, then put in words.

:func:`judge_sweeps` decides, from a pair of sweeps (the Euler-trained and the RK4-trained model),
whether the blocks matter at all and whether the paper's contrast is there; :func:`word_sweeps`
writes sentences that quote the numbers; :func:`honest_verdict` does both, and its result prints
as the sentences.  The chapters display it instead of asserting invariance.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

from ..core.schemes import get_scheme
from ..runtime.rich_text import Rich, paragraphs
from ..runtime.rows import find_row
from ..runtime.vocabulary import run_label

__all__ = ["Verdict", "judge_sweeps", "word_sweeps", "honest_verdict"]


@dataclass
class Verdict:
    """What the numbers say.  ``print(verdict)`` prints :attr:`sentences` (empty until worded), one per line;
    ``display(verdict)`` (or a cell ending with it) shows them as paragraphs that wrap to the page."""

    blocks_matter: bool
    contrast: bool
    gaps: dict  # run -> trained minus identity accuracy, in points
    drops: dict  # run -> largest loss off the trained graph (order >= 2, N_t >= trained N_t), in points
    euler: str = "euler_fixed"
    rk4: str = "rk4_refined"
    thresholds: dict = field(default_factory=dict)  # matter_points, lose_points, hold_points
    rows: dict = field(default_factory=dict)  # run -> its sweep rows
    sentences: list = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(self.sentences)

    @property
    def text(self) -> str:
        return str(self)

    @property
    def rich(self) -> Rich:
        """The sentences as paragraphs (:func:`cnet_lib.runtime.rich_text.paragraphs`), the VERDICT set apart."""
        return paragraphs(self.sentences)

    def _repr_html_(self) -> str:  # display(verdict) in a notebook: paragraphs that wrap to the page
        return self.rich.html

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(str(self))


def _trained_n_steps(rows: Sequence[dict]) -> int:
    tr = find_row(rows, kind="trained")
    return tr["n_steps"] if isinstance(tr["n_steps"], int) else max(tr["n_steps"])


def _off_graph(rows: Sequence[dict]) -> list[dict]:
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
        off = _off_graph(rows[name])
        drops[name] = 100.0 * (tr["accuracy"] - min(r["accuracy"] for r in off)) if off else float("nan")
    matter = all(g >= matter_points for g in gaps.values())
    contrast = bool(matter and drops[euler] >= lose_points and drops[rk4] <= hold_points)
    return Verdict(matter, contrast, gaps, drops, euler, rk4,
                   dict(matter_points=matter_points, lose_points=lose_points, hold_points=hold_points),
                   {euler: list(rows[euler]), rk4: list(rows[rk4])})


def word_sweeps(v: Verdict, n_test: Optional[int] = None, preset: Optional[str] = None) -> list[str]:
    """Sentences that state what :func:`judge_sweeps` found, quoting the numbers."""
    pts = lambda a: 100.0 * a  # noqa: E731
    th = v.thresholds
    s: list[str] = []
    where = f" (preset {preset})" if preset else ""
    if n_test:
        s.append(f"These accuracies{where} are measured on {n_test} test images: one image is "
                 f"{100.0 / n_test:.2f} points, and the sampling error of an accuracy near 50% is about "
                 f"±{100 * math.sqrt(0.25 / n_test):.1f} points.")
    for name in (v.euler, v.rk4):
        tr, ident = find_row(v.rows[name], kind="trained"), find_row(v.rows[name], kind="identity")
        s.append(f"{run_label(name)}: {pts(tr['accuracy']):.1f}% on its own graph ({tr['scheme']}, N_t = "
                 f"{tr['n_steps']}), {pts(ident['accuracy']):.1f}% with every OdeBlock replaced by the identity: the "
                 f"blocks are worth {v.gaps[name]:.1f} points.")
    if not v.blocks_matter:
        weak = [run_label(n) for n, g in v.gaps.items() if g < th["matter_points"]]
        s.append(f"VERDICT: the blocks do not matter enough ({', '.join(weak)}: removing them costs less than "
                 f"{th['matter_points']:g} points). Whatever the sweep shows, flat curves here would only mean blocks "
                 "that do little; these numbers cannot show manifestation invariance, nor its absence.")
        return s
    for name in (v.euler, v.rk4):
        off = _off_graph(v.rows[name])
        if off:
            w = min(off, key=lambda r: r["accuracy"])
            s.append(f"{run_label(name)} off its own graph (schemes of order ≥ 2, N_t ≥ the trained N_t): "
                     f"{pts(min(r['accuracy'] for r in off)):.1f}%–{pts(max(r['accuracy'] for r in off)):.1f}%; worst "
                     f"{w['scheme']} at N_t = {w['n_steps']}, {v.drops[name]:.1f} points below its own graph.")
        else:
            s.append(f"{run_label(name)}: the sweep has no graph with a scheme of order ≥ 2 and N_t ≥ the trained N_t.")
    if v.contrast:
        s.append(f"VERDICT: the blocks matter, and the paper's contrast appears: the Euler-trained model loses "
                 f"{v.drops[v.euler]:.1f} points off its own graph (≥ {th['lose_points']:g}), the RK4-trained model "
                 f"stays within {v.drops[v.rk4]:.1f} points (≤ {th['hold_points']:g}).")
    else:
        what = []
        if not v.drops[v.euler] >= th["lose_points"]:
            what.append(f"the Euler-trained model loses only {v.drops[v.euler]:.1f} points off its own graph "
                        f"(< {th['lose_points']:g})")
        if not v.drops[v.rk4] <= th["hold_points"]:
            what.append(f"the RK4-trained model loses {v.drops[v.rk4]:.1f} points (> {th['hold_points']:g})")
        s.append("VERDICT: the blocks matter, but the paper's contrast does not appear at this scale: "
                 + " and ".join(what) + ".")
    return s


def honest_verdict(rows: Mapping[str, Sequence[dict]], *, euler: str = "euler_fixed", rk4: str = "rk4_refined",
                   matter_points: float = 10.0, lose_points: float = 5.0, hold_points: float = 2.0,
                   n_test: Optional[int] = None, preset: Optional[str] = None) -> Verdict:
    """:func:`judge_sweeps` and :func:`word_sweeps` together: a :class:`Verdict` whose sentences
    quote the numbers."""
    v = judge_sweeps(rows, euler=euler, rk4=rk4, matter_points=matter_points, lose_points=lose_points,
                     hold_points=hold_points)
    v.sentences = word_sweeps(v, n_test, preset)
    return v
