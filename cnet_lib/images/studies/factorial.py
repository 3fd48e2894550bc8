"""Integrator x refinement: which of the two carries the manifestation contrast.

The book's two main runs differ in two ways at once: ``rk4_refined`` is RK4-classic *grown by refinement*,
``euler_fixed`` is Euler *at its final depth from the start*.  A difference between them may come from the
integrator, from refinement, or from both; the two are confounded.  The control runs
(:data:`cnet_lib.images.runs.image_presets.CONTROLS`: RK4-classic at fixed depth, Euler refined on the same schedule)
fill the other two cells of the 2 x 2, with the same data, recipe and final M.

:func:`factorial_over_seeds` takes every cell's sweep per training seed and gives, per cell, the accuracy on its own
graph, what its blocks are worth and its worst loss on its valid graphs (:mod:`cnet_lib.images.studies.graph_rule`,
the manifestation verdict's rule) and on the graphs that cross θ's jumps; and the two *effects* on the worst valid
loss, per seed:

* the integrator's effect: Euler's loss minus RK4's, at each level of refinement (refined, fixed depth);
* refinement's effect: the fixed-depth model's loss minus the refined one's, for each integrator.

The main runs' contrast (``euler_fixed`` minus ``rk4_refined``) is the sum of one integrator effect and one
refinement effect.  With one seed per cell the numbers describe four models and no claim about the factors is made
(exploratory); with two or more seeds each effect gets Welch's interval with the training seed as the unit
(:func:`cnet_lib.images.studies.paired_stats.welch`), and the four factor effects' p values are adjusted together
by Holm's method (``p_holm``: four effects are tested at once; the main runs' contrast is their sum, not a fifth).

:func:`shipped_factorial` reads the four cells of a preset from the studies that ship with the book.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from ...runtime.rows import find_row
from ..runs.image_presets import IMAGE_PRESETS
from .paired_stats import holm, spread, welch
from .shipped_studies import shipped_seeds, shipped_sweep_file
from .sweep_verdict import worst_loss

__all__ = ["CELLS", "EFFECTS", "Factorial", "factorial_over_seeds", "shipped_factorial"]

CELLS = {("rk4_classic", "refined"): "rk4_refined", ("rk4_classic", "fixed depth"): "rk4_fixed",
         ("euler", "refined"): "euler_refined", ("euler", "fixed depth"): "euler_fixed"}
"""The run of each cell: (integrator, refinement) -> run name."""

EFFECTS = {
    "integrator, refined": ("euler_refined", "rk4_refined"),
    "integrator, fixed depth": ("euler_fixed", "rk4_fixed"),
    "refinement, Euler": ("euler_fixed", "euler_refined"),
    "refinement, RK4": ("rk4_fixed", "rk4_refined"),
    "main runs' contrast": ("euler_fixed", "rk4_refined"),
}
"""Each effect on the worst valid loss as (the run whose loss counts +, the run whose loss counts −)."""


@dataclass
class Factorial:
    """The 2 x 2 over seeds: ``cells`` (run -> ``own``, ``gap``, ``valid``, ``straddles``: one value per seed, in % or
    points), ``effects`` (name -> one value per seed, points, and with two or more seeds Welch's test), the seeds,
    the preset, and the runs with no sweep (``missing``: then no effect is computed)."""

    preset: Optional[str]
    seeds: list
    cells: dict
    effects: dict = field(default_factory=dict)
    missing: list = field(default_factory=list)
    n_images: Optional[int] = None
    basis: str = "piecewise_constant"
    asked: Optional[str] = None  # the preset asked for, when its cells did not ship and ``preset``'s are shown

    @property
    def complete(self) -> bool:
        return not self.missing


def _cell(rows: Sequence[dict], basis: str) -> dict:
    tr, ident = find_row(rows, kind="trained"), find_row(rows, kind="identity")
    return {"own": 100.0 * tr["accuracy"], "gap": 100.0 * (tr["accuracy"] - ident["accuracy"]),
            "valid": worst_loss(rows, "valid", basis)[0], "straddles": worst_loss(rows, "straddles", basis)[0]}


def factorial_over_seeds(sweeps_by_seed: Mapping[Any, Mapping[str, Sequence[dict]]], *, preset: Optional[str] = None,
                         basis: str = "piecewise_constant", n_images: Optional[int] = None,
                         alpha: float = 0.05) -> Factorial:
    """The 2 x 2 of the module docstring from ``{training seed: {run: sweep rows}}``.  A cell is counted in a seed
    only when that seed has its sweep; a run that no seed has is ``missing``, and the effects need all four."""
    if not sweeps_by_seed:
        raise ValueError("sweeps_by_seed is empty: give {seed: {run: sweep rows}} for at least one training seed")
    runs = list(CELLS.values())
    seeds = [s for s, sw in sweeps_by_seed.items() if all(r in sw for r in runs)] or list(sweeps_by_seed)
    cells = {}
    for run in runs:
        per_seed = [_cell(sweeps_by_seed[s][run], basis) for s in seeds if run in sweeps_by_seed[s]]
        cells[run] = {k: [c[k] for c in per_seed] for k in ("own", "gap", "valid", "straddles")}
    missing = [run for run in runs if not cells[run]["own"]]
    fx = Factorial(preset, list(seeds), cells, missing=missing, n_images=n_images, basis=basis)
    if missing:
        return fx
    for name, (plus, minus) in EFFECTS.items():
        values = [a - b for a, b in zip(cells[plus]["valid"], cells[minus]["valid"])]
        fx.effects[name] = {"values": values, "spread": spread(values),
                            "test": welch(cells[minus]["valid"], cells[plus]["valid"], alpha) if len(seeds) >= 2 else None}
    factors = [name for name in EFFECTS if name != "main runs' contrast"]
    if len(seeds) >= 2:
        for name, p in zip(factors, holm([fx.effects[name]["test"]["p"] for name in factors])):
            fx.effects[name]["test"]["p_holm"] = p
    return fx


def shipped_factorial(preset: str, fallback: Optional[str] = "cpu") -> Factorial:
    """The 2 x 2 of ``preset`` from the studies that ship with the book: each cell's shipped sweep (training seed 0; a
    cell that ships no folder, its seed-0 sweep in the preset's seeds file), with the other seeds of the seeds file that
    hold all four cells.  When some cell of ``preset`` does not
    ship, the ``fallback`` preset's 2 x 2 is returned instead (its ``asked`` says which preset was asked for), or,
    without a fallback (or when it is incomplete too), ``preset``'s with those cells ``missing``."""
    if preset not in IMAGE_PRESETS:
        raise ValueError(f"unknown preset {preset!r}; the presets are {', '.join(IMAGE_PRESETS)}")
    runs = list(CELLS.values())
    files = {run: f for run in runs if (f := shipped_sweep_file(preset, run)) is not None}
    records = {r["seed"]: r for r in shipped_seeds(preset)}
    # seed 0: a run's shipped sweep, else its sweep in the seeds file (a preset may ship the main runs' folders
    # only, and keep the control runs' numbers there)
    by_seed = {0: {**records.get(0, {}).get("sweeps", {}), **{run: f["rows"] for run, f in files.items()}}}
    by_seed[0] = {run: rows for run, rows in by_seed[0].items() if run in runs}
    for seed, record in records.items():
        if seed != 0 and all(run in record["sweeps"] for run in runs):
            by_seed[seed] = {run: record["sweeps"][run] for run in runs}
    n_images = next((f.get("n_test") for f in files.values()), None)
    fx = factorial_over_seeds(dict(sorted(by_seed.items())), preset=preset, n_images=n_images)
    if fx.complete or not fallback or fallback == preset:
        return fx
    other = shipped_factorial(fallback, fallback=None)
    if not other.complete:
        return fx
    other.asked = preset
    return other
