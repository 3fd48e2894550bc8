"""The page *The paper's claims, checked*: every claim of the seed paper the book quotes, where it stands in the paper,
what the book measured of it and a verdict by a rule stated beside it; and the claims the book does not test, with
why.  Computed when the book is built from what ships with the book (the ``gpu`` preset's pendulum ODE-Nets, image
models, their studies and the training seeds' file; the ``cpu`` preset's four models of integrator x refinement) and
the benchmarks' records; ``{measured-table} paper_claims`` shows :func:`paper_claims_table`.

The verdicts' rules, fixed before the numbers were computed, are in :data:`RULES`; the words are "holds", "holds in
part", "not shown at this scale" (the direction of the paper, without the evidence its claim needs), "does not hold
here" and "not tested".
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Optional

from ..images.runs.shipped import SHIPPED, read_manifest
from ..pendulum import config_for, dip_rows, interchange_matrix, rollout_rows, train_models
from ..pendulum.large_steps import interchange_at_large_steps, large_step_rows, large_step_slopes
from ..images.studies.adaptive_verdict import judge_adaptive
from ..images.studies.factorial import CELLS
from ..images.studies.paired_stats import two_proportions
from ..images.studies.seed_verdict import contrast_over_seeds, robustness_over_seeds, spread
from ..images.studies.shipped_studies import shipped_seeds
from ..images.studies.theta import theta_roughness
from ..images.training.train_state import CHECKPOINT, load_model
from ..runtime.rich_text import Rich, join_rich
from ..runtime.rows import find_row, format_table
from ..runtime.vocabulary import run_label
from .measurements import result
from .paper_claims import PAPER_SENTENCES, PAPER_TABLE1, cheaper_graphs, invariance_claims
from .shipped_tables import shipped_study

__all__ = ["RULES", "PAGES", "claim_rows", "paper_claims_table", "TABLE"]

RULES = {
    "dip": "holds when halving the step makes the Euler-trained model at least 10 times worse and the others at most "
           "twice as bad",
    "interchange": "holds when the midpoint- and RK4-trained models swapped among the higher-order schemes stay within "
                   "a factor 2 of their own error and the Euler-trained one is at least 10 times worse",
    "large_interchange": "holds when the midpoint-trained model run with RK4 is at least 10 times more accurate than with "
                         "midpoint at every step above 2Δt_data",
    "slopes": "holds when the midpoint- and RK4-trained models' fitted slopes at Δt ≥ 10Δt_data are within 0.5 of the "
              "baseline's",
    "contrast": "the manifestation verdict's own rule, over the training seeds (valid graphs only)",
    "sharp_minimum": "holds when one step fewer and twice the steps both cost the Euler-trained model 5 points or more; in "
                     "part when only one of them does",
    "rk4_as_euler": "holds when Euler at the trained N_t costs the RK4-trained model at most 1 point; in part when some "
                    "finer Euler graph does",
    "cheaper": "holds when the same weights on the coarsest graph with at least a third of the trained steps (the paper's "
               "11 of 32) cost at most 1 point; in part when only a finer graph does",
    "training_time": "holds when refinement's measured speed-up is at least the paper's",
    "twice": "holds when the refined RK4 model trains in less than three times the Euler model's time",
    "quality": "holds when the refined model is more accurate with a 95% interval above 0",
    "smooth": "holds when the RK4-trained model's θ(t) is smoother than the Euler-trained one's in every block (the "
              "cpu preset's four models say whether the integrator or refinement makes it so)",
    "robust": "the robustness chapter's primary test, over the training seeds: holds when supported, does not hold when "
              "contradicted, not shown otherwise",
    "accuracy": "holds when the RK4-trained models' mean accuracy over the seeds is below the Euler-trained ones'",
}
"""Each verdict's rule, in words, shown on the page."""


PAGES = {"resnet_euler": "Is a ResNet a forward-Euler integrator?", "continuousnet": "ContinuousNet",
         "refinement_training": "Refinement training", "manifestation_invariance": "Manifestation invariance",
         "robustness": "Beyond the paper: robustness and quantization", "adaptive": "Beyond the paper II: adaptive steps",
         "paper_claims": "this page", "gpu": "On a GPU", "library": "The library"}
"""The book's page of each claim, by its title (``tests/test_paper_claims.py`` holds them to the pages' headings)."""


def _pendulum():
    cfg = config_for("gpu")
    models = train_models(cfg, progress=False)
    rows = rollout_rows(models, cfg.eval_schemes, (0.5, 1.0), cfg)
    large = large_step_rows(models, cfg)
    return ({r["trained"]: r["ratio"] for r in dip_rows(rows)}, interchange_matrix(rows, 1.0),
            interchange_at_large_steps(large), large_step_slopes(large))


def _roughness(preset: str, run: str) -> Optional[list]:
    folder = SHIPPED / f"{preset}-{run}"
    if not (folder / CHECKPOINT).is_file():
        return None
    model, _ = load_model(folder, "cpu")
    return [r["roughness"] for r in theta_roughness(model)]


def _x(v: float) -> str:
    return f"{v:.2f}×" if v < 10 else f"{v:,.0f}×"


def _signed(v: float, digits: int = 2) -> str:
    """A signed number with a real minus sign."""
    return f"{v:+.{digits}f}".replace("-", "−")


def _pendulum_claims(add) -> None:
    """Figures 2 and 3: the pendulum's ODE-Nets."""
    dip, swap, large, slopes = _pendulum()
    others = [dip[s] for s in dip if s != "euler"]
    add("an Euler-trained ODE-Net gets worse when its step is halved (the dip); midpoint- and RK4-trained ones do not",
        "Figure 2", "resnet_euler", f"halving the step: Euler-trained {_x(dip['euler'])} the error, the others "
        f"{_x(min(others))} to {_x(max(others))}",
        "holds" if dip["euler"] >= 10 and max(others) <= 2 else "does not hold here")
    hi = [r["ratio_to_own"] for r in swap if "euler" not in (r["trained"], r["evaluated"]) and r["trained"] != r["evaluated"]]
    eu = [r["ratio_to_own"] for r in swap if r["trained"] == "euler" and r["evaluated"] != "euler"]
    add("schemes can be swapped after training for the midpoint- and RK4-trained models, not for the Euler-trained one",
        "Figure 3b", "resnet_euler", f"swapped: {_x(min(hi))} to {_x(max(hi))} their own error; the Euler-trained model "
        f"{_x(min(eu))} or more", "holds" if max(hi) <= 2 and min(hi) >= 0.5 and min(eu) >= 10 else "does not hold here")
    ratios = [r["ratio"] for r in large]
    orders = [-math.log10(r) for r in ratios]
    add("the midpoint-trained model run with RK4 improves \u201cby orders of magnitude for Δt > 2Δt_data\u201d",
        "on Figure 3", "paper_claims", f"at Δt = {', '.join(format(r['h'], 'g') for r in large)} × Δt_data: "
        f"{min(orders):.1f} to {max(orders):.1f} orders of magnitude",
        "holds" if max(ratios) <= 0.1 else "holds in part" if min(ratios) <= 0.1 else "does not hold here")
    by = {r["trained"]: r for r in slopes}
    hi_slopes = [by[s] for s in ("midpoint", "rk4_38") if s in by]
    add("at large steps the models' error curves take the slopes of the baseline (each scheme on the true rate)",
        "Figure 3a", "paper_claims", "; ".join(f"{s['trained']}: {s['slope']:.2f} against {s['baseline']:.2f}"
                                               for s in slopes) + " (Δt = 10, 20, 25 × Δt_data; Euler's baseline "
        "diverges there, so its slope is no order)",
        "holds" if all(abs(s["difference"]) <= 0.5 for s in hi_slopes) else "does not hold here")


def _manifestation_claims(add, sweeps: dict) -> None:
    """Figure 4, two sentences on it, and Table 1's cheaper graphs: the image models' sweeps over the seeds."""
    c = contrast_over_seeds(sweeps)
    d = {run: spread(v) for run, v in c.drops.items()}
    same_way = all(e > r for e, r in zip(c.drops["euler_fixed"], c.drops["rk4_refined"]))
    add("an RK4-trained, refined ContinuousNet keeps its accuracy on other graphs; an Euler-trained one does not",
        "Figure 4", "manifestation_invariance",
        f"worst loss on valid graphs over {len(c.seeds)} seeds: Euler-trained {d['euler_fixed']['min']:.1f} to "
        f"{d['euler_fixed']['max']:.1f} points, RK4-trained {d['rk4_refined']['min']:.2f} to "
        f"{d['rk4_refined']['max']:.2f}" + (f"; Welch p = {c.methods['p']:.2g}" if c.methods else ""),
        "holds" if c.outcome == "contrast" else "not shown at this scale" if same_way else "does not hold here")
    claims = {(r["run"], r["n_steps"]): r["loss"]["mean"] for r in invariance_claims(sweeps)}
    nt = find_row(next(iter(sweeps.values()))["euler_fixed"], kind="trained")["n_steps"]
    fewer, more = claims.get(("euler_fixed", nt - 1)), claims.get(("euler_fixed", 2 * nt))
    q = PAPER_SENTENCES["euler_sharp_minimum"]
    add(f"\u201c{q['quote']}\u201d", q["where"], "manifestation_invariance",
        f"Euler at N_t = {nt - 1}: {_signed(-fewer, 1)} points, at N_t = {2 * nt}: {_signed(-more)} (mean over the seeds)",
        "holds" if fewer >= 5 and more >= 5 else "holds in part" if max(fewer, more) >= 5 else "does not hold here")
    q = PAPER_SENTENCES["rk4_as_euler"]
    eulers = sorted((n, loss) for (run, n), loss in claims.items() if run == "rk4_refined" and n >= nt)
    own = dict(eulers).get(nt)
    fine = next(((n, loss) for n, loss in eulers if loss <= 1), None)
    add(f"\u201c{q['quote']}\u201d ({q['accuracy']:.2f}% at {q['units']})", q["where"], "manifestation_invariance",
        f"Euler at N_t = {nt}: {_signed(-own)} points" + (f"; at N_t = {fine[0]}: {_signed(-fine[1])}" if fine else ""),
        "holds" if own is not None and own <= 1 else "holds in part" if fine else "does not hold here")
    cheap = {r["graph"]: r for r in cheaper_graphs(sweeps) if r["source"] == "here"}
    p11 = next(r for r in PAPER_TABLE1 if r["key"] == "same_11")
    best = next(r for r in PAPER_TABLE1 if r["key"] == "rk4_best")
    losses = {}
    for k in range(1, nt):
        found = [cheap[g]["delta"]["mean"] for g in (f"{s} {'-'.join([str(k)] * 3)}" for s in ("rk4_38", "rk4_classic"))
                 if g in cheap]
        if found:
            losses[k] = max(found)  # the better of the two fourth-order schemes
    coarsest = min(k for k in losses if 3 * k >= nt)
    add("the same trained weights on fewer steps lose little (11 of 32 steps: "
        f"{_signed(p11['accuracy'] - best['accuracy'])} points from the best instance)", "Table 1",
        "manifestation_invariance", "; ".join(f"{k} of {nt} steps: {_signed(v, 1)} points" for k, v in
                                              sorted(losses.items(), reverse=True)) + " (the better RK4, mean of the seeds)",
        "holds" if losses[coarsest] >= -1 else "holds in part" if any(v >= -1 for v in losses.values())
        else "does not hold here")


def _training_claims(add, root: Optional[Path]) -> None:
    """What refinement does to training: its time, the RK4 model's time against Euler's, its accuracy."""
    t = PAPER_SENTENCES["training_time"]
    bench = result("bench_refinement.json", root)
    paper_speedup = t["minutes_fixed"] / t["minutes_refined"]
    add(f"refinement shortens training (RK4: {t['minutes_fixed']:,} min at fixed depth, {t['minutes_refined']} refined, "
        f"{paper_speedup:.2f}×)", t["where"], "refinement_training",
        f"{bench['speedup']:.2f}× (ideal {bench['ideal']:.2f}×), the cpu model on a 2-core CPU",
        "holds" if bench["speedup"] >= paper_speedup else "does not hold here")
    secs = {run: read_manifest(SHIPPED / f"gpu-{run}")["train_seconds"] for run in ("rk4_refined", "euler_fixed")}
    ratio = secs["rk4_refined"] / secs["euler_fixed"]
    add(f"refined RK4 trains \u201c{t['quote']}\u201d as long as Euler", t["where"], "refinement_training",
        f"{ratio:.1f}× on an H100 (seed 0)", "holds" if ratio < 3 else "does not hold here")
    n = bench["settings"]["n_test"]
    diff = two_proportions(bench["runs"]["fixed"]["final_test_acc"], n, bench["runs"]["refined"]["final_test_acc"], n)
    add("refinement \u201cimproves model quality\u201d", "abstract", "refinement_training",
        f"refined minus fixed depth: {_signed(100 * diff['diff'], 1)} points, 95% interval "
        f"[{_signed(100 * diff['ci95'][0], 1)}, {_signed(100 * diff['ci95'][1], 1)}] ({n} images, one seed each)",
        "holds" if diff["ci95"][0] > 0 else "not shown at this scale" if diff["diff"] > 0 else "does not hold here")


def _weight_claims(add) -> None:
    """Figure 8: how smooth θ(t) is, in the gpu models and the cpu preset's four models of integrator x refinement."""
    rk, eu = _roughness("gpu", "rk4_refined"), _roughness("gpu", "euler_fixed")
    cpu = {run: _roughness("cpu", run) for run in CELLS.values()}
    mean = {run: sum(v) / len(v) for run, v in cpu.items() if v}
    cells = "; ".join(f"{run_label(run)} {v:.2f}" for run, v in mean.items())
    which = ""
    if len(mean) == len(CELLS):
        refinement = (mean["euler_fixed"] - mean["euler_refined"] + mean["rk4_fixed"] - mean["rk4_refined"]) / 2
        integrator = (mean["euler_fixed"] - mean["rk4_fixed"] + mean["euler_refined"] - mean["rk4_refined"]) / 2
        which = (f": refinement accounts for {refinement:.2f} of the difference, the integrator for {integrator:.2f}"
                 f" ({'refinement' if abs(refinement) > abs(integrator) else 'the integrator'} makes θ(t) smooth)")
    add("RK4-trained weights θ(t) are smoother than Euler-trained ones", "Figure 8", "paper_claims",
        f"mean relative jump between pieces: RK4-trained {sum(rk) / len(rk):.2f}, Euler-trained {sum(eu) / len(eu):.2f}"
        + (f"; the cpu preset's models: {cells}{which}" if cells else ""),
        "holds" if all(a < b for a, b in zip(rk, eu)) else "does not hold here")


def _beyond_claims(add, seeds: dict) -> None:
    """What the paper claims without measuring, its accuracies, and what it leaves to future work."""
    robust = robustness_over_seeds({s: r["robustness"] for s, r in seeds.items()})
    primary = next(row for row in robust.rows if row["role"] == "primary")
    add("ContinuousNets \u201chave improved robustness properties\u201d (claimed, not measured)", "introduction",
        "robustness", f"θ̂ in 4 bits, Euler's drop minus RK4's: {_signed(primary['diff'])} points, 95% interval "
        f"[{_signed(primary['ci95'][0])}, {_signed(primary['ci95'][1])}] over {len(robust.seeds)} seeds",
        {"supported": "holds", "contradicted": "does not hold here"}.get(robust.outcome, "not shown at this scale"))
    acc = {run: spread([100 * r["runs"][run]["final_test_acc"] for r in seeds.values()]) for run in ("rk4_refined",
                                                                                                  "euler_fixed")}
    p_rk4, p_eu = (next(r for r in PAPER_TABLE1 if r["key"] == k)["accuracy"] for k in ("rk4", "euler"))
    add(f"RK4 slightly less accurate than Euler ({p_rk4:.2f}% against {p_eu:.2f}%)", "Table 1", "continuousnet",
        f"RK4-trained {acc['rk4_refined']['mean']:.1f}%, Euler-trained {acc['euler_fixed']['mean']:.1f}% (mean of "
        f"{acc['rk4_refined']['n']} seeds)", "holds" if acc["rk4_refined"]["mean"] < acc["euler_fixed"]["mean"]
        else "does not hold here")
    a = judge_adaptive(shipped_study("gpu", "adaptive-"), "rk4_refined", "euler_fixed")
    add("adaptive steps are \u201cleft for future work\u201d", "conclusion", "adaptive",
        f"the error-controlled solver classes the RK4-trained model {a.classes['rk4_refined'].klass} and the "
        f"Euler-trained one {a.classes['euler_fixed'].klass} (one model per method)", "tested here")


def _untested(add) -> None:
    """The claims the book does not test, each with why."""
    untested = [
        ("the full-scale accuracies (93.84% and 93.57%)", "Table 1", "gpu",
         "the book's models are 11 to 12 points lower (16 epochs, 4-4-4); a wider probe reached about 90%"),
        ("the adjoint method needs N_t ≥ 3M", "its appendix", "library",
         "the book backpropagates through the graph and has no adjoint"),
        ("ContinuousNets trained without skip-init", "its experiments", "continuousnet",
         "every model of the book uses skip-init; no run without it was made"),
        ("CIFAR-100 and Tiny-ImageNet", "Table 1 and its experiments", "gpu",
         "no model of the book trains on them (the `paper` preset defines a CIFAR-100 run, never trained)"),
        ("comparisons with other networks", "its experiments", "library", "the book trains ContinuousNets only"),
    ]
    for claim, where, chapter, why in untested:
        add(claim, where, chapter, why, "not tested")


def claim_rows(root: Optional[Path] = None) -> list:
    """One row per claim: ``claim`` (the paper's words or a summary of them), ``where``, ``chapter`` (the book's page
    that measures it), ``finding`` (the book's numbers) and ``verdict``."""
    rows = []

    def add(claim, where, chapter, finding, verdict):
        rows.append({"claim": claim, "where": where, "chapter": chapter, "finding": finding, "verdict": verdict})

    seeds = {r["seed"]: r for r in shipped_seeds("gpu")}
    _pendulum_claims(add)
    _manifestation_claims(add, {s: r["sweeps"] for s, r in seeds.items()})
    _training_claims(add, root)
    _weight_claims(add)
    _beyond_claims(add, seeds)
    _untested(add)
    return rows


def paper_claims_table(root: Optional[Path] = None) -> Rich:
    """:func:`claim_rows` as the page's table, and the rule behind each verdict (:data:`RULES`) under it."""
    # the verdict beside the claim; on a phone a block per claim, each cell under its column's name (a row of
    # sentences was 2,857 px wide there)
    claims = format_table(claim_rows(root), [("the paper says", "claim", "{}"), ("verdict", "verdict", "{}"),
                                             ("the book measured", "finding", "{}"), ("where", "where", "{}"),
                                             ("page", lambda r: PAGES[r["chapter"]], "{}")], left=5,
                          key=("verdict", "the book measured"), cards=True,
                          note="the gpu preset's models, studies and three training seeds as they ship (the pendulum's "
                               "ODE-Nets included), the cpu preset's four models of integrator × refinement, and the "
                               "refinement benchmark's record (benchmarks/results/bench_refinement.json)")
    rules = format_table([{"claim": k.replace("_", " "), "rule": v} for k, v in RULES.items()],
                         [("claim", "claim", "{}"), ("the verdict's rule, fixed before its numbers", "rule", "{}")], left=2,
                         key=("the verdict's rule, fixed before its numbers",), cards=True)
    return join_rich([claims, rules], sep="\n\n")


TABLE: dict[str, Callable[[Optional[Path]], Rich]] = {"paper_claims": paper_claims_table}
"""The page's table, by the name ``{measured-table}`` uses."""
