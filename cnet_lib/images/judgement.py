"""The verdict of the robustness study: one primary test fixed in advance, the rest secondary.

The paper expects the refined RK4 model to be "more robust with respect to parameter perturbations"
and so "well-suited to ... quantization".  What decides what the book says about that expectation
is **one** test, fixed (in :data:`PRIMARY`) before its numbers were seen:

    θ̂ quantized to 4 bits (:func:`~cnet_lib.images.perturbations.quantize_theta`), the Euler model's
    drop minus the RK4 model's, paired on the same test images; the expectation is *supported* when
    that difference is significantly above zero (two-sided α = 0.05) **and** at least 1 point.

The outcomes (:data:`OUTCOMES`), in this order of precedence: ``supported`` (95% interval above 0,
estimate ≥ the minimum effect), ``contradicted`` (interval below 0, estimate ≤ −the minimum effect),
``below minimum`` (significant, but the estimate smaller than the minimum effect), ``equivalent``
(not significant, and the whole interval inside ±the minimum effect: no difference that large),
``inconclusive`` (none of these), ``unmeasured``.  The 95% interval and α = 0.05 are two faces of the
same two-sided test.

Every other condition is **secondary**: reported with its unadjusted p and its p Holm-adjusted
within a declared family (:data:`FAMILIES`), never counted as support.  A random perturbation
measured with fewer than two seeds for either model is **unmeasured**: its draws' spread is unknown,
so it gets no p at all.  A verdict about two trained models is about those two models; a claim
about training *methods* takes several training seeds per method with the seed as the unit
(:func:`judge_methods`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

import torch

from .paired_stats import holm, mcnemar, paired_difference, with_seed_variance
from .robustness_conditions import Condition, condition_name
from ..runtime.rich_text import Rich, paragraphs
from ..runtime.rows import format_table
from ..runtime.vocabulary import run_label

__all__ = ["PrimaryTest", "PRIMARY", "FAMILIES", "RANDOM_KINDS", "OUTCOMES", "Judgement", "judge", "decide",
           "word_verdict", "format_verdict", "FOOTING", "drops_table", "MethodJudgement", "judge_methods", "word_methods"]


@dataclass(frozen=True)
class PrimaryTest:
    """The test that decides: condition ``(kind, level)``, the minimum effect in points, and α."""

    kind: str
    level: object
    min_effect: float
    alpha: float

    @property
    def name(self) -> str:
        return condition_name(self.kind, self.level)


PRIMARY = PrimaryTest("quantized_theta", 4, min_effect=1.0, alpha=0.05)
"""Fixed on 2026-11-26, before the study's numbers under it were computed (README, *Beyond the paper*)."""

FAMILIES = {"weight noise": ("weight_noise",), "quantization": ("quantized_theta", "quantized_weights", "float_format"),
            "input noise": ("input_noise",)}
"""The families of secondary tests; Holm's adjustment runs within each."""

RANDOM_KINDS = ("weight_noise", "input_noise")
"""Perturbations drawn at random: they need at least two seeds per model to be judged."""

OUTCOMES = ("supported", "contradicted", "equivalent", "below minimum", "inconclusive", "unmeasured")


def decide(diff: float, ci95: Sequence[float], min_effect: float) -> str:
    """The primary outcome of a difference ``diff`` (B's drop − A's, points) with its 95% interval."""
    low, high = ci95
    if low > 0 and diff >= min_effect:
        return "supported"
    if high < 0 and diff <= -min_effect:
        return "contradicted"
    if low > 0 or high < 0:
        return "below minimum"
    if -min_effect < low and high < min_effect:
        return "equivalent"
    return "inconclusive"


@dataclass
class Judgement:
    """The numbers of the verdict for models ``a`` and ``b``.  ``rows``: the primary row first, then
    every secondary or unmeasured one, each with ``name``, ``family``, ``role``, both drops, the
    difference B − A with its standard error, 95% interval, ``p`` and ``p_holm`` (None where unmeasured)
    and ``significant``."""

    a: str
    b: str
    n: int
    clean: dict  # label -> clean accuracy (points)
    gaps: dict  # label -> clean minus blocks-removed accuracy (points), or None
    blocks_matter: bool
    matter_points: float
    test: PrimaryTest
    outcome: str  # one of OUTCOMES
    rows: list
    clean_test: dict = field(default_factory=dict)  # McNemar on the two clean outcomes
    models_per_method: int = 1

    @property
    def primary(self) -> Optional[dict]:
        return next((r for r in self.rows if r["role"] == "primary"), None)

    @property
    def clean_differs(self) -> bool:
        return bool(self.clean_test) and self.clean_test["p"] < self.test.alpha


def _gap(conds: Sequence[Condition], identity_from: Sequence[Condition]) -> Optional[float]:
    clean = next(c for c in conds if c.kind == "clean")
    ident = next((c for c in identity_from if c.kind == "identity"), None)
    if ident is None:
        return None
    return 100 * (clean.mean_correct.mean().item() - ident.mean_correct.mean().item())


def _family(kind: str) -> Optional[str]:
    return next((f for f, kinds in FAMILIES.items() if kind in kinds), None)


def judge(study: Mapping[str, Sequence[Condition]], a: str, b: str, test: PrimaryTest = PRIMARY,
          matter_points: float = 10.0, identity_of: Optional[Mapping[str, str]] = None,
          models_per_method: int = 1) -> Judgement:
    """Compare model ``a`` (the refined RK4 model) with ``b`` (the Euler model) condition by condition:
    each model's drop = clean − perturbed per image (averaged over seeds), and the paired difference
    drop_b − drop_a with its standard error (images, plus the spread over the seeds of a random
    perturbation: :func:`~cnet_lib.images.paired_stats.with_seed_variance`), 95% interval and p.
    ``test`` decides (:func:`decide`); the other rows are secondary, Holm-adjusted within their family
    at ``test.alpha``; a random perturbation with fewer than two seeds for either model is unmeasured.
    The blocks **matter** when removing them costs each model at least ``matter_points`` (the
    identity rows, taken from ``identity_of[label]`` when a label has none of its own)."""
    ca = {(c.kind, c.level): c for c in study[a]}
    cb = {(c.kind, c.level): c for c in study[b]}
    clean_a, clean_b = ca[("clean", None)].mean_correct, cb[("clean", None)].mean_correct
    rows = []
    for key, cond_a in ca.items():
        family = _family(cond_a.kind)
        if family is None or key not in cb:
            continue
        cond_b = cb[key]
        drop_a, drop_b = clean_a - cond_a.mean_correct, clean_b - cond_b.mean_correct
        seeds = min(len(cond_a.correct), len(cond_b.correct))
        row = {"kind": cond_a.kind, "level": cond_a.level, "name": condition_name(*key), "family": family,
               "drop_a": 100 * drop_a.mean().item(), "drop_b": 100 * drop_b.mean().item(), "seeds": seeds}
        if cond_a.kind in RANDOM_KINDS and seeds < 2:
            rows.append({**row, "role": "unmeasured", "diff": row["drop_b"] - row["drop_a"], "se": None,
                         "ci95": None, "p": None, "p_holm": None, "significant": False})
            continue
        cmp = with_seed_variance(paired_difference(drop_b, drop_a), cond_a.accuracies(), cond_b.accuracies())
        role = "primary" if key == (test.kind, test.level) else "secondary"
        rows.append({**row, **cmp, "role": role})
    for family in FAMILIES:
        members = [r for r in rows if r["family"] == family and r["role"] == "secondary"]
        for r, adjusted in zip(members, holm([r["p"] for r in members])):
            r["p_holm"] = adjusted
    for r in rows:
        if r["role"] == "primary":
            r["p_holm"] = r["p"]  # one test: nothing to adjust
        if r["role"] != "unmeasured":
            r["significant"] = r["p_holm"] < test.alpha
    rows.sort(key=lambda r: r["role"] != "primary")
    primary = next((r for r in rows if r["role"] == "primary"), None)
    outcome = decide(primary["diff"], primary["ci95"], test.min_effect) if primary else "unmeasured"
    identity_of = dict(identity_of or {})
    gaps = {}
    for label in (a, b):
        gap = _gap(study[label], study[label])
        if gap is None and identity_of.get(label) in study:
            gap = _gap(study[label], study[identity_of[label]])
        gaps[label] = gap
    matter = all(g is not None and g >= matter_points for g in gaps.values())
    return Judgement(a, b, int(clean_a.numel()), {a: 100 * clean_a.mean().item(), b: 100 * clean_b.mean().item()},
                     gaps, matter, matter_points, test, outcome, rows, mcnemar(clean_a, clean_b), int(models_per_method))


# --------------------------------------------------------------------------- words
def _interval(r: Mapping) -> str:
    return f"[{r['ci95'][0]:+.2f}, {r['ci95'][1]:+.2f}]"


def _models_phrase(j: Judgement) -> str:
    k = j.models_per_method
    if k == 1:
        return "one trained model per method, so this is about these two models, not yet about the training methods"
    return f"{k} trained models per method"


def word_verdict(j: Judgement, labels: Optional[Mapping[str, str]] = None) -> list[str]:
    """Sentences that state what :func:`judge` found, quoting the numbers; the last one, ``VERDICT:``,
    rests on the primary test alone and says how many trained models stand behind it and whether
    the two clean accuracies differ significantly."""
    lab = {j.a: run_label(j.a), j.b: run_label(j.b), **(labels or {})}
    A, B, t = lab[j.a], lab[j.b], j.test
    s = [f"Both models are measured on the same {j.n} test images: {A} {j.clean[j.a]:.1f}% clean, "
         f"{B} {j.clean[j.b]:.1f}% clean. A perturbation is judged by each model's drop from its own clean "
         "accuracy, the two drops compared image by image."]
    for label in (j.a, j.b):
        if j.gaps.get(label) is not None:
            s.append(f"{lab[label]}: removing its blocks costs {j.gaps[label]:.1f} points.")
    ct = j.clean_test
    s.append(f"Clean accuracies: {ct['only_a']} images right only for {A}, {ct['only_b']} only for {B} (McNemar "
             f"p = {ct['p']:.2g}): " + ("they differ significantly, so each drop starts from a different accuracy."
                                        if j.clean_differs else "no significant difference."))
    p = j.primary
    if p is not None:
        s.append(f"Primary test, fixed in advance: {t.name}; the paper's expectation is that {B} loses at least "
                 f"{t.min_effect:g} point{'s' if t.min_effect != 1 else ''} more than {A}. {A} loses "
                 f"{p['drop_a']:.2f} points, {B} {p['drop_b']:.2f}; difference {p['diff']:+.2f}, 95% interval "
                 f"{_interval(p)}, p = {p['p']:.2g} (a single test: nothing to adjust): {p_outcome(j.outcome, t)}.")
    for family in FAMILIES:
        members = [r for r in j.rows if r["family"] == family and r["role"] == "secondary"]
        unmeasured = [r for r in j.rows if r["family"] == family and r["role"] == "unmeasured"]
        if members:
            sig = [r for r in members if r["significant"]]
            s.append(f"Secondary, {family} ({len(members)} test{'s' if len(members) != 1 else ''}, Holm within the "
                     f"family, α = {t.alpha:g}): " + (
                         "; ".join(f"{r['name']}: difference {r['diff']:+.2f} (Holm p = {r['p_holm']:.2g}, "
                                   f"{A if r['diff'] > 0 else B} loses less)" for r in sig)
                         if sig else "no significant difference") + ".")
        if unmeasured:
            s.append(f"Unmeasured ({family}): " + ", ".join(r["name"] for r in unmeasured)
                     + " — fewer than two seeds per model, so the spread of the draws is unknown.")
    s.append(_verdict_line(j, A, B))
    return s


def p_outcome(outcome: str, t: PrimaryTest) -> str:
    """The primary outcome in words."""
    return {"supported": "the expectation is supported",
            "contradicted": "the opposite of the expectation, by at least the minimum effect",
            "equivalent": f"the whole interval lies within ±{t.min_effect:g}: no difference of that size",
            "below minimum": f"significant, but smaller than the {t.min_effect:g}-point minimum effect",
            "inconclusive": "inconclusive: the interval allows both no difference and one of the minimum size",
            "unmeasured": "not measured"}[outcome]


def _verdict_line(j: Judgement, A: str, B: str) -> str:
    t = j.test
    head = (f"VERDICT ({_models_phrase(j)}; primary test {t.name}, minimum effect {t.min_effect:g} point"
            f"{'s' if t.min_effect != 1 else ''}, α = {t.alpha:g}): ")
    clean = (f" Their clean accuracies differ significantly ({j.clean[j.a]:.1f}% against {j.clean[j.b]:.1f}%, "
             f"McNemar p = {j.clean_test['p']:.2g})." if j.clean_differs else "")
    if not j.blocks_matter:
        return head + (f"no verdict: removing the blocks costs less than {j.matter_points:g} points for at least one "
                       "model (or it was not measured), so the drops are not about the continuous blocks." + clean)
    p = j.primary
    body = {
        "supported": f"the paper's expectation holds for these models: {B} loses {p['diff']:.2f} points more than {A} "
                     f"(95% interval {_interval(p)}).",
        "contradicted": f"the paper's expectation does not hold: {A} loses {-p['diff']:.2f} points more than {B} "
                        f"(95% interval {_interval(p)}).",
        "equivalent": f"no difference of {t.min_effect:g} point or more between the two models' losses (95% interval "
                      f"{_interval(p)}): the expectation is not borne out.",
        "below minimum": f"a significant difference smaller than the stated minimum ({p['diff']:+.2f} points, 95% "
                         f"interval {_interval(p)}): too small to count for or against the expectation.",
        "inconclusive": f"inconclusive ({p['diff']:+.2f} points, 95% interval {_interval(p)}): these numbers neither "
                        "support nor rule out the expectation; more test images narrow the interval.",
        "unmeasured": "the primary condition was not measured; no verdict.",
    }[j.outcome] if p is not None else "the primary condition was not measured; no verdict."
    return head + body + clean


def format_verdict(j: Judgement, labels: Optional[Mapping[str, str]] = None, width: int = 92) -> Rich:
    """:func:`word_verdict` as paragraphs: as text each sentence wrapped to ``width`` characters, in a
    notebook one paragraph per sentence, the ``VERDICT`` set apart."""
    return paragraphs(word_verdict(j, labels), width=width)


FOOTING = ("the 95% interval and p (unadj.) are the same single test (the interval excludes 0 exactly when p (unadj.) "
           "< α); p (Holm) is adjusted for the tests of its family, and significance is read from it (the primary "
           "row is one test: nothing to adjust)")
"""What the drops table says about which of its numbers are adjusted."""


def drops_table(j: Judgement) -> Rich:
    """The verdict's rows as a table: per perturbation its role (primary, or its family), the points
    each model loses, the paired difference with its **unadjusted** 95% interval and p, the p
    **Holm-adjusted** within the family (the primary row: "one test"), and whether it is significant at
    the judgement's α after that adjustment; the note says which numbers are adjusted (:data:`FOOTING`)."""
    def role(r):
        return "PRIMARY" if r["role"] == "primary" else (r["family"] + (" (unmeasured)" if r["role"] == "unmeasured" else ""))

    def holm(r):
        if r["p_holm"] is None:
            return "—"
        return "one test" if r["role"] == "primary" else f"{r['p_holm']:.2g}"

    cols = [("perturbation", "name", "{}"), ("test", role, "{}"), ("A loses", "drop_a", "{:.2f}"),
            ("B loses", "drop_b", "{:.2f}"), ("B − A", "diff", "{:+.2f}"),
            ("95% interval (unadj.)", lambda r: "—" if r["ci95"] is None else _interval(r), "{}"),
            ("p (unadj.)", lambda r: "—" if r["p"] is None else f"{r['p']:.2g}", "{}"), ("p (Holm)", holm, "{}"),
            (f"significant (Holm, α = {j.test.alpha:g})", lambda r: "yes" if r["significant"] else "no", "{}")]
    return format_table(j.rows, cols, note=f"A = {run_label(j.a)}, B = {run_label(j.b)}; points of accuracy on {j.n} test "
                        f"images; {FOOTING}; the PRIMARY row alone decides")


# --------------------------------------------------------------------------- several seeds per method
@dataclass
class MethodJudgement:
    """The primary test with the **training seed** as the unit: each trained model's drop (mean over
    the test images), per method; Welch's t-test of the two methods' mean drops."""

    a: str
    b: str
    test: PrimaryTest
    drops_a: list  # points, one per trained model of method a
    drops_b: list
    diff: Optional[float]  # mean drop of b minus mean drop of a
    ci95: Optional[tuple]
    p: Optional[float]
    outcome: str


def _drop(study: Mapping[str, Sequence[Condition]], label: str, test: PrimaryTest) -> Optional[float]:
    conds = {(c.kind, c.level): c for c in study[label]}
    hit = conds.get((test.kind, test.level))
    if hit is None:
        return None
    return 100 * (conds[("clean", None)].mean_correct.mean().item() - hit.mean_correct.mean().item())


def judge_methods(studies: Sequence[Mapping[str, Sequence[Condition]]], a: str, b: str,
                  test: PrimaryTest = PRIMARY) -> MethodJudgement:
    """The primary test across training seeds: ``studies`` holds one study per training seed, each
    with the models ``a`` and ``b`` trained from that seed.  The unit is the trained model: its drop
    under ``test``'s condition.  With at least two models per method, Welch's t-test (unequal
    variances) gives the p-value and the 95% interval of the difference of the methods' mean drops,
    and :func:`decide` the outcome; with fewer, the outcome is ``unmeasured``."""
    from scipy import stats  # imported here: scipy.stats takes a moment to import

    da = [d for d in (_drop(s, a, test) for s in studies) if d is not None]
    db = [d for d in (_drop(s, b, test) for s in studies) if d is not None]
    if len(da) < 2 or len(db) < 2:
        return MethodJudgement(a, b, test, da, db, None, None, None, "unmeasured")
    ta, tb = torch.tensor(da, dtype=torch.float64), torch.tensor(db, dtype=torch.float64)
    diff = (tb.mean() - ta.mean()).item()
    va, vb = ta.var(unbiased=True).item() / len(da), tb.var(unbiased=True).item() / len(db)
    se = math.sqrt(va + vb)
    if se == 0:
        p, half = (1.0 if diff == 0 else 0.0), 0.0
    else:
        df = (va + vb) ** 2 / (va ** 2 / (len(da) - 1) + vb ** 2 / (len(db) - 1)) if va + vb > 0 else len(da) + len(db) - 2
        p = float(stats.ttest_ind(db, da, equal_var=False).pvalue)
        half = float(stats.t.ppf(1 - test.alpha / 2, df)) * se
    ci = (diff - half, diff + half)
    return MethodJudgement(a, b, test, da, db, diff, ci, p, decide(diff, ci, test.min_effect))


def word_methods(m: MethodJudgement, labels: Optional[Mapping[str, str]] = None) -> str:
    """One sentence: the primary test across training seeds, with how many models per method."""
    lab = {m.a: run_label(m.a), m.b: run_label(m.b), **(labels or {})}
    counts = f"{len(m.drops_a)} trained {lab[m.a]} and {len(m.drops_b)} {lab[m.b]} models"
    if m.outcome == "unmeasured":
        return (f"Training methods: {counts}; a claim about the methods needs at least two per method, so none is "
                "made.")

    def spread(d):
        return f"mean {sum(d) / len(d):.2f}, range {min(d):.2f} to {max(d):.2f}"

    return (f"Training methods ({counts}, the training seed as the unit; {m.test.name}): {lab[m.a]} loses "
            f"{spread(m.drops_a)} points, {lab[m.b]} {spread(m.drops_b)}; difference of the means {m.diff:+.2f}, 95% "
            f"interval [{m.ci95[0]:+.2f}, {m.ci95[1]:+.2f}], Welch p = {m.p:.2g}: {p_outcome(m.outcome, m.test)}.")
