"""Claims about training *methods*, with the training seed as the unit.

One trained model per method says something about two models; a claim about refinement with RK4
against fixed-depth Euler takes several models per method, each trained from its own seed, and treats
the trained model as the unit of the test (its images and noise draws are averaged inside it).  (The manifestation
contrast over seeds is :func:`cnet_lib.studies.manifestation.over_seeds`.)

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

from .paired_stats import holm, spread, welch
from .robustness_measure import condition_name
from .robustness_verdict import FAMILIES, PRIMARY, RANDOM_KINDS, PrimaryTest, decide, draw_spread

__all__ = ["SeedRobustness", "robustness_over_seeds"]


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
