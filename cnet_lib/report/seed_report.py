"""Claims over training seeds in tables and sentences: the manifestation contrast
(:func:`contrast_over_seeds_table`, :func:`word_contrast_over_seeds`) and the robustness rows
(:func:`robustness_over_seeds_table`, :func:`word_robustness_over_seeds`) of
:mod:`cnet_lib.images.studies.seed_verdict`, which computes them."""
from __future__ import annotations

import re
from typing import Mapping, Optional, Sequence

from ..images.studies.seed_verdict import SeedContrast, SeedRobustness, spread
from ..runtime.rich_text import Rich, paragraphs
from ..runtime.rows import format_table
from ..runtime.vocabulary import run_label
from .robustness_report import DRAWS_NOTE, draws_cell, floor_sentences, outcome_phrase

__all__ = ["contrast_over_seeds_table", "word_contrast_over_seeds", "robustness_over_seeds_table",
           "word_robustness_over_seeds", "spread_cell", "seeds_phrase"]


def _number(fmt: str, v: float) -> str:
    """``fmt.format(v)``, without the minus sign of a value that rounds to zero (``-0.0``)."""
    text = fmt.format(v)
    return text[1:] if re.fullmatch(r"-0(\.0*)?", text) else text


def spread_cell(s: Mapping, fmt: str = "{:.1f}") -> Optional[str]:
    """``mean [min, max]``; the value alone for one seed; ``None`` (a dash) for none."""
    if not s or not s["n"]:
        return None
    if s["n"] == 1:
        return _number(fmt, s["mean"])
    return f"{_number(fmt, s['mean'])} [{_number(fmt, s['min'])}, {_number(fmt, s['max'])}]"


def seeds_phrase(seeds: Sequence[int]) -> str:
    k = len(seeds)
    return f"{k} training seed{'s' if k != 1 else ''} per method (seed{'s' if k != 1 else ''} " \
           f"{', '.join(map(str, seeds))})"


_MARKS = {"trained": " *", "straddles": " †", "lower order": " °", "coarser": " °"}
"""A cell's mark in the contrast table: the model's own graph, steps that cross θ's jumps, a graph not judged."""


def contrast_over_seeds_table(c: SeedContrast) -> Rich:
    """The contrast table: per graph, each method's accuracy as mean [min, max] over the seeds (%), marked by what the
    graph is for that model (:mod:`cnet_lib.images.studies.graph_rule`), then the blocks' worth, the worst loss on the
    valid graphs (what the verdict judges) and on the graphs whose steps cross θ's jumps (shown apart)."""
    extra = [{"graph": "blocks worth (points)", **{r: spread(c.gaps[r]) for r in (c.euler, c.rk4)}},
             {"graph": "worst loss, valid graphs (points)", **{r: spread(c.drops[r]) for r in (c.euler, c.rk4)}},
             {"graph": "worst loss, steps across θ's jumps (points)",
              **{r: spread([d for d in c.straddle_drops[r] if d == d]) for r in (c.euler, c.rk4)}}]

    def cell(row, r):
        text = spread_cell(row[r])
        return text and text + _MARKS.get(row.get("kinds", {}).get(r), "")

    cols = [("graph", "graph", "{}")] + [(run_label(r), (lambda row, r=r: cell(row, r)), "{}") for r in (c.euler, c.rk4)]
    return format_table(c.rows + extra, cols, note=f"{seeds_phrase(c.seeds)}; accuracy in %, mean [min, max] over the "
                        "seeds. Unmarked: a valid graph for that model (steps aligned with θ's pieces, order ≥ its "
                        "training scheme's, N_t ≥ its trained N_t), what the verdict judges; * its own graph; † steps "
                        "that cross θ's jumps (shown, never judged); ° a scheme of lower order than its training "
                        "scheme (not judged)")


def word_contrast_over_seeds(c: SeedContrast) -> Rich:
    """Sentences, as paragraphs: what the seeds show on the valid graphs and across θ's jumps, and the methods verdict
    (none with one seed)."""
    E, R = run_label(c.euler), run_label(c.rk4)
    d = {r: spread(c.drops[r]) for r in (c.euler, c.rk4)}
    x = {r: spread([v for v in c.straddle_drops[r] if v == v]) for r in (c.euler, c.rk4)}
    s = [f"Over {seeds_phrase(c.seeds)}, on the valid graphs (steps aligned with θ's pieces, order ≥ the training "
         f"scheme's, N_t ≥ the trained N_t) {E} loses at worst {spread_cell(d[c.euler])} points and {R} "
         f"{spread_cell(d[c.rk4])} (mean [min, max])."]
    if x[c.euler]["n"] and x[c.rk4]["n"]:
        s.append(f"On graphs whose steps cross θ's jumps, never judged, {E} loses {spread_cell(x[c.euler])} points and {R} "
                 f"{spread_cell(x[c.rk4])}: such steps integrate a right-hand side that jumps inside a step, so they are no "
                 "finer discretisation of either model.")
    if c.methods is None:
        s.append("VERDICT (training methods): one trained model per method, so no claim about the training methods is "
                 "made; the numbers describe these two models.")
        return paragraphs(s)
    m, th = c.methods, c.thresholds
    stats = (f"{E}'s mean loss minus {R}'s: {m['diff']:+.2f} points, 95% interval [{m['ci95'][0]:+.2f}, "
             f"{m['ci95'][1]:+.2f}], Welch p = {m['p']:.2g}, the training seed as the unit")
    verdict = {
        "contrast": f"the paper's contrast holds across seeds ({stats}; {E} loses ≥ {th['lose_points']:g} on average, "
                    f"{R} < {th['hold_points']:g}).",
        "contradicted": f"the opposite of the paper's contrast across seeds ({stats}: the interval lies below 0).",
        "no contrast": f"the paper's contrast is not shown across seeds ({stats}; it needs the interval above 0, {E}'s "
                       f"mean loss ≥ {th['lose_points']:g} and {R}'s below {th['hold_points']:g}).",
        "blocks do not matter": f"no verdict: in some seed removing the blocks costs a model less than "
                                f"{th['matter_points']:g} points ({stats}).",
    }[c.outcome]
    s.append(f"VERDICT (training methods, {len(c.seeds)} seeds per method, valid graphs only): {verdict}")
    return paragraphs(s)


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
