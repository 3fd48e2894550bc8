"""Paired statistics for comparing two classifiers on the same test images.

Each function takes per-image outcomes (right = 1, wrong = 0, or a score in [0, 1]) of two
conditions measured on the same images, so that the comparison is *paired*: an image that both
get right or both get wrong says nothing about their difference.

* :func:`paired_difference`: the mean per-image difference with its standard error (normal
  approximation, for thousands of images);
* :func:`with_seed_variance`: the same, widened by the spread over seeds of a random perturbation;
* :func:`mcnemar`: McNemar's exact test of two binary outcomes;
* :func:`holm`: Holm's adjustment of several p-values tested together;
* :func:`welch`: two groups of independent values (one per trained model) compared by Welch's t-test;
* :func:`spread`: the mean, least and largest of values over training seeds, as the tables show them;
* :data:`KEEP_POINTS`: the book's one threshold for "keeps its accuracy", which every study's verdict judges by.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import torch


__all__ = ["KEEP_POINTS", "spread", "paired_difference", "with_seed_variance", "mcnemar", "holm", "welch", "two_proportions"]


KEEP_POINTS = 2.0
"""The book's one threshold for "keeps its accuracy", in points: a trained model keeps its accuracy on another graph
(another scheme, N_t or solver for the same θ(t)) when it loses less than this there, and loses it when it loses this
much or more.  *Manifestation invariance* (:func:`cnet_lib.studies.manifestation.judge`, over seeds
:func:`cnet_lib.studies.manifestation.over_seeds`), *Adaptive steps* (its rule, with its paired 95% interval) and the
page *The paper's claims, checked* all judge by it.  Why 2: it is the paper's own yardstick for an unchanged model,
"within the minimum and maximum of the repeated training samples" (Sec. 5.3.2), read on the book's models: retraining
from another seed moves one method's accuracy by up to 0.9 points (``gpu``, three seeds) and 1.75 (``cpu``, two
seeds); it lies above the sampling error of a comparison of two graphs on the same images (about ±0.6 points on 5,000
images, ±1 on 2,000); and it is the smallest effect of the planned manifestation study
(``cnet_lib/studies/manifestation_factorial/analysis_plan.md``).  It was set after the chapters' numbers were seen
(issue 51; the CHANGELOG keeps what each chapter asked before)."""


def spread(values: Sequence[float]) -> dict:
    """``{"n", "mean", "min", "max"}`` of ``values`` (``None`` for an empty list)."""
    vals = [float(v) for v in values]
    if not vals:
        return {"n": 0, "mean": None, "min": None, "max": None}
    return {"n": len(vals), "mean": sum(vals) / len(vals), "min": min(vals), "max": max(vals)}


def paired_difference(a: torch.Tensor, b: torch.Tensor) -> dict:
    """Mean of the per-image differences ``a - b`` (scores in [0, 1], e.g. right = 1) with its
    standard error, a 95% interval and the two-sided p-value of a zero mean (normal approximation,
    for the thousands of test images here), all in percentage points except ``p``."""
    d = (a.double() - b.double()).cpu()
    n = d.numel()
    mean = d.mean().item()
    se = d.std(unbiased=True).item() / math.sqrt(n) if n > 1 else float("nan")
    z = mean / se if se > 0 else (0.0 if mean == 0 else math.copysign(math.inf, mean))
    p = math.erfc(abs(z) / math.sqrt(2)) if math.isfinite(z) else 0.0
    return {"diff": 100 * mean, "se": 100 * se, "ci95": (100 * (mean - 1.96 * se), 100 * (mean + 1.96 * se)),
            "p": p, "n": n}


def mcnemar(a: torch.Tensor, b: torch.Tensor) -> dict:
    """McNemar's exact test of two binary outcomes on the same images: ``only_a`` images right under
    ``a`` only, ``only_b`` under ``b`` only; p = the two-sided binomial probability of a split at
    least this uneven if both were equally likely (``scipy.stats.binomtest``)."""
    from scipy import stats  # imported here: scipy.stats takes a moment to import

    a, b = a.bool().cpu(), b.bool().cpu()
    only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
    n = only_a + only_b
    p = float(stats.binomtest(only_a, n, 0.5).pvalue) if n else 1.0
    return {"only_a": only_a, "only_b": only_b, "p": min(1.0, p)}


def with_seed_variance(images: Mapping, seeds_a: Sequence[float], seeds_b: Sequence[float]) -> dict:
    """A paired comparison (:func:`paired_difference`, in points) widened by the randomness of the
    perturbation itself.

    A random perturbation (weight or input noise) is drawn once per seed, so a difference of drops
    has two sources of error: the test images (``images["se"]``) and the draws, estimated from the
    spread of each model's accuracy over its seeds, s_a² / S_a + s_b² / S_b.  The two variances are
    added; the p-value and the 95% interval use Student's t with Welch–Satterthwaite degrees of
    freedom, so that two seeds (one degree of freedom for their spread) give the wide interval they
    deserve.  With one seed per model the draws' variance is unmeasured and only the images count."""
    from scipy import stats  # imported here: scipy.stats takes a moment to import

    parts = [(images["se"] ** 2, images["n"] - 1)]
    for accs in (seeds_a, seeds_b):
        if len(accs) > 1:
            var = float(torch.tensor(accs, dtype=torch.float64).var(unbiased=True)) * 1e4 / len(accs)
            parts.append((var, len(accs) - 1))
    total = sum(v for v, _ in parts)
    se = math.sqrt(total)
    denominator = sum(v * v / df for v, df in parts if df > 0 and v > 0)
    df = total * total / denominator if denominator > 0 else float(images["n"] - 1)
    diff = images["diff"]
    if se > 0:
        p = float(2 * stats.t.sf(abs(diff) / se, df))
    else:
        p = 1.0 if diff == 0 else 0.0
    half = float(stats.t.ppf(0.975, df)) * se if se > 0 else 0.0
    return {**images, "se_images": images["se"], "se": se, "df": df, "ci95": (diff - half, diff + half), "p": p}


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``p_values`` for testing them all at once: the i-th smallest
    p becomes max over j ≤ i of min(1, (m − j + 1) p_(j)).  Rejecting where the adjusted p < α keeps
    the chance of any false "significant" below α, however the tests depend on each other."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out


def welch(a: Sequence[float], b: Sequence[float], alpha: float = 0.05) -> dict:
    """Welch's t-test of mean(b) − mean(a) for two groups of independent values (the training seed as the
    unit: one value per trained model): ``diff``, its standard error ``se`` = √(s_a²/n_a + s_b²/n_b), the
    Welch–Satterthwaite ``df``, the two-sided ``p`` (``scipy.stats.ttest_ind(b, a, equal_var=False)``)
    and the (1 − α) interval ``ci95`` = diff ± t_{1−α/2, df} se.  Needs at least two values per group
    (a ValueError says so); with no spread at all, p is 1 for equal means and 0 otherwise."""
    from scipy import stats  # imported here: scipy.stats takes a moment to import

    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"Welch's t-test needs at least two values per group (one per trained model), got {len(a)} "
                         f"and {len(b)}: train more seeds")
    ta, tb = torch.tensor(list(a), dtype=torch.float64), torch.tensor(list(b), dtype=torch.float64)
    diff = (tb.mean() - ta.mean()).item()
    va, vb = ta.var(unbiased=True).item() / len(a), tb.var(unbiased=True).item() / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return {"diff": diff, "se": 0.0, "df": float(len(a) + len(b) - 2), "ci95": (diff, diff),
                "p": 1.0 if diff == 0 else 0.0}
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    p = float(stats.ttest_ind(list(b), list(a), equal_var=False).pvalue)
    half = float(stats.t.ppf(1 - alpha / 2, df)) * se
    return {"diff": diff, "se": se, "df": df, "ci95": (diff - half, diff + half), "p": p}


def two_proportions(p_a: float, n_a: int, p_b: float, n_b: int, alpha: float = 0.05) -> dict:
    """The difference p_b − p_a of two accuracies measured on ``n_a`` and ``n_b`` images, with its (1 − α) Wald
    interval as if the two samples were independent: ``diff``, ``se`` and ``ci95`` (in the units of ``p``).  When the
    two models were measured on the *same* images but their per-image outcomes were not kept, this is the interval
    one can still give: pairing (McNemar, :func:`mcnemar`) would narrow it, never widen it, when the two models tend to
    get the same images right."""
    from scipy import stats  # imported here: scipy.stats takes a moment to import

    for name, p, n in (("p_a", p_a, n_a), ("p_b", p_b, n_b)):
        if not (0 <= p <= 1) or isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{name} must be an accuracy in [0, 1] measured on n >= 1 images, got {p!r} on {n!r}")
    se = math.sqrt(p_a * (1 - p_a) / n_a + p_b * (1 - p_b) / n_b)
    half = float(stats.norm.ppf(1 - alpha / 2)) * se
    diff = p_b - p_a
    return {"diff": diff, "se": se, "ci95": (diff - half, diff + half)}
