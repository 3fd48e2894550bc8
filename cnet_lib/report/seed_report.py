"""The manifestation contrast over training seeds in a table and sentences (:func:`contrast_over_seeds_table`,
:func:`word_contrast_over_seeds`) of :mod:`cnet_lib.images.studies.seed_verdict`, which computes them."""
from __future__ import annotations

from ..images.studies.paired_stats import spread
from ..images.studies.seed_verdict import SeedContrast
from ..runtime.rich_text import Rich, paragraphs
from ..runtime.rows import format_table, seeds_phrase, spread_cell
from ..runtime.vocabulary import run_label

__all__ = ["contrast_over_seeds_table", "word_contrast_over_seeds"]


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
