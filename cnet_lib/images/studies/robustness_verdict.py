"""The verdict of the robustness study: one primary test fixed in advance, the rest secondary.

The paper's conclusion expects ContinuousNets trained with refinement, being "more robust with respect to parameter
perturbations", to be "well-suited to compression and other quantization strategies".  What decides what the book says about that expectation
is **one** test, fixed (in :data:`PRIMARY`) before its numbers were seen:

    θ̂ quantized to 4 bits (:func:`~cnet_lib.images.studies.robustness_perturbations.quantize_theta`), the Euler model's
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
from .robustness_measure import Condition, condition_name

__all__ = ["PrimaryTest", "PRIMARY", "FAMILIES", "RANDOM_KINDS", "NOISE_DRAWS", "WIDE_SD", "MC_HALF_WIDTH", "draw_spread", "OUTCOMES",
           "Judgement", "judge", "decide",
           "MethodJudgement", "judge_methods"]


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
"""Fixed on 2026-11-26, before the study's numbers under it were computed (``book/measurements.md``, *Beyond the paper*)."""

FAMILIES = {"weight noise": ("weight_noise",), "quantization": ("quantized_theta", "quantized_weights", "float_format"),
            "input noise": ("input_noise",)}
"""The families of secondary tests; Holm's adjustment runs within each."""

RANDOM_KINDS = ("weight_noise", "input_noise")
"""Perturbations drawn at random: they need at least two seeds per model to be judged."""

NOISE_DRAWS = {"weight_noise": 16, "input_noise": 8}
"""Draws per level that a random perturbation's row needs: the rule of the manifestation study's analysis plan
(``cnet_lib/studies/manifestation_factorial/analysis_plan.md``, *Robustness study: noise draws*, committed on
2026-11-29): with them the 95% Monte-Carlo half-width of a row's mean accuracy is at most 1 point wherever the
accuracy's standard deviation across draws is at most :data:`WIDE_SD`."""

WIDE_SD = {"weight_noise": 0.018, "input_noise": 0.01}
"""The standard deviation of accuracy across draws (a fraction) above which a row is *wide* (the same plan): shown
with its own, wider interval and said to be wide."""

MC_HALF_WIDTH = 1.0
"""The plan's target for the 95% Monte-Carlo half-width of a row's mean accuracy, in points: a row with fewer draws
than :data:`NOISE_DRAWS` asks is wide when its half-width is larger (with the rule's draws the standard deviations of
:data:`WIDE_SD` keep it within this)."""


def draw_spread(accuracies: Sequence[float], kind: str) -> dict:
    """How far one model's row of a random perturbation (``kind``) rests on its draws: ``draws`` (how many), ``rule``
    (how many :data:`NOISE_DRAWS` asks), ``sd`` (standard deviation of the accuracy across draws, a fraction; None with
    one draw), ``half_width`` (the 95% Monte-Carlo half-width of the mean, t_{0.975, draws−1} × sd / √draws, in points)
    and ``wide``: sd above :data:`WIDE_SD`, or, with fewer draws than the rule asks, a half-width above
    :data:`MC_HALF_WIDTH`."""
    from scipy import stats  # imported here: scipy.stats takes a moment to import

    k = len(accuracies)
    if kind not in NOISE_DRAWS:
        raise ValueError(f"{kind!r} is not drawn at random; the random kinds are {', '.join(NOISE_DRAWS)}")
    if k < 2:
        return {"draws": k, "rule": NOISE_DRAWS[kind], "sd": None, "half_width": None, "wide": False}
    sd = float(torch.tensor(list(accuracies), dtype=torch.float64).std(unbiased=True))
    half = 100 * float(stats.t.ppf(0.975, k - 1)) * sd / math.sqrt(k)
    return {"draws": k, "rule": NOISE_DRAWS[kind], "sd": sd, "half_width": half,
            "wide": sd > WIDE_SD[kind] or (k < NOISE_DRAWS[kind] and half > MC_HALF_WIDTH)}

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
    perturbation: :func:`~cnet_lib.images.studies.paired_stats.with_seed_variance`), 95% interval and p.
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
        if cond_a.kind in RANDOM_KINDS:
            row["draws_a"], row["draws_b"] = (draw_spread(c.accuracies(), c.kind) for c in (cond_a, cond_b))
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
