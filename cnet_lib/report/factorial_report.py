"""Integrator x refinement in a table and sentences (:func:`factorial_table`, :func:`word_factorial`); the numbers are
:mod:`cnet_lib.images.studies.factorial`'s."""
from __future__ import annotations

from ..images.studies.factorial import CELLS, Factorial
from ..images.studies.paired_stats import spread
from ..runtime.rich_text import Rich, paragraphs
from ..runtime.rows import format_table, seeds_phrase, spread_cell
from ..runtime.vocabulary import run_label, scheme_label

__all__ = ["factorial_table", "word_factorial"]


def factorial_table(fx: Factorial) -> Rich:
    """One row per cell: its integrator and refinement, its accuracy on its own graph, what its blocks are worth, its
    worst loss on its valid graphs and on graphs that cross θ's jumps (mean [min, max] over the seeds)."""
    rows = []
    for (scheme, refinement), run in CELLS.items():
        c = fx.cells[run]
        rows.append({"model": run_label(run), "integrator": scheme_label(scheme), "refinement": refinement,
                     **{k: spread([v for v in c[k] if v == v]) for k in ("own", "gap", "valid", "straddles")}})
    images = f" on {fx.n_images:,} held-out images" if fx.n_images else ""
    return format_table(rows, [("integrator", "integrator", "{}"), ("refinement", "refinement", "{}"),
                               ("own graph (%)", lambda r: spread_cell(r["own"]), "{}"),
                               ("blocks worth", lambda r: spread_cell(r["gap"]), "{}"),
                               ("worst loss, valid graphs", lambda r: spread_cell(r["valid"]), "{}"),
                               ("worst loss, across θ's jumps", lambda r: spread_cell(r["straddles"]), "{}")], left=2,
                        note=f"the {fx.preset} preset{images}, {seeds_phrase(fx.seeds).replace('method', 'cell')}; "
                             "losses in points below each model's own graph; a dash: not trained in this preset")


def word_factorial(fx: Factorial) -> Rich:
    """What the 2 x 2 shows: each effect on the worst valid loss, which factor is larger, and how much the seeds can
    tell (nothing about the factors with one seed per cell)."""
    if not fx.complete:
        names = " and ".join(run_label(r) for r in fx.missing)
        return paragraphs([f"The {fx.preset} preset's {names} are not trained yet, so the integrator and refinement "
                           "cannot be told apart in this preset."])
    e = {name: eff["spread"] for name, eff in fx.effects.items()}
    one = len(fx.seeds) == 1
    main = spread_cell(e["main runs' contrast"])
    s = [f"The {fx.asked} preset's control runs are not trained yet, so these are the {fx.preset} preset's four "
         "models."] if fx.asked else []
    s += [f"On the worst valid graph, the integrator's effect (Euler's loss minus RK4's) is "
         f"{spread_cell(e['integrator, refined'])} points among refined models and "
         f"{spread_cell(e['integrator, fixed depth'])} among fixed-depth ones; refinement's effect (fixed depth minus "
         f"refined) is {spread_cell(e['refinement, Euler'])} points for Euler and {spread_cell(e['refinement, RK4'])} "
         f"for RK4. The main runs' contrast, {main} points, is the sum of one of each."]
    integrator = (e["integrator, refined"]["mean"] + e["integrator, fixed depth"]["mean"]) / 2
    refinement = (e["refinement, Euler"]["mean"] + e["refinement, RK4"]["mean"]) / 2
    larger = "the integrator" if abs(integrator) >= abs(refinement) else "refinement"
    s.append(f"Averaged over the other factor, the integrator accounts for {integrator:+.1f} points and refinement for "
             f"{refinement:+.1f}: in these models {larger} carries more of the contrast.")
    if one:
        s.append("One trained model per cell: an exploratory result about four models, not a claim about integrators "
                 "or refinement (that takes several training seeds per cell).")
    else:
        factors = {name: eff["test"] for name, eff in fx.effects.items() if name != "main runs' contrast"}
        tests = [f"{name} {t['diff']:+.1f} [{t['ci95'][0]:+.1f}, {t['ci95'][1]:+.1f}]" for name, t in factors.items()]
        s.append(f"Over {seeds_phrase(fx.seeds).replace('method', 'cell')}, each effect with its 95% interval "
                 f"(Welch, the training seed as the unit): {'; '.join(tests)} points.")
        held = [name for name, t in factors.items() if t["p_holm"] < 0.05]
        if held:
            s.append(f"Tested together (Holm's correction over the four effects), {len(held)} of the four "
                     f"{'holds' if len(held) == 1 else 'hold'} at the 5% level: {'; '.join(held)}.")
        else:
            best = min(factors, key=lambda n: factors[n]["p"])
            s.append(f"Tested together (Holm's correction over the four effects), none holds at the 5% level (the "
                     f"smallest, {best}: p = {factors[best]['p']:.3f}, {factors[best]['p_holm']:.2f} corrected): "
                     "which factor carries the contrast is what these models show, not an established effect.")
    return paragraphs(s)

