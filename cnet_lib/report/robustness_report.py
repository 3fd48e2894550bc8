"""The robustness study in tables and sentences: the verdict of :func:`cnet_lib.images.studies.robustness_verdict.judge`
(:func:`word_verdict`, its rows: :func:`drops_table`), the primary test across training seeds
(:func:`word_methods`), each model's size per way of storing its weights (:func:`size_table`), and the error
of a quantizer (:func:`quantization_error_table`).  The numbers are the study's
(:mod:`cnet_lib.images.studies.robustness_measure`, :mod:`cnet_lib.images.studies.robustness_verdict`)."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence

import torch

from ..images.studies.robustness_measure import Condition, condition_name
from ..images.studies.robustness_verdict import (FAMILIES, MC_HALF_WIDTH, NOISE_DRAWS, WIDE_SD, Judgement, MethodJudgement,
                                                 PrimaryTest)
from ..runtime.rich_text import Rich, paragraphs
from ..runtime.rows import format_table
from ..runtime.vocabulary import run_label
from ..images.runs.study_run import as_trained_note

__all__ = ["word_verdict", "outcome_phrase", "floor_sentences", "HURTS", "STUDY_HOW", "FOOTING", "DRAWS_NOTE", "draws_cell",
           "drops_table", "word_methods", "quantization_error_table", "size_table"]


def _interval(r: Mapping) -> str:
    return f"[{r['ci95'][0]:+.2f}, {r['ci95'][1]:+.2f}]"


def _models_phrase(j: Judgement) -> str:
    k = j.models_per_method
    if k == 1:
        return "one trained model per method, so this is about these two models, not yet about the training methods"
    return f"{k} trained models per method"


def word_verdict(j: Judgement, labels: Optional[Mapping[str, str]] = None, width: Optional[int] = 92,
                 as_trained: Optional[Mapping[str, Any]] = None) -> Rich:
    """Sentences that state what :func:`cnet_lib.images.studies.robustness_verdict.judge` found, quoting the
    numbers, as paragraphs (the text wrapped to ``width`` characters, one line per sentence with
    ``width=None``); the last one, ``VERDICT:``, rests on the primary test alone, is set apart in a notebook,
    and says how many trained models stand behind it and whether the two clean accuracies differ
    significantly."""
    lab = {j.a: run_label(j.a), j.b: run_label(j.b), **(labels or {})}
    A, B, t = lab[j.a], lab[j.b], j.test
    note = as_trained_note({j.a: j.clean[j.a], j.b: j.clean[j.b]}, as_trained, STUDY_HOW)
    s = [f"Both models are measured on the same {j.n:,} held-out images: {A} {j.clean[j.a]:.1f}% clean, "
         f"{B} {j.clean[j.b]:.1f}% clean{f' ({note})' if note else ''}. A perturbation is judged by each model's drop "
         "from its own clean accuracy, the two drops compared image by image."]
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
                 f"{_interval(p)}, p = {p['p']:.2g} (a single test: nothing to adjust): {outcome_phrase(j.outcome, t)}.")
        s += floor_sentences(p["drop_a"], p["drop_b"], t, A, B,
                             [(r["name"], r["drop_a"], r["drop_b"], r["diff"], r.get("p_holm")) for r in j.rows
                              if r["role"] == "secondary"], j.outcome)
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
    return paragraphs(s, width=width)


HURTS = 2.0
"""Points a model must lose under a perturbation for :func:`floor_sentences` to list it as one that hurts."""


def floor_sentences(drop_a: float, drop_b: float, t: PrimaryTest, A: str, B: str, rows: Sequence[tuple],
                    outcome: str) -> list:
    """What the primary test can show: when the primary perturbation costs *both* models less than its minimum effect,
    a difference of that size can hardly appear, and "equivalent" is a floor of the test rather than evidence of equal
    robustness; then the perturbations that do hurt (a model loses at least :data:`HURTS` points: ``rows`` of
    ``(name, drop A, drop B, B − A, Holm p)``) say what there is to see.  No sentence when the primary perturbation
    hurts."""
    if not (drop_a < t.min_effect and drop_b < t.min_effect):
        return []
    then = ("\u201cequivalent\u201d here is a floor of the test, not evidence that the two models are equally robust"
            if outcome == "equivalent" else "the test has little room to show one")
    out = [f"The primary perturbation costs each model less than the minimum effect ({drop_a:.2f} and {drop_b:.2f} "
           f"points, against {t.min_effect:g}), so a difference of that size could hardly appear: {then}."]
    hurt = [r for r in rows if max(r[1], r[2]) >= HURTS]
    if hurt:
        out.append(f"The perturbations that do hurt (a model loses at least {HURTS:g} points; secondary, so they never "
                   "decide): " + "; ".join(
                       f"{name}: {A} loses {a:.2f}, {B} {b:.2f}, difference {d:+.2f}"
                       + (f" (Holm p = {ph:.2g})" if ph is not None else "") for name, a, b, d, ph in hurt) + ".")
    return out


def outcome_phrase(outcome: str, t: PrimaryTest) -> str:
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
                        "support nor rule out the expectation; more held-out images narrow the interval.",
        "unmeasured": "the primary condition was not measured; no verdict.",
    }[j.outcome] if p is not None else "the primary condition was not measured; no verdict."
    return head + body + clean


FOOTING = ("the 95% interval and p are unadjusted, one test each (the interval excludes 0 exactly when p < α); "
           "p, Holm is adjusted for the tests of its family, and significance is read from it (the primary row is one "
           "test: nothing to adjust)")
"""What the drops table says about which of its numbers are adjusted."""


def draws_cell(spreads: Sequence[Optional[Mapping]]) -> str:
    """The draws behind a row of a random perturbation (``spreads``: each model's
    :func:`~cnet_lib.images.studies.robustness_verdict.draw_spread`, in every seed): how many (with how many the rule
    asks, when fewer), and ``wide`` with the largest 95% Monte-Carlo half-width when some model's draws spread more than
    the rule's standard deviation; "—" for a perturbation that is not drawn at random."""
    spreads = [s for s in spreads if s]
    if not spreads:
        return "—"
    k, rule = min(s["draws"] for s in spreads), spreads[0]["rule"]
    text = f"{k}" if k >= rule else f"{k} (rule: {rule})"
    wide = [s["half_width"] for s in spreads if s["wide"]]
    return text + (f"; wide, ±{max(wide):.1f}" if wide else "")


DRAWS_NOTE = (f"draws: of each random perturbation per level and model (the rule: {NOISE_DRAWS['weight_noise']} per "
              f"weight-noise level, {NOISE_DRAWS['input_noise']} per input-noise level); wide: a model's accuracy spreads "
              f"across its draws by a standard deviation above {100 * WIDE_SD['weight_noise']:g} points (weight noise) or "
              f"{100 * WIDE_SD['input_noise']:g} (input noise), or, with fewer draws than the rule, the 95% Monte-Carlo "
              f"half-width of its mean exceeds {MC_HALF_WIDTH:g} point; the largest half-width is given, in points (the row's "
              "interval includes the draws' spread)")
"""What the draws column says (the analysis plan's rule on noise draws)."""


def drops_table(j: Judgement) -> Rich:
    """The verdict's rows as a table: per perturbation its role (primary, or its family), the points
    each model loses, the paired difference with its **unadjusted** 95% interval and p, the p
    **Holm-adjusted** within the family (the primary row: "one test"), and whether it is significant at
    the judgement's α after that adjustment; the note says which numbers are adjusted (:data:`FOOTING`)."""
    def name(r):
        return r["name"] + (" (PRIMARY)" if r["role"] == "primary" else " (unmeasured)" if r["role"] == "unmeasured" else "")

    def holm(r):
        if r["p_holm"] is None:
            return "—"
        return "one test" if r["role"] == "primary" else f"{r['p_holm']:.2g}"

    cols = [("perturbation", name, "{}"), ("draws", lambda r: draws_cell([r.get("draws_a"), r.get("draws_b")]), "{}"),
            ("A loses", "drop_a", "{:.2f}"),
            ("B loses", "drop_b", "{:.2f}"), ("B − A", "diff", "{:+.2f}"),
            ("95% interval", lambda r: "—" if r["ci95"] is None else _interval(r), "{}"),
            ("p", lambda r: "—" if r["p"] is None else f"{r['p']:.2g}", "{}"), ("p, Holm", holm, "{}"),
            ("significant", lambda r: "yes" if r["significant"] else "no", "{}")]
    return format_table(j.rows, cols, note=f"A = {run_label(j.a)}, B = {run_label(j.b)}; points of accuracy on {j.n:,} "
                        f"held-out images; {FOOTING}; significant: after Holm, at α = {j.test.alpha:g}; families: "
                        "weight noise, quantization (and stored formats), input noise; the PRIMARY row alone decides; "
                        + DRAWS_NOTE)


def word_methods(m: MethodJudgement, labels: Optional[Mapping[str, str]] = None) -> Rich:
    """One sentence, as a paragraph: the primary test across training seeds
    (:func:`cnet_lib.images.studies.robustness_verdict.judge_methods`), with how many models per method."""
    lab = {m.a: run_label(m.a), m.b: run_label(m.b), **(labels or {})}
    counts = f"{len(m.drops_a)} trained {lab[m.a]} and {len(m.drops_b)} {lab[m.b]} models"
    if m.outcome == "unmeasured":
        return paragraphs([f"Training methods: {counts}; a claim about the methods needs at least two per method, "
                           "so none is made."])

    def spread(d):
        return f"mean {sum(d) / len(d):.2f}, range {min(d):.2f} to {max(d):.2f}"

    return paragraphs([f"Training methods ({counts}, the training seed as the unit; {m.test.name}): {lab[m.a]} loses "
                       f"{spread(m.drops_a)} points, {lab[m.b]} {spread(m.drops_b)}; difference of the means "
                       f"{m.diff:+.2f}, 95% interval [{m.ci95[0]:+.2f}, {m.ci95[1]:+.2f}], Welch p = {m.p:.2g}: "
                       f"{outcome_phrase(m.outcome, m.test)}."])


# --------------------------------------------------------------------------- tables
def quantization_error_table(quantize: Callable[[torch.Tensor, int], torch.Tensor], weights: Mapping[str, torch.Tensor],
                             bits: Sequence[int] = (8, 4, 2)) -> Rich:
    """For each named weight, the relative error ‖quantize(w, b) − w‖ / ‖w‖ of ``quantize`` (e.g. the
    reader's own function) at each bit width ``b``: one row per weight, one column per width."""
    rows = []
    for name, w in weights.items():
        w = w.detach()
        rows.append({"weight": f"{name} {tuple(w.shape)}",
                     **{b: ((quantize(w, b) - w).norm() / w.norm()).item() for b in bits}})
    return format_table(rows, [("weight", "weight", "{}")] + [(f"{b} bits", b, "{:.1e}") for b in bits],
                        note="relative error ‖w̃ − w‖ / ‖w‖")


STUDY_HOW = "the study evaluates every model again, in float32"
"""What the robustness study does differently from training's own evaluation (said where its clean accuracies differ)."""


def size_table(study: Mapping[str, Sequence[Condition]], as_trained: Optional[Mapping[str, Any]] = None) -> Rich:
    """Each model's size in bytes and accuracy for every way of storing its weights that was measured
    (float32, then each quantization scheme and float format; one row each); with ``as_trained`` (the runs), the
    note says why a float32 accuracy differs from the model's accuracy as trained."""
    rows = []
    for label, conds in study.items():
        for c in conds:
            if c.kind in ("clean", "quantized_theta", "quantized_weights", "float_format"):
                rows.append({"model": run_label(label), "format": "float32" if c.kind == "clean" else condition_name(c.kind, c.level),
                             "bytes": c.bytes, "accuracy": sum(c.accuracies()) / len(c.correct)})
    clean = {label: 100 * sum(c.accuracies()) / len(c.correct) for label, conds in study.items() for c in conds
             if c.kind == "clean"}
    note = as_trained_note(clean, as_trained, STUDY_HOW)
    return format_table(rows, [("model", "model", "{}"), ("weights", "format", "{}"), ("bytes", "bytes", "{:,}"),
                               ("accuracy", "accuracy", "{:.4f}")], left=2, note=note[0].upper() + note[1:] if note else None)
