"""Claims about training *methods*, with the training seed as the unit: the manifestation contrast over seeds.

One trained model per method says something about two models; a claim about refinement with RK4
against fixed-depth Euler takes several models per method, each trained from its own seed, and treats
the trained model as the unit of the test (its images are averaged inside it).

:func:`contrast_over_seeds`: the manifestation contrast of :func:`cnet_lib.images.studies.sweep_verdict.judge_sweeps`
over seeds: each model's accuracy on its own graph, on every graph that is valid or crosses θ's jumps
(:mod:`cnet_lib.images.studies.graph_rule`) and without its blocks, as the mean and range over seeds per method;
the methods test is Welch's t-test of the seeds' worst losses on their valid graphs (Euler's minus RK4's).  (The
robustness study's rows over seeds: :func:`cnet_lib.studies.robustness.robustness_over_seeds`.)

With one seed per method the tables say "1 training seed", show that model's numbers, and no
p-value or claim about the methods is made.  Every table says how many seeds stand behind it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from ...runtime.rows import find_row
from .graph_rule import KEEP_POINTS, graph_kind, trained_row
from .paired_stats import spread, welch
from .sweep_verdict import judge_sweeps

__all__ = ["SeedContrast", "contrast_over_seeds"]


# --------------------------------------------------------------------------- the manifestation contrast
@dataclass
class SeedContrast:
    """The contrast over seeds: ``rows`` (one per graph: ``graph``, its ``kinds`` per run, and per run a :func:`spread`
    of its accuracy in %), per-seed ``gaps`` (blocks worth), ``drops`` (worst loss on the valid graphs,
    :mod:`cnet_lib.images.studies.graph_rule`) and ``straddle_drops`` (on the graphs whose steps cross θ's jumps, shown
    apart), and ``methods``: Welch's test of Euler's drops minus RK4's (``None`` with fewer than two seeds)."""

    euler: str
    rk4: str
    seeds: list
    rows: list
    gaps: dict
    drops: dict
    blocks_matter: bool
    thresholds: dict
    methods: Optional[dict] = None
    outcome: str = "one seed"  # "contrast", "contradicted", "no contrast", "blocks do not matter", "one seed"
    straddle_drops: dict = field(default_factory=dict)  # run -> per seed, worst loss on steps that cross θ's jumps
    basis: str = "piecewise_constant"


def _graph_kinds(rows: Sequence[dict], basis: str) -> dict:
    """``{(scheme, N_t): kind}`` of one model's manifestation rows (:func:`cnet_lib.images.studies.graph_rule.graph_kind`)."""
    tr = trained_row(rows)
    return {(r["scheme"], r["n_steps"]): graph_kind(r, tr, basis) for r in rows
            if r["kind"] == "manifestation" and isinstance(r["n_steps"], int)}


def _contrast_rows(sweeps_by_seed: Mapping[Any, Mapping[str, Sequence[dict]]], runs: Sequence[str], basis: str) -> list:
    """The table's rows: each model's own graph, every graph that is valid or crosses θ's jumps for one of the models
    (and that every seed's sweep has), and the model without its blocks; each graph row holds its kind per model."""
    seeds = list(sweeps_by_seed)
    first = sweeps_by_seed[seeds[0]]
    kinds = {run: _graph_kinds(first[run], basis) for run in runs}
    keys = [k for k in dict.fromkeys(k for run in runs for k in kinds[run])
            if all(k in kinds[run] for run in runs) and any(kinds[run][k] in ("valid", "straddles") for run in runs)
            and all(find_row(s[run], kind="manifestation", scheme=k[0], n_steps=k[1], default=None) is not None
                    for s in sweeps_by_seed.values() for run in runs)]
    order = list(dict.fromkeys(k[0] for k in keys))
    keys.sort(key=lambda k: (order.index(k[0]), k[1]))

    def row(graph: str, pick, kind: dict) -> dict:
        return {"graph": graph, "kinds": kind,
                **{run: spread([100 * pick(s[run])["accuracy"] for s in sweeps_by_seed.values()]) for run in runs}}

    out = [row("own graph (trained)", lambda rows: find_row(rows, kind="trained"), {run: "trained" for run in runs})]
    out += [row(f"{s}, N_t = {n}", lambda rows, s=s, n=n: find_row(rows, kind="manifestation", scheme=s, n_steps=n),
                {run: kinds[run][(s, n)] for run in runs}) for s, n in keys]
    out.append(row("blocks removed", lambda rows: find_row(rows, kind="identity"), {run: "identity" for run in runs}))
    return out


def contrast_over_seeds(sweeps_by_seed: Mapping[Any, Mapping[str, Sequence[dict]]], *, euler: str = "euler_fixed",
                        rk4: str = "rk4_refined", matter_points: float = 10.0, lose_points: float = KEEP_POINTS,
                        hold_points: float = KEEP_POINTS, alpha: float = 0.05, basis: str = "piecewise_constant") -> SeedContrast:
    """The contrast of :func:`cnet_lib.images.studies.sweep_verdict.judge_sweeps` over ``sweeps_by_seed`` (training seed
    -> ``{run: sweep rows}``, both runs of every seed).  The table holds each model's own graph, every graph that is
    valid or crosses θ's jumps for one of the models (:mod:`cnet_lib.images.studies.graph_rule`) and that every seed's
    sweep has, and the model without its blocks.  With two or more seeds, Welch's t-test (seed as unit) compares the
    seeds' worst losses on their valid graphs; the contrast **holds across seeds** when the blocks matter in every
    seed, the (1 − ``alpha``) interval of Euler's mean loss minus RK4's lies above 0, Euler's mean loss is at least
    ``lose_points`` and RK4's below ``hold_points`` (both :data:`~.graph_rule.KEEP_POINTS` by default); it is
    **contradicted** when the interval lies below 0 (the RK4-trained models lose more).  The graphs that cross θ's jumps
    never enter the test."""
    if not sweeps_by_seed:
        raise ValueError("sweeps_by_seed is empty: give {seed: {run: sweep rows}} for at least one training seed")
    verdicts = {seed: judge_sweeps(s, euler=euler, rk4=rk4, matter_points=matter_points, lose_points=lose_points,
                                   hold_points=hold_points, basis=basis) for seed, s in sweeps_by_seed.items()}
    gaps = {run: [v.gaps[run] for v in verdicts.values()] for run in (euler, rk4)}
    drops = {run: [v.drops[run] for v in verdicts.values()] for run in (euler, rk4)}
    straddle = {run: [v.straddle_drops[run] for v in verdicts.values()] for run in (euler, rk4)}
    matter = all(v.blocks_matter for v in verdicts.values())
    th = dict(matter_points=matter_points, lose_points=lose_points, hold_points=hold_points, alpha=alpha)
    c = SeedContrast(euler, rk4, list(sweeps_by_seed), _contrast_rows(sweeps_by_seed, (euler, rk4), basis),
                     gaps, drops, matter, th, straddle_drops=straddle, basis=basis)
    if len(c.seeds) < 2:
        return c
    c.methods = welch(drops[rk4], drops[euler], alpha)
    mean = {run: sum(d) / len(d) for run, d in drops.items()}
    if not matter:
        c.outcome = "blocks do not matter"
    elif c.methods["ci95"][0] > 0 and mean[euler] >= lose_points and mean[rk4] < hold_points:
        c.outcome = "contrast"
    elif c.methods["ci95"][1] < 0:
        c.outcome = "contradicted"
    else:
        c.outcome = "no contrast"
    return c
