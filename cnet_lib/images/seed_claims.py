"""Claims about training *methods*, with the training seed as the unit.

One trained model per method says something about two models; a claim about refinement with RK4
against fixed-depth Euler takes several models per method, each trained from its own seed, and treats
the trained model as the unit of the test (its images and noise draws are averaged inside it).

* :func:`contrast_over_seeds`: the manifestation contrast of :func:`cnet_lib.images.verdict.judge_sweeps`
  over seeds: each model's accuracy on its own graph, on every graph of order ≥ 2 at N_t ≥ 3 and without
  its blocks, as the mean and range over seeds per method; the methods test is Welch's t-test of the
  seeds' losses off the trained graph (Euler's minus RK4's).
* :func:`robustness_over_seeds`: every row of the robustness study (:mod:`cnet_lib.images.judgement`)
  over seeds: each model's drop from its own clean accuracy, mean and range per method, Welch's t-test
  of the drops per row, Holm within each family, and the primary test (:data:`judgement.PRIMARY`)
  alone decides.

With one seed per method the tables say "1 training seed", show that model's numbers, and no
p-value or claim about the methods is made.  Every table says how many seeds stand behind it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from ..core.schemes import get_scheme
from ..runtime.rows import find_row, format_table
from ..runtime.vocabulary import run_label
from .judgement import FAMILIES, PRIMARY, PrimaryTest, decide, p_outcome
from .paired_stats import holm, welch
from .robustness_conditions import condition_name
from .verdict import judge_sweeps

__all__ = ["spread", "SeedContrast", "contrast_over_seeds", "format_contrast_over_seeds", "word_contrast_over_seeds",
           "SeedRobustness", "robustness_over_seeds", "format_robustness_over_seeds", "word_robustness_over_seeds"]


def spread(values: Sequence[float]) -> dict:
    """``{"n", "mean", "min", "max"}`` of ``values`` (``None`` for an empty list)."""
    vals = [float(v) for v in values]
    if not vals:
        return {"n": 0, "mean": None, "min": None, "max": None}
    return {"n": len(vals), "mean": sum(vals) / len(vals), "min": min(vals), "max": max(vals)}


def _cell(s: Mapping, fmt: str = "{:.1f}") -> Optional[str]:
    """``mean [min, max]``; the value alone for one seed; ``None`` (a dash) for none."""
    if not s or not s["n"]:
        return None
    if s["n"] == 1:
        return fmt.format(s["mean"])
    return f"{fmt.format(s['mean'])} [{fmt.format(s['min'])}, {fmt.format(s['max'])}]"


def _seeds_phrase(seeds: Sequence[int]) -> str:
    k = len(seeds)
    return f"{k} training seed{'s' if k != 1 else ''} per method (seed{'s' if k != 1 else ''} " \
           f"{', '.join(map(str, seeds))})"


# --------------------------------------------------------------------------- the manifestation contrast
@dataclass
class SeedContrast:
    """The contrast over seeds: ``rows`` (one per graph: ``graph`` and per run a :func:`spread` of its
    accuracy in %), per-seed ``gaps`` (blocks worth) and ``drops`` (worst loss off the trained graph),
    and ``methods``: Welch's test of Euler's drops minus RK4's (``None`` with fewer than two seeds)."""

    euler: str
    rk4: str
    seeds: list
    rows: list
    gaps: dict
    drops: dict
    blocks_matter: bool
    thresholds: dict
    methods: Optional[dict] = None
    outcome: str = "one seed"  # "contrast", "no contrast", "blocks do not matter", "one seed"


def _graph_keys(rows: Sequence[dict], min_n_steps: int) -> list:
    return [(r["scheme"], r["n_steps"]) for r in rows if r["kind"] == "manifestation" and isinstance(r["n_steps"], int)
            and r["n_steps"] >= min_n_steps and get_scheme(r["scheme"]).order >= 2]


def _contrast_rows(sweeps_by_seed: Mapping[Any, Mapping[str, Sequence[dict]]], runs: Sequence[str],
                   min_n_steps: int) -> list:
    seeds = list(sweeps_by_seed)
    first = sweeps_by_seed[seeds[0]]
    keys = [k for k in dict.fromkeys(k for run in runs for k in _graph_keys(first[run], min_n_steps))
            if all(find_row(s[run], kind="manifestation", scheme=k[0], n_steps=k[1], default=None) is not None
                   for s in sweeps_by_seed.values() for run in runs)]
    order = list(dict.fromkeys(k[0] for k in keys))
    keys.sort(key=lambda k: (order.index(k[0]), k[1]))

    def row(graph: str, pick) -> dict:
        return {"graph": graph, **{run: spread([100 * pick(s[run])["accuracy"] for s in sweeps_by_seed.values()])
                                   for run in runs}}

    out = [row("own graph (trained)", lambda rows: find_row(rows, kind="trained"))]
    out += [row(f"{s}, N_t = {n}", lambda rows, s=s, n=n: find_row(rows, kind="manifestation", scheme=s, n_steps=n))
            for s, n in keys]
    out.append(row("blocks removed", lambda rows: find_row(rows, kind="identity")))
    return out


def contrast_over_seeds(sweeps_by_seed: Mapping[Any, Mapping[str, Sequence[dict]]], *, euler: str = "euler_fixed",
                        rk4: str = "rk4_refined", min_n_steps: int = 3, matter_points: float = 10.0,
                        lose_points: float = 5.0, hold_points: float = 2.0, alpha: float = 0.05) -> SeedContrast:
    """The contrast of :func:`cnet_lib.images.verdict.judge_sweeps` over ``sweeps_by_seed`` (training seed
    -> ``{run: sweep rows}``, both runs of every seed).  The table holds each model's own graph, every
    graph of order ≥ 2 at N_t ≥ ``min_n_steps`` that every seed's sweep has, and the model without its
    blocks.  With two or more seeds, Welch's t-test (seed as unit) compares the seeds' worst losses off
    the trained graph; the contrast **holds across seeds** when the blocks matter in every seed, the
    (1 − ``alpha``) interval of Euler's mean loss minus RK4's lies above 0, Euler's mean loss is at least
    ``lose_points`` and RK4's at most ``hold_points``."""
    if not sweeps_by_seed:
        raise ValueError("sweeps_by_seed is empty: give {seed: {run: sweep rows}} for at least one training seed")
    verdicts = {seed: judge_sweeps(s, euler=euler, rk4=rk4, matter_points=matter_points, lose_points=lose_points,
                                   hold_points=hold_points) for seed, s in sweeps_by_seed.items()}
    gaps = {run: [v.gaps[run] for v in verdicts.values()] for run in (euler, rk4)}
    drops = {run: [v.drops[run] for v in verdicts.values()] for run in (euler, rk4)}
    matter = all(v.blocks_matter for v in verdicts.values())
    th = dict(matter_points=matter_points, lose_points=lose_points, hold_points=hold_points, alpha=alpha)
    c = SeedContrast(euler, rk4, list(sweeps_by_seed), _contrast_rows(sweeps_by_seed, (euler, rk4), min_n_steps),
                     gaps, drops, matter, th)
    if len(c.seeds) < 2:
        return c
    c.methods = welch(drops[rk4], drops[euler], alpha)
    mean = {run: sum(d) / len(d) for run, d in drops.items()}
    if not matter:
        c.outcome = "blocks do not matter"
    elif c.methods["ci95"][0] > 0 and mean[euler] >= lose_points and mean[rk4] <= hold_points:
        c.outcome = "contrast"
    else:
        c.outcome = "no contrast"
    return c


def format_contrast_over_seeds(c: SeedContrast):
    """The contrast table: per graph, each method's accuracy as mean [min, max] over the seeds (%), then
    the blocks' worth and the worst loss off the trained graph; the note says how many seeds."""
    extra = [{"graph": "blocks worth (points)", **{r: spread(c.gaps[r]) for r in (c.euler, c.rk4)}},
             {"graph": "worst loss off own graph (points)", **{r: spread(c.drops[r]) for r in (c.euler, c.rk4)}}]
    cols = [("graph", "graph", "{}")] + [(run_label(r), (lambda row, r=r: _cell(row[r])), "{}") for r in (c.euler, c.rk4)]
    return format_table(c.rows + extra, cols, note=f"{_seeds_phrase(c.seeds)}; accuracy in %, mean [min, max] over the "
                        "seeds; graphs of order ≥ 2 and the loss off the trained graph as in the verdict")


def word_contrast_over_seeds(c: SeedContrast) -> list[str]:
    """Sentences: what the seeds show, and the methods verdict (none with one seed)."""
    E, R = run_label(c.euler), run_label(c.rk4)
    d = {r: spread(c.drops[r]) for r in (c.euler, c.rk4)}
    s = [f"Over {_seeds_phrase(c.seeds)}: off its own graph {E} loses {_cell(d[c.euler])} points, {R} "
         f"{_cell(d[c.rk4])} (worst graph of order ≥ 2 at N_t ≥ the trained N_t; mean [min, max])."]
    if c.methods is None:
        s.append("VERDICT (training methods): one trained model per method, so no claim about the training methods is "
                 "made; the numbers describe these two models.")
        return s
    m, th = c.methods, c.thresholds
    stats = (f"{E}'s mean loss minus {R}'s: {m['diff']:+.2f} points, 95% interval [{m['ci95'][0]:+.2f}, "
             f"{m['ci95'][1]:+.2f}], Welch p = {m['p']:.2g}, the training seed as the unit")
    verdict = {
        "contrast": f"the paper's contrast holds across seeds ({stats}; {E} loses ≥ {th['lose_points']:g} on average, "
                    f"{R} ≤ {th['hold_points']:g}).",
        "no contrast": f"the paper's contrast is not shown across seeds ({stats}; it needs the interval above 0, {E}'s "
                       f"mean loss ≥ {th['lose_points']:g} and {R}'s ≤ {th['hold_points']:g}).",
        "blocks do not matter": f"no verdict: in some seed removing the blocks costs a model less than "
                                f"{th['matter_points']:g} points ({stats}).",
    }[c.outcome]
    s.append(f"VERDICT (training methods, {len(c.seeds)} seeds per method): {verdict}")
    return s


# --------------------------------------------------------------------------- the robustness rows
@dataclass
class SeedRobustness:
    """The robustness rows over seeds: per row each method's drops (one per seed, points), their
    :func:`spread`, and with two or more seeds Welch's difference B − A, interval, p and Holm's p;
    ``outcome`` is the primary test's (:func:`cnet_lib.images.judgement.decide`), or ``"one seed"``."""

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
    :class:`~cnet_lib.images.robustness_conditions.Condition` lists or their compact form ``{"kind",
    "level", "accuracies"}``): each model's drop from its own clean accuracy (points, averaged over the
    noise draws), per seed.  With two or more seeds: Welch's t-test of B's drops minus A's per row (the
    training seed as the unit), Holm within each family for the secondary rows, and the primary row's
    outcome by :func:`cnet_lib.images.judgement.decide`; the blocks matter when removing them costs each
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


def format_robustness_over_seeds(r: SeedRobustness):
    """The rows over seeds: each method's drop as mean [min, max], B − A, Welch's interval and p, Holm's p
    within the family; the note says how many seeds and what the unit is."""
    def role(row):
        return "PRIMARY" if row["role"] == "primary" else row["family"]

    cols = [("perturbation", "name", "{}"), ("test", role, "{}"),
            ("A loses", lambda row: _cell(row["a"], "{:.2f}"), "{}"), ("B loses", lambda row: _cell(row["b"], "{:.2f}"), "{}"),
            ("B − A", "diff", "{:+.2f}"),
            ("95% interval (Welch)", lambda row: row["ci95"] and f"[{row['ci95'][0]:+.2f}, {row['ci95'][1]:+.2f}]", "{}"),
            ("p (unadj.)", "p", "{:.2g}"), ("p (Holm)", "p_holm", "{:.2g}"),
            ("", lambda row: "significant" if row["significant"] else "", "{}")]
    unit = ("Welch's t-test with the training seed as the unit; Holm within each family; the PRIMARY row alone decides"
            if len(r.seeds) >= 2 else "one model per method: no test about the training methods")
    return format_table(r.rows, cols, note=f"{_seeds_phrase(r.seeds)}; A = {run_label(r.a)}, B = {run_label(r.b)}; "
                        f"points lost from each model's own clean accuracy, mean [min, max] over the seeds; {unit}")


def word_robustness_over_seeds(r: SeedRobustness) -> str:
    """The VERDICT about the training methods, with how many seeds stand behind it."""
    A, B, t = run_label(r.a), run_label(r.b), r.test
    head = f"VERDICT (training methods, {_seeds_phrase(r.seeds)}; primary test {t.name}, minimum effect " \
           f"{t.min_effect:g} point{'s' if t.min_effect != 1 else ''}, α = {t.alpha:g}): "
    if r.outcome == "one seed":
        return head + "one trained model per method, so no claim about the training methods is made."
    if not r.blocks_matter:
        return head + (f"no verdict: in some seed removing the blocks costs a model less than {r.matter_points:g} "
                       "points (or it was not measured).")
    p = next((row for row in r.rows if row["role"] == "primary"), None)
    if p is None:
        return head + "the primary condition was not measured; no verdict."
    return head + (f"{A} loses {_cell(p['a'], '{:.2f}')}, {B} {_cell(p['b'], '{:.2f}')} points (mean [min, max]); "
                   f"difference of the means {p['diff']:+.2f}, 95% interval [{p['ci95'][0]:+.2f}, {p['ci95'][1]:+.2f}], "
                   f"Welch p = {p['p']:.2g}: {p_outcome(r.outcome, t)}.")
