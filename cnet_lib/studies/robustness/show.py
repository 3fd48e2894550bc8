"""The robustness study shown: its tables and sentences, its figures, its live app and the numbers its chapter's prose
quotes.  The numbers are :mod:`.study`'s; nothing here measures anything but the live app, which evaluates the model
the reader perturbs.

* **words**: the verdict of :func:`~.study.judge` (:func:`word_verdict`; its rows, :func:`drops_table`), the rows over
  training seeds (:func:`over_seeds_table`, :func:`word_over_seeds`), each model's size per way of storing its
  weights (:func:`size_table`), the error of a quantizer (:func:`quantization_error_table`), and the chapter's
  numbers as its prose says them (:func:`facts`);
* **figures**: accuracy under weight noise (:func:`fig_weight_noise`), rounded weights (:func:`fig_quantization`)
  and input noise (:func:`fig_input_noise`), the points each model loses (:func:`fig_drops`), and a static explorer
  of every condition (:func:`fig_explorer`);
* **the live app** (:func:`live_app`): a trained ContinuousNet perturbed (weight noise, a weight format, input noise)
  on any graph, against the clean model on the same images.  Every interaction answers at once
  (:mod:`cnet_lib.draw.progressive`): from the cached study when the graph is one the study measured and at most
  one perturbation is on (the study's mean over its noise draws, with their range), else from the first images a
  fixed budget of floating-point operations allows, with the ± of that sample, refined to all of the app's images in
  the background (:class:`cnet_lib.draw.progressive.Progressive`).

Tables and sentences are :class:`~cnet_lib.runtime.rich_text.Rich` (plain text printed, HTML displayed); colours and
labels of the runs come from :mod:`cnet_lib.runtime.rich_text`.
"""
from __future__ import annotations

import copy
import time
from typing import Any, Callable, Mapping, Optional, Sequence

import plotly.graph_objects as go
import torch

from ...images.runs.image_presets import live_images, sweep_grid
from ...images.runs.run_loading import StudyRun, as_trained_note, study_device
from ...images.training.evaluation import Evaluator
from ...draw.html_figures import below_modebar
from ...draw.plotting import ACCURACY_TITLE, book_layout, menu_figure, percent
from ...draw.progressive import Estimate, Progressive, estimate_from, follow_text, quick_size, study_answer
from ...draw.widgets import Choice, IntRange, Steps, app_data, evaluate_in_chunks, live_app as widget_app
from ...runtime.rich_text import (Rich, format_table, minus_sign, p_value, paragraphs, run_color, run_dash, run_label,
    run_pattern, seeds_phrase, spread_cell)
from ..runner import check_study_inputs
from .study import (Condition, FAMILIES, Judgement, MC_HALF_WIDTH, NOISE_DRAWS, PrimaryTest, RANDOM_KINDS,
    SeedRobustness, WIDE_SD, condition_name, float_format_copy, input_noise, perturb_coefficients, quantize_theta,
    quantize_weights, summarise)

__all__ = [
    # words
    "word_verdict", "outcome_phrase", "floor_sentences", "HURTS", "STUDY_HOW", "FOOTING", "DRAWS_NOTE", "draws_cell",
    "drops_table", "over_seeds_table", "word_over_seeds", "quantization_error_table", "size_table", "facts",
    # figures
    "STORAGE_KINDS", "level_name", "fig_weight_noise", "fig_quantization", "fig_input_noise", "fig_drops", "fig_explorer",
    # the live app
    "live_app", "study_label", "active_conditions",
]


# --------------------------------------------------------------------------- words
def _interval(r: Mapping) -> str:
    return f"[{r['ci95'][0]:+.2f}, {r['ci95'][1]:+.2f}]"


def _models_phrase(j: Judgement) -> str:
    k = j.models_per_method
    if k == 1:
        return "one trained model per method, so this is about these two models, not yet about the training methods"
    return f"{k} trained models per method"


STUDY_HOW = "the study evaluates every model again, in float32"
"""What the robustness study does differently from training's own evaluation (said where its clean accuracies differ)."""

HURTS = 2.0
"""Points a model must lose under a perturbation for :func:`floor_sentences` to list it as one that hurts."""


def word_verdict(j: Judgement, labels: Optional[Mapping[str, str]] = None, width: Optional[int] = 92,
                 as_trained: Optional[Mapping[str, Any]] = None) -> Rich:
    """Sentences that state what :func:`~.study.judge` found, quoting the numbers, as paragraphs (the text wrapped to
    ``width`` characters, one line per sentence with ``width=None``); the last one, ``VERDICT:``, rests on the primary
    test alone, is set apart in a notebook, and says how many trained models stand behind it and whether the two
    clean accuracies differ significantly.  With ``as_trained`` (the runs) it says why a clean accuracy differs from
    the model's as trained."""
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
             f"{p_value(ct['p'])}): " + ("they differ significantly, so each drop starts from a different accuracy."
                                        if j.clean_differs else "no significant difference."))
    p = j.primary
    if p is not None:
        s.append(f"Primary test, fixed in advance: {t.name}; the paper's expectation is that {B} loses at least "
                 f"{t.min_effect:g} point{'s' if t.min_effect != 1 else ''} more than {A}. {A} loses "
                 f"{p['drop_a']:.2f} points, {B} {p['drop_b']:.2f}; difference {p['diff']:+.2f}, 95% interval "
                 f"{_interval(p)}, {p_value(p['p'])} (a single test: nothing to adjust): {outcome_phrase(j.outcome, t)}.")
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
                         "; ".join(f"{r['name']}: difference {r['diff']:+.2f} ({p_value(r['p_holm'], 'Holm p')}, "
                                   f"{A if r['diff'] > 0 else B} loses less)" for r in sig)
                         if sig else "no significant difference") + ".")
        if unmeasured:
            s.append(f"Unmeasured ({family}): " + ", ".join(r["name"] for r in unmeasured)
                     + " — fewer than two seeds per model, so the spread of the draws is unknown.")
    s.append(_verdict_line(j, A, B))
    return paragraphs([minus_sign(x) for x in s], width=width)


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
                       + (f" ({p_value(ph, 'Holm p')})" if ph is not None else "") for name, a, b, d, ph in hurt) + ".")
    return out


def outcome_phrase(outcome: str, t: PrimaryTest) -> str:
    """The primary outcome in words."""
    return {"supported": "the expectation is supported",
            "contradicted": "the opposite of the expectation, by at least the minimum effect",
            "equivalent": f"the whole interval lies within ±{t.min_effect:g}: no difference of that size",
            "below minimum": f"significant, but smaller than the {t.min_effect:g}-point minimum effect",
            "inconclusive": "inconclusive: the interval allows both no difference and one of the minimum size",
            "unmeasured": "not measured",
            "one seed": "one trained model per method: no claim about the training methods"}[outcome]


def _verdict_line(j: Judgement, A: str, B: str) -> str:
    t = j.test
    head = (f"VERDICT ({_models_phrase(j)}; primary test {t.name}, minimum effect {t.min_effect:g} point"
            f"{'s' if t.min_effect != 1 else ''}, α = {t.alpha:g}): ")
    clean = (f" Their clean accuracies differ significantly ({j.clean[j.a]:.1f}% against {j.clean[j.b]:.1f}%, "
             f"{p_value(j.clean_test['p'], 'McNemar p')})." if j.clean_differs else "")
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
    """The draws behind a row of a random perturbation (``spreads``: each model's :func:`~.study.draw_spread`, in
    every seed): how many (with how many the rule asks, when fewer), and ``wide`` with the largest 95% Monte-Carlo
    half-width when some model's draws spread more than the rule's standard deviation; "—" for a perturbation that
    is not drawn at random."""
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


def over_seeds_table(r: SeedRobustness) -> Rich:
    """The rows over training seeds (:func:`~.study.robustness_over_seeds`): each method's drop as mean [min, max],
    B − A, Welch's interval and p, Holm's p within the family; the note says how many seeds and what the unit is."""
    def name(row):
        return row["name"] + (" (PRIMARY)" if row["role"] == "primary" else "")

    cols = [("perturbation", name, "{}"), ("draws", lambda row: draws_cell(row.get("draws", [])), "{}"),
            ("A loses", lambda row: spread_cell(row["a"], "{:.2f}"), "{}"),
            ("B loses", lambda row: spread_cell(row["b"], "{:.2f}"), "{}"), ("B − A", "diff", "{:+.2f}"),
            ("95% interval", lambda row: row["ci95"] and f"[{row['ci95'][0]:+.2f}, {row['ci95'][1]:+.2f}]", "{}"),
            ("p", "p", "{:.2g}"),
            ("p, Holm", lambda row: "one test" if row["role"] == "primary" else row["p_holm"] and f"{row['p_holm']:.2g}",
             "{}"),
            ("", lambda row: "significant" if row["significant"] else "", "{}")]
    unit = ("Welch's t-test with the training seed as the unit (95% interval and p unadjusted); Holm within each "
            "family; the PRIMARY row alone decides"
            if len(r.seeds) >= 2 else "one model per method: no test about the training methods")
    return format_table(r.rows, cols, note=f"{seeds_phrase(r.seeds)}; A = {run_label(r.a)}, B = {run_label(r.b)}; "
                        f"points lost from each model's own clean accuracy, mean [min, max] over the seeds; {unit}; "
                        f"{DRAWS_NOTE.replace('per level and model', 'per level, model and seed')}")


def word_over_seeds(r: SeedRobustness) -> Rich:
    """The VERDICT about the training methods, with how many seeds stand behind it, as a paragraph."""
    A, B, t = run_label(r.a), run_label(r.b), r.test
    head = f"VERDICT (training methods, {seeds_phrase(r.seeds)}; primary test {t.name}, minimum effect " \
           f"{t.min_effect:g} point{'s' if t.min_effect != 1 else ''}, α = {t.alpha:g}): "
    p = r.primary
    if r.outcome == "one seed":
        line = head + "one trained model per method, so no claim about the training methods is made."
    elif not r.blocks_matter:
        line = head + (f"no verdict: in some seed removing the blocks costs a model less than {r.matter_points:g} "
                       "points (or it was not measured).")
    elif p is None:
        line = head + "the primary condition was not measured; no verdict."
    else:
        line = " ".join([head + f"{A} loses {spread_cell(p['a'], '{:.2f}')}, {B} {spread_cell(p['b'], '{:.2f}')} points "
                         f"(mean [min, max]); difference of the means {p['diff']:+.2f}, 95% interval "
                         f"[{p['ci95'][0]:+.2f}, {p['ci95'][1]:+.2f}], {p_value(p['p'], 'Welch p')}: "
                         f"{outcome_phrase(r.outcome, t)}."] + _floor_over_seeds(r, A, B))
    return paragraphs([minus_sign(line)])


def _floor_over_seeds(r: SeedRobustness, A: str, B: str) -> list:
    p = r.primary
    return floor_sentences(p["a"]["mean"], p["b"]["mean"], r.test, A, B,
                           [(row["name"], row["a"]["mean"], row["b"]["mean"], row["diff"], row.get("p_holm"))
                            for row in r.rows if row["role"] == "secondary"], r.outcome)


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


def size_table(study: Mapping[str, Sequence[Condition]], as_trained: Optional[Mapping[str, Any]] = None) -> Rich:
    """Each model's size in bytes and accuracy for every way of storing its weights that was measured
    (float32, then each quantization scheme and float format; one row each); with ``as_trained`` (the runs), the
    note says why a float32 accuracy differs from the model's accuracy as trained."""
    rows = []
    for label, conds in study.items():
        for c in conds:
            if c.kind in ("clean",) + STORAGE_KINDS:
                rows.append({"model": run_label(label), "format": "float32" if c.kind == "clean" else condition_name(c.kind, c.level),
                             "bytes": c.bytes, "accuracy": sum(c.accuracies()) / len(c.correct)})
    clean = {label: 100 * sum(c.accuracies()) / len(c.correct) for label, conds in study.items() for c in conds
             if c.kind == "clean"}
    note = as_trained_note(clean, as_trained, STUDY_HOW)
    return format_table(rows, [("model", "model", "{}"), ("weights", "format", "{}"), ("bytes", "bytes", "{:,}"),
                               ("accuracy", "accuracy", "{:.4f}")], left=2, note=note[0].upper() + note[1:] if note else None)


# --------------------------------------------------------------------------- the chapter's numbers
def _signed(v: float) -> str:
    return minus_sign(f"{v:+.2f}")


_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def _count(k: int) -> str:
    return _WORDS.get(k, f"{k:,}")


_DOING = {"weight_noise": "weight noise of σ = {:g}", "input_noise": "input noise of τ = {:g}",
          "quantized_theta": "rounding θ̂ to {} bits", "quantized_weights": "rounding every weight to {} bits",
          "float_format": "storing every parameter in {}"}
"""A perturbation as the subject of a sentence (any other kind: its :func:`~.study.condition_name`)."""


def _doing(kind: str, level) -> str:
    return _DOING[kind].format(level) if kind in _DOING else condition_name(kind, level)


def _over_sentence(over: SeedRobustness) -> str:
    """The primary test over the training seeds, in one sentence (with one seed: that no test is made)."""
    p = over.primary
    if p is None:
        return "Over the training seeds the primary condition was not measured."
    if len(over.seeds) < 2:
        return minus_sign(f"With {_count(len(over.seeds))} training seed per method there is no test of the training "
                      f"methods: the drops of that seed are {p['a']['mean']:.2f} and {p['b']['mean']:.2f} points.")
    return minus_sign(f"Over the {_count(len(over.seeds))} training seeds the drops are {p['a']['mean']:.2f} and "
                  f"{p['b']['mean']:.2f} points on average, a difference of {p['diff']:+.2f} with a 95% interval of "
                  f"[{p['ci95'][0]:+.2f}, {p['ci95'][1]:+.2f}] ({outcome_phrase(over.outcome, over.test)}).")


def _hurt_sentence(over: SeedRobustness) -> str:
    """The random perturbations that cost a model at least :data:`HURTS` points at their largest level, over the seeds:
    what each costs the two methods, whether the difference is significant after Holm, and whether the row is wide."""
    tops = [max((r for r in over.rows if r["kind"] == kind), key=lambda r: r["level"], default=None)
            for kind in RANDOM_KINDS]
    rows = [r for r in tops if r is not None and max(r["a"]["mean"], r["b"]["mean"]) >= HURTS]
    if not rows:
        return ""
    A, B = run_label(over.a), run_label(over.b)
    parts = [f"{_doing(r['kind'], r['level'])} costs the {A} models {r['a']['mean']:.2f} points and the {B} "
             f"models {r['b']['mean']:.2f}" for r in rows]
    sig = [r for r in rows if r["significant"]]
    said = ("no difference significant after Holm" if not sig else
            "significant after Holm: " + ", ".join(f"{condition_name(r['kind'], r['level'])} ({_signed(r['diff'])})"
                                                    for r in sig))
    if len(over.seeds) < 2:
        said = "one seed: no test"
    wide = [r for r in rows if any(d["wide"] for d in r.get("draws", []))]
    if wide:
        said += ("; " + " and ".join(condition_name(r["kind"], r["level"]) for r in wide)
                 + f" {'is' if len(wide) == 1 else 'are'} wide: the draws spread more than the rule allows")
    return minus_sign("Where a perturbation does hurt, over the seeds: " + "; ".join(parts) + f" ({said}).")


def _single_pair(verdict: Judgement, over: SeedRobustness, seed) -> str:
    """A secondary row that is significant for the one pair of models judged (training seed ``seed``) but whose interval
    over the seeds includes zero: why one pair proves little; "" when there is none (or one seed)."""
    if len(over.seeds) < 2:
        return ""
    over_rows = {(r["kind"], r["level"]): r for r in over.rows}
    for r in verdict.rows:
        o = over_rows.get((r["kind"], r["level"]))
        if r["role"] == "secondary" and r["significant"] and o is not None and o["ci95"][0] <= 0 <= o["ci95"][1]:
            more, less = (run_label(verdict.b), run_label(verdict.a)) if r["diff"] > 0 else (run_label(verdict.a),
                                                                                               run_label(verdict.b))
            return minus_sign(f"On training seed {seed}, {_doing(r['kind'], r['level'])} costs the {more} model "
                          f"{abs(r['diff']):.2f} points more than the {less} model ({p_value(r['p_holm'], 'Holm p')}), while "
                          f"over the {_count(len(over.seeds))} seeds that difference is {o['diff']:+.2f} points with an "
                          f"interval of [{o['ci95'][0]:+.2f}, {o['ci95'][1]:+.2f}].")
    return ""


def facts(study: Mapping[str, Sequence[Condition]], verdict: Judgement, over: SeedRobustness,
          runs: Mapping[str, StudyRun]) -> dict:
    """The numbers the chapter's prose states, each as the prose writes it (``{name: text}``, for
    :func:`cnet_lib.book.glue_all`): the rules of the test (``primary``, ``min_effect``, ``alpha``, ``matter``, the
    noise-draw rule), the primary row on the judged pair of training seed ``seed`` (``a``, ``b``, ``diff``, ``lo``,
    ``hi``, ``outcome``), the same over the training seeds (``over``, ``floor``, ``hurt``, ``single_pair``, ``seeds``),
    the sizes (``bytes_f32``, ``bytes_w4``, ``bytes_ratio``) and the images (``n``, ``live_n``), every name with the
    prefix ``rob_``.  Worded results come from the same functions as the tables' sentences, so the prose says what the
    numbers say for any preset; a sentence that does not apply is empty."""
    t = verdict.test
    p = verdict.primary or {"drop_a": float("nan"), "drop_b": float("nan"), "diff": float("nan"),
                            "ci95": (float("nan"), float("nan"))}
    first = next(iter(runs.values()))
    sizes = {(c.kind, c.level): c.bytes for c in study[verdict.a]}
    f32, w4 = sizes.get(("clean", None)), sizes.get(("quantized_weights", 4))
    floor = _floor_over_seeds(over, run_label(over.a), run_label(over.b)) if over.primary else []
    return {
        "rob_n": f"{verdict.n:,}", "rob_live_n": f"{min(live_images(first.config.preset), verdict.n):,}",
        "rob_primary": t.name, "rob_min_effect": f"{t.min_effect:g}", "rob_alpha": f"{t.alpha:g}",
        "rob_matter": f"{verdict.matter_points:g}",
        "rob_draws_weight": f"{NOISE_DRAWS['weight_noise']}", "rob_draws_input": f"{NOISE_DRAWS['input_noise']}",
        "rob_sd_weight": f"{100 * WIDE_SD['weight_noise']:g}", "rob_sd_input": f"{100 * WIDE_SD['input_noise']:g}",
        "rob_mc": f"{MC_HALF_WIDTH:g}",
        "rob_a": minus_sign(f"{p['drop_a']:.2f}"), "rob_b": minus_sign(f"{p['drop_b']:.2f}"), "rob_diff": _signed(p["diff"]),
        "rob_lo": _signed(p["ci95"][0]), "rob_hi": _signed(p["ci95"][1]), "rob_outcome": outcome_phrase(verdict.outcome, t),
        "rob_seed": f"{first.config.seed}", "rob_seeds": _count(len(over.seeds)), "rob_over": _over_sentence(over),
        "rob_floor": minus_sign(floor[0]) if floor else "", "rob_hurt": _hurt_sentence(over),
        "rob_single_pair": _single_pair(verdict, over, first.config.seed),
        "rob_bytes_f32": f"{f32:,}" if f32 else "—", "rob_bytes_w4": f"{w4:,}" if w4 else "—",
        "rob_bytes_ratio": f"{f32 / w4:.1f}" if f32 and w4 else "—",
    }


# --------------------------------------------------------------------------- figures
STORAGE_KINDS = ("quantized_theta", "quantized_weights", "float_format")
"""The kinds of condition that store the weights another way (the size table and the quantization figure)."""


def level_name(kind: str, level) -> str:
    """A condition in a few words: ``σ = 0.1``, ``θ̂ in 4 bits``, ``bf16``, ``τ = 0.2``."""
    if kind == "weight_noise":
        return f"σ = {level:g}"
    if kind == "input_noise":
        return f"τ = {level:g}"
    if kind == "float_format":
        return str(level)
    return condition_name(kind, level).replace("all weights", "weights")


def fig_weight_noise(study, title: str = ""):
    """Accuracy against the relative weight noise σ (log axis): the mean over seeds with the range of
    the seeds as error bars, one line per model and graph; dotted: each model's clean accuracy."""
    fig = go.Figure()
    for label, conds in study.items():
        rows = summarise(conds)
        noise = sorted((r for r in rows if r["kind"] == "weight_noise"), key=lambda r: r["level"])
        clean = next(r for r in rows if r["kind"] == "clean")["accuracy"]
        col = run_color(label)
        fig.add_trace(go.Scatter(
            x=[r["level"] for r in noise], y=[percent(r["accuracy"]) for r in noise], mode="lines+markers",
            name=run_label(label), line=dict(color=col, dash=run_dash(label)),
            error_y=dict(type="data", symmetric=False, array=[percent(r["max"] - r["accuracy"]) for r in noise],
                         arrayminus=[percent(r["accuracy"] - r["min"]) for r in noise]),
            customdata=[r["seeds"] for r in noise],
            hovertemplate="σ = %{x}<br>accuracy %{y:.2f}% (mean of %{customdata} seeds)"))
        fig.add_hline(y=percent(clean), line_dash="dot", line_color=col, line_width=1)
    book_layout(fig, title or "Accuracy under noise on the weights θ̂ (dotted: clean)",
                "weight noise σ (‖noise‖ = σ‖θ̂‖)", ACCURACY_TITLE, height=500, legend_below=True)
    sigmas = sorted({c.level for conds in study.values() for c in conds if c.kind == "weight_noise"})
    fig.update_xaxes(type="log", tickvals=sigmas, ticktext=[f"{s:g}" for s in sigmas])
    return fig


def fig_quantization(study, title: str = ""):
    """Accuracy (percent) with the weights stored in float32 (clean), bf16 and float16 (every parameter), and in
    8 and 4 bits by each quantization scheme (θ̂ only; every weight): horizontal bars, one group per format (one row
    each, so that every format's name reads on a phone and each bar's value sits at its end, clear of the others);
    the hover gives the model's size in bytes."""
    fig = go.Figure()

    def order(r):
        if r["kind"] == "clean":
            return (0, 0)
        return (1 + STORAGE_KINDS.index(r["kind"]), -r["level"] if isinstance(r["level"], int) else 0)

    n_rows = 0
    for label, conds in study.items():
        rows = sorted((r for r in summarise(conds) if r["kind"] in ("clean",) + STORAGE_KINDS), key=order)
        names = ["float32" if r["kind"] == "clean" else level_name(r["kind"], r["level"]) for r in rows]
        n_rows = max(n_rows, len(rows))
        fig.add_trace(go.Bar(y=names, x=[percent(r["accuracy"]) for r in rows], name=run_label(label), orientation="h",
                             marker=dict(color=run_color(label), pattern_shape=run_pattern(label)),
                             text=[f"{percent(r['accuracy']):.1f}" for r in rows], textposition="outside",
                             cliponaxis=False, customdata=[r["bytes"] for r in rows],
                             hovertemplate="%{y}: accuracy %{x:.2f}%<br>%{customdata} bytes"))
    # the bars' labels say how the weights are stored; a row of three bars is 60 px high
    book_layout(fig, title or "Weights rounded after training (integers: symmetric, per output channel)",
                ACCURACY_TITLE, "", height=140 + 20 * len(study) * n_rows + 40, legend_below=True)
    fig.update_layout(barmode="group", bargap=0.25, xaxis_range=[0, 100], margin=dict(r=40))
    fig.update_yaxes(autorange="reversed", automargin=True)
    return fig


def fig_input_noise(study, title: str = ""):
    """Accuracy against Gaussian input noise τ (normalised pixel units), with each model's blocks
    removed (dotted) for scale; a model on another graph dashed."""
    fig = go.Figure()
    for label, conds in study.items():
        rows = summarise(conds)
        col = run_color(label)
        for kind, dash, suffix in (("input_noise", run_dash(label), ""), ("identity_input_noise", "dot", ", blocks removed")):
            pts = [r for r in rows if r["kind"] == kind]
            base = next((r for r in rows if r["kind"] == ("clean" if kind == "input_noise" else "identity")), None)
            if not pts or base is None:
                continue
            pts = [dict(base, level=0.0)] + sorted(pts, key=lambda r: r["level"])
            fig.add_trace(go.Scatter(x=[r["level"] for r in pts], y=[percent(r["accuracy"]) for r in pts],
                                     mode="lines+markers", name=run_label(label) + suffix, line=dict(color=col, dash=dash),
                                     hovertemplate="τ = %{x}: accuracy %{y:.2f}%"))
    book_layout(fig, title or "Accuracy under Gaussian noise on the input images", "input noise τ (normalised pixel units)",
                ACCURACY_TITLE, height=520, legend_below=True)
    return fig


def fig_drops(judgement: Judgement, title: str = ""):
    """The verdict's numbers as horizontal bars: per perturbation (one row each, the primary test at
    the top and marked), the points each model loses from its own clean accuracy; a ``*`` after a
    secondary condition whose difference is significant (Holm within its family); the paired
    difference, its unadjusted 95% interval and p, and the Holm-adjusted p in the hover, each labelled."""
    j = judgement
    rows = [r for r in j.rows if r["role"] != "unmeasured"]
    names = [("PRIMARY: " if r["role"] == "primary" else "") + level_name(r["kind"], r["level"])
             + (" *" if r["significant"] and r["role"] != "primary" else "") for r in rows]
    detail = [f"difference {r['diff']:+.2f} points, 95% interval (unadj.) [{r['ci95'][0]:+.2f}, {r['ci95'][1]:+.2f}], "
              f"p (unadj.) = {r['p']:.2g}"
              + (" (one test: not adjusted)" if r["role"] == "primary"
                 else f", p (Holm, {r['family']}) = {r['p_holm']:.2g}") for r in rows]
    fig = go.Figure()
    for who, key in ((j.a, "drop_a"), (j.b, "drop_b")):
        fig.add_trace(go.Bar(y=names, x=[r[key] for r in rows], name=run_label(who), marker_color=run_color(who),
                             orientation="h", customdata=detail,
                             hovertemplate="%{y}: loses %{x:.2f} points<br>%{customdata}"))
    book_layout(fig, title or "Points lost to each perturbation (* significant after Holm, secondary)", "accuracy lost (points)",
                "", height=160 + 44 * len(rows), legend_below=True)
    fig.update_layout(barmode="group")
    fig.update_yaxes(autorange="reversed", automargin=True)
    return fig


def fig_explorer(study, title: str = ""):
    """The static counterpart of :func:`live_app`: a menu of every measured perturbation (all of its labels readable
    on a phone, where a slider of eleven steps shows one), and for each model and graph its clean and perturbed
    accuracy (mean over seeds)."""
    kinds = ("weight_noise",) + STORAGE_KINDS + ("input_noise",)
    first = summarise(next(iter(study.values())))
    steps = [(r["kind"], r["level"]) for r in first if r["kind"] in kinds]
    frames = {}
    for kind, level in steps:
        traces = []
        for label, conds in study.items():
            rows = summarise(conds)
            clean = next(r for r in rows if r["kind"] == "clean")["accuracy"]
            hit = next((r for r in rows if (r["kind"], r["level"]) == (kind, level)), None)
            if hit is None:
                continue
            traces.append(go.Bar(x=["clean", "perturbed"], y=[percent(clean), percent(hit["accuracy"])],
                                 name=run_label(label), marker=dict(color=run_color(label), pattern_shape=run_pattern(label)),
                                 showlegend=True, text=[f"{percent(clean):.1f}", f"{percent(hit['accuracy']):.1f}"],
                                 textposition="outside", hovertemplate="%{x}: accuracy %{y:.2f}%"))
        frames[level_name(kind, level)] = traces
    fig = menu_figure(frames, title=title or "Clean and perturbed accuracy of each model", menu_prefix="",
                      yaxis_title=ACCURACY_TITLE, height=480)
    fig.update_layout(barmode="group", yaxis_range=[0, 110], uniformtext=dict(minsize=9, mode="hide"))
    return fig


# --------------------------------------------------------------------------- the live app
def study_label(runs: Mapping[str, StudyRun], model: str, scheme: str, n_steps: int) -> Optional[str]:
    """The label under which the study measured ``model`` on (``scheme``, ``n_steps``): the model itself on its own
    graph, ``"euler_fixed on rk4_classic"`` for the Euler model run with RK4-classic at its own N_t; ``None`` for any
    other graph."""
    own = runs[model].model.blocks[0]
    if (scheme, int(n_steps)) == (own.scheme.name, own.n_steps):
        return model
    if model == "euler_fixed" and scheme == "rk4_classic" and int(n_steps) == own.n_steps:
        return "euler_fixed on rk4_classic"
    return None


def active_conditions(sigma: float, fmt: str, noise: float) -> list:
    """The study's ``(kind, level)`` of every perturbation the controls turn on."""
    out = []
    if sigma:
        out.append(("weight_noise", float(sigma)))
    if fmt in ("bf16", "fp16"):
        out.append(("float_format", fmt))
    elif fmt != "float32":
        scope, bits = fmt.split()
        out.append((f"quantized_{scope}", int(bits)))
    if noise:
        out.append(("input_noise", float(noise)))
    return out


def _perturbed(base, sigma: float, fmt: str):
    m = perturb_coefficients(base, sigma, 0) if sigma else base
    if fmt in ("bf16", "fp16"):
        return float_format_copy(m, fmt)
    if fmt != "float32":
        scope, bits = fmt.split()
        return (quantize_theta if scope == "theta" else quantize_weights)(m, int(bits))
    return m


def _app_figure(model: str, scheme: str, n_steps, sigma, fmt: str, noise, clean: Estimate, hit: Estimate,
                follow: str = "") -> go.Figure:
    fig = go.Figure(go.Bar(x=["clean", "perturbed"], y=[clean.accuracy, hit.accuracy],
                           error_y=dict(type="data", array=[1.96 * clean.se, 1.96 * hit.se]),
                           text=[f"{clean.accuracy:.3f}", f"{hit.accuracy:.3f}"], textposition="outside",
                           marker_color=["#888888", run_color(model)]))
    stored = fmt if fmt in ("float32", "bf16", "fp16") else condition_name(f"quantized_{fmt.split()[0]}", int(fmt.split()[1]))
    more = f"; {follow}" if follow and not hit.final else ""
    fig.update_layout(title=f"{run_label(model)}, {scheme} N_t = {n_steps}: σ = {sigma:g}, {stored}, input noise τ = "
                            f"{noise:g} → {100 * (clean.accuracy - hit.accuracy):+.1f} points lost<br><sup>clean "
                            f"{clean.text()}; perturbed {hit.text()}{more}</sup>",
                      yaxis_range=[0, 1.1], yaxis_title="held-out accuracy (bars: 95% interval)", template="plotly_white",
                      height=400, margin=dict(t=50))
    return below_modebar(fig, grow=True)


def live_app(runs: Mapping[str, StudyRun], static_fallback_fig, grid: Mapping, device=None,
             n_images: Optional[int] = None, study: Optional[Mapping[str, list]] = None):
    """A live app (model, σ, weight format, scheme, N_t, input noise): the perturbed model against the clean
    one, each accuracy with its ±.  Answered from ``study`` (the cached study, :func:`~.study.run`) where it measured
    that graph and perturbation, else from a sample of the first ``n_images`` held-out images (default
    :func:`cnet_lib.images.live_images` of the preset) refined to all of them in the background (the first answer
    says within how many seconds).  The static book shows ``static_fallback_fig`` (:func:`fig_explorer`)."""
    check_study_inputs(runs, n_images)
    first = next(iter(runs.values()))
    dev = study_device(first, device)
    data, x, y, note = app_data(first, dev, n_images or live_images(first.config.preset))
    ev = Evaluator()
    sweep = sweep_grid(first.config.preset)

    def render(model, sigma, fmt, scheme, n_steps, noise):
        label, active = study_label(runs, model, scheme, n_steps), active_conditions(sigma, fmt, noise)
        if study and label in study and len(active) <= 1:
            clean = study_answer(study, label, "clean", None)
            hit = clean if not active else study_answer(study, label, *active[0])
            if clean is not None and hit is not None:
                return _app_figure(model, scheme, n_steps, sigma, fmt, noise, clean, hit)
        base = runs[model].model.to(dev)
        m = _perturbed(base, sigma, fmt)
        base, m = (copy.deepcopy(c).manifest(scheme, int(n_steps)) for c in (base, m))
        transform = input_noise(noise, 0) if noise else None
        n = quick_size(base, dev, len(y), evaluations=2)
        source = f"all {len(y)} images of the app" if n >= len(y) else f"first {n} of {len(y)} images"
        start = time.perf_counter()
        hits = [ev.correct(c, x[:n], y[:n], data.mean, data.std, batch_size=max(n, 1), transform=t)[0]
                for c, t in ((base, None), (m, transform))]
        follow = follow_text(len(y), n, (time.perf_counter() - start) / n)
        quick = _app_figure(model, scheme, n_steps, sigma, fmt, noise, *(estimate_from(h, source) for h in hits), follow)
        if n >= len(y):
            return quick

        def refine(stale):
            rest = [evaluate_in_chunks(Evaluator(), c, x, y, data.mean, data.std, n, stale, transform=t)
                    for c, t in ((base, None), (m, transform))]
            if any(r is None for r in rest):
                return None
            ests = [estimate_from(torch.cat([h, r]), f"all {len(y)} images of the app") for h, r in zip(hits, rest)]
            return _app_figure(model, scheme, n_steps, sigma, fmt, noise, *ests)

        return Progressive(quick, refine)

    schemes = list(sweep["schemes"])
    return widget_app(
        {"model": Choice([(r.label, k) for k, r in runs.items()], description="model"),
         "sigma": Steps([0.0] + [float(s) for s in grid["sigmas"]], 0.0, "σ"),
         "fmt": Choice([("float32", "float32"), ("bf16", "bf16"), ("fp16", "fp16")]
                       + [(condition_name(f"quantized_{scope}", b), f"{scope} {b}") for scope in ("theta", "weights")
                          for b in (8, 4)], "float32", "weights"),
         "scheme": Choice(schemes, first.model.blocks[0].scheme.name, "scheme"),
         "n_steps": IntRange(1, max(sweep["n_steps"]), first.model.blocks[0].n_steps, "N_t"),
         "noise": Steps([0.0] + [float(t) for t in grid["input_noise"]], 0.0, "input τ")},
        render, static_fallback_fig, title="Perturb a trained ContinuousNet" + note)
