"""The robustness rows over training seeds in a table and sentences (:func:`robustness_over_seeds_table`,
:func:`word_robustness_over_seeds`) of :mod:`cnet_lib.images.studies.seed_verdict`, which computes them (the
manifestation contrast over seeds is :mod:`cnet_lib.studies.manifestation`'s)."""
from __future__ import annotations

from ..images.studies.seed_verdict import SeedRobustness
from ..runtime.rich_text import Rich, paragraphs
from ..runtime.rows import format_table, seeds_phrase, spread_cell
from ..runtime.vocabulary import run_label
from .robustness_report import DRAWS_NOTE, draws_cell, floor_sentences, outcome_phrase

__all__ = ["robustness_over_seeds_table", "word_robustness_over_seeds"]


def robustness_over_seeds_table(r: SeedRobustness) -> Rich:
    """The rows over seeds: each method's drop as mean [min, max], B − A, Welch's interval and p, Holm's p
    within the family; the note says how many seeds and what the unit is."""
    def name(row):
        return row["name"] + (" (PRIMARY)" if row["role"] == "primary" else "")

    cols = [("perturbation", name, "{}"), ("draws", lambda row: draws_cell(row.get("draws", [])), "{}"),
            ("A loses", lambda row: spread_cell(row["a"], "{:.2f}"), "{}"), ("B loses", lambda row: spread_cell(row["b"], "{:.2f}"), "{}"),
            ("B − A", "diff", "{:+.2f}"),
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


def word_robustness_over_seeds(r: SeedRobustness) -> Rich:
    """The VERDICT about the training methods, with how many seeds stand behind it, as a paragraph."""
    return paragraphs([_robustness_sentence(r)])


def _robustness_sentence(r: SeedRobustness) -> str:
    A, B, t = run_label(r.a), run_label(r.b), r.test
    head = f"VERDICT (training methods, {seeds_phrase(r.seeds)}; primary test {t.name}, minimum effect " \
           f"{t.min_effect:g} point{'s' if t.min_effect != 1 else ''}, α = {t.alpha:g}): "
    if r.outcome == "one seed":
        return head + "one trained model per method, so no claim about the training methods is made."
    if not r.blocks_matter:
        return head + (f"no verdict: in some seed removing the blocks costs a model less than {r.matter_points:g} "
                       "points (or it was not measured).")
    p = next((row for row in r.rows if row["role"] == "primary"), None)
    if p is None:
        return head + "the primary condition was not measured; no verdict."
    line = head + (f"{A} loses {spread_cell(p['a'], '{:.2f}')}, {B} {spread_cell(p['b'], '{:.2f}')} points (mean [min, max]); "
                   f"difference of the means {p['diff']:+.2f}, 95% interval [{p['ci95'][0]:+.2f}, {p['ci95'][1]:+.2f}], "
                   f"Welch p = {p['p']:.2g}: {outcome_phrase(r.outcome, t)}.")
    floor = floor_sentences(p["a"]["mean"], p["b"]["mean"], t, A, B,
                            [(row["name"], row["a"]["mean"], row["b"]["mean"], row["diff"], row.get("p_holm"))
                             for row in r.rows if row["role"] == "secondary"], r.outcome)
    return " ".join([line] + floor)
