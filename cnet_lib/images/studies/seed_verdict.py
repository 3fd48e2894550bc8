"""Claims about training *methods*, with the training seed as the unit.

One trained model per method says something about two models; a claim about refinement with RK4
against fixed-depth Euler takes several models per method, each trained from its own seed, and treats
the trained model as the unit of the test (its images and noise draws are averaged inside it).

* :func:`contrast_over_seeds`: the manifestation contrast of :func:`cnet_lib.images.studies.sweep_verdict.judge_sweeps`
  over seeds: each model's accuracy on its own graph, on every graph that is valid or crosses θ's jumps
  (:mod:`cnet_lib.images.studies.graph_rule`) and without its blocks, as the mean and range over seeds per method;
  the methods test is Welch's t-test of the seeds' worst losses on their valid graphs (Euler's minus RK4's).
* :func:`robustness_over_seeds`: every row of the robustness study (:mod:`cnet_lib.images.studies.robustness_verdict`)
  over seeds: each model's drop from its own clean accuracy, mean and range per method, Welch's t-test
  of the drops per row, Holm within each family, and the primary test (:data:`cnet_lib.images.studies.robustness_verdict.PRIMARY`)
  alone decides.

With one seed per method the tables say "1 training seed", show that model's numbers, and no
p-value or claim about the methods is made.  Every table says how many seeds stand behind it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from ...runtime.rows import find_row
from .graph_rule import KEEP_POINTS, graph_kind, trained_row
from .paired_stats import holm, welch
from .robustness_measure import condition_name
from .robustness_verdict import FAMILIES, PRIMARY, RANDOM_KINDS, PrimaryTest, decide, draw_spread
from .sweep_verdict import judge_sweeps

__all__ = ["spread", "SeedContrast", "contrast_over_seeds", "SeedRobustness", "robustness_over_seeds"]


def spread(values: Sequence[float]) -> dict:
    """``{"n", "mean", "min", "max"}`` of ``values`` (``None`` for an empty list)."""
    vals = [float(v) for v in values]
    if not vals:
        return {"n": 0, "mean": None, "min": None, "max": None}
    return {"n": len(vals), "mean": sum(vals) / len(vals), "min": min(vals), "max": max(vals)}


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


# --------------------------------------------------------------------------- the robustness rows
@dataclass
class SeedRobustness:
    """The robustness rows over seeds: per row each method's drops (one per seed, points), their
    :func:`spread`, and with two or more seeds Welch's difference B − A, interval, p and Holm's p;
    ``outcome`` is the primary test's (:func:`cnet_lib.images.studies.robustness_verdict.decide`), or ``"one seed"``."""

    a: str
    b: str
    test: PrimaryTest
    seeds: list
    rows: list
    clean: dict  # label -> spread of clean accuracy (%)
    gaps: dict  # label -> the blocks' worth per seed (points)
    outcome: str = "one seed"
    n_images: Optional[int] = None
    matter_points: float = 10.0
    blocks_matter: bool = field(default=False)


def _accuracies(conds) -> dict:
    """``{(kind, level): [accuracy per noise draw]}`` of a model's conditions: :class:`Condition` objects
    or their compact form ``{"kind", "level", "accuracies"}``."""
    out = {}
    for c in conds:
        if isinstance(c, Mapping):
            out[(c["kind"], c["level"])] = [float(a) for a in c["accuracies"]]
        else:
            out[(c.kind, c.level)] = c.accuracies()
    return out


def _family(kind: str) -> Optional[str]:
    return next((f for f, kinds in FAMILIES.items() if kind in kinds), None)


def _drops(acc: Mapping, key) -> float:
    clean = sum(acc[("clean", None)]) / len(acc[("clean", None)])
    return 100 * (clean - sum(acc[key]) / len(acc[key]))


def _gap(study: Mapping, label: str, identity_of: Mapping[str, str]) -> Optional[float]:
    """Points the blocks are worth to ``label`` in one seed's study: its clean accuracy minus that
    without blocks (its own identity row, else that of ``identity_of[label]``); ``None`` unmeasured."""
    ident = study[label].get(("identity", None)) or study.get(identity_of.get(label), {}).get(("identity", None))
    if not ident:
        return None
    clean = study[label][("clean", None)]
    return 100 * (sum(clean) / len(clean) - sum(ident) / len(ident))


def _robustness_rows(per_seed: list, a: str, b: str, test: PrimaryTest) -> list:
    keys = [k for k in per_seed[0][a] if _family(k[0]) and all(k in s[a] and k in s[b] for s in per_seed)]
    rows = []
    for key in keys:
        da, db = [_drops(s[a], key) for s in per_seed], [_drops(s[b], key) for s in per_seed]
        row = {"kind": key[0], "level": key[1], "name": condition_name(*key), "family": _family(key[0]),
               "role": "primary" if key == (test.kind, test.level) else "secondary", "drops_a": da, "drops_b": db,
               "a": spread(da), "b": spread(db), "diff": sum(db) / len(db) - sum(da) / len(da), "ci95": None,
               "p": None, "p_holm": None, "significant": False}
        if key[0] in RANDOM_KINDS:  # each model's draws in every seed, by the analysis plan's rule
            row["draws"] = [draw_spread(s[m][key], key[0]) for s in per_seed for m in (a, b)]
        if len(per_seed) >= 2:
            row.update({k: v for k, v in welch(da, db, test.alpha).items() if k in ("diff", "ci95", "p", "se", "df")})
        rows.append(row)
    if len(per_seed) >= 2:
        for family in FAMILIES:
            members = [r for r in rows if r["family"] == family and r["role"] == "secondary"]
            for r, adjusted in zip(members, holm([r["p"] for r in members])):
                r["p_holm"] = adjusted
        for r in rows:
            r["p_holm"] = r["p"] if r["role"] == "primary" else r["p_holm"]
            r["significant"] = r["p_holm"] < test.alpha
    rows.sort(key=lambda r: r["role"] != "primary")
    return rows


def robustness_over_seeds(studies_by_seed: Mapping[Any, Mapping[str, Sequence]], a: str = "rk4_refined",
                          b: str = "euler_fixed", test: PrimaryTest = PRIMARY, matter_points: float = 10.0,
                          identity_of: Optional[Mapping[str, str]] = None) -> SeedRobustness:
    """Every row of the robustness study over ``studies_by_seed`` (training seed -> ``{label: conditions}``,
    :class:`~cnet_lib.images.studies.robustness_measure.Condition` lists or their compact form ``{"kind",
    "level", "accuracies"}``): each model's drop from its own clean accuracy (points, averaged over the
    noise draws), per seed.  With two or more seeds: Welch's t-test of B's drops minus A's per row (the
    training seed as the unit), Holm within each family for the secondary rows, and the primary row's
    outcome by :func:`cnet_lib.images.studies.robustness_verdict.decide`; the blocks matter when removing them costs each
    model at least ``matter_points`` in every seed (the identity row of ``identity_of[label]`` when a
    label has none)."""
    if not studies_by_seed:
        raise ValueError("studies_by_seed is empty: give {seed: {label: conditions}} for at least one training seed")
    seeds = list(studies_by_seed)
    per_seed = [{label: _accuracies(conds) for label, conds in s.items()} for s in studies_by_seed.values()]
    for s, seed in zip(per_seed, seeds):
        for label in (a, b):
            if label not in s or ("clean", None) not in s[label]:
                raise ValueError(f"the study of seed {seed} has no clean row for {label!r}; it has {sorted(s)}")
    gaps = {label: [_gap(s, label, dict(identity_of or {})) for s in per_seed] for label in (a, b)}
    r = SeedRobustness(a, b, test, seeds, _robustness_rows(per_seed, a, b, test),
                       {label: spread([100 * sum(s[label][("clean", None)]) / len(s[label][("clean", None)])
                                       for s in per_seed]) for label in (a, b)}, gaps, matter_points=matter_points)
    r.blocks_matter = all(g is not None and g >= matter_points for gs in gaps.values() for g in gs)
    primary = next((row for row in r.rows if row["role"] == "primary"), None)
    if len(seeds) >= 2:
        r.outcome = decide(primary["diff"], primary["ci95"], test.min_effect) if primary else "unmeasured"
    return r
