"""The page *The paper's claims, checked*: every claim of the seed paper the book quotes, where it stands in the paper,
what the book measured of it and a verdict by a rule stated beside it; and the claims the book does not test, with
why.  Computed when the book is built from what ships with the book (the ``gpu`` preset's pendulum ODE-Nets, image
models, their studies and the training seeds' file; the ``cpu`` preset's four models of integrator x refinement) and
the benchmarks' records; ``{measured-table} paper_claims`` shows :func:`paper_claims_table`.

Each tested claim has a rule (:data:`RULES`): its words, shown on the page, and a function of the claim's numbers that
returns the verdict.  :func:`claim_rows` gives every row its numbers (``numbers``) and the verdict the rule returns for
them, so the verdict follows from the numbers and never from the wording; ``tests/test_paper_claims.py`` restates
every rule independently and holds each row to it, and feeds each rule numbers on either side of its thresholds.  The
verdict words are "holds", "holds in part", "not shown at this scale", "does not hold here" (the book's numbers
meet the rule's opposite, or no part of the claim), "tested here" (what the paper leaves to future work) and "not
tested".  "Keeps its accuracy" is judged by one threshold throughout the book,
:data:`cnet_lib.studies.stats.KEEP_POINTS`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, Optional

from ..images.runs.shipped import SHIPPED, read_manifest
from ..images.runs.theta_record import theta_roughness
from ..images.training.train_state import CHECKPOINT, load_model, read_results
from ..studies.pendulum.study import (dip_rows, interchange_at_large_steps, interchange_matrix, large_step_rows,
    large_step_slopes, rollout_rows)
from ..studies.refinement.study import recorded_timing
from ..runtime.rich_text import Rich, find_row, format_table, join_rich, minus_sign, p_value, run_label
from ..studies.manifestation import CELLS, over_seeds
from ..studies.robustness import PRIMARY, robustness_over_seeds
from ..studies.runner import shipped_seeds
from ..studies.stats import KEEP_POINTS, spread, two_proportions, welch
from ..pendulum import config_for, train_models
from ..studies import adaptive, manifestation_factorial as planned
from .measurements import result, shipped_study
from .paper_claims import (PAPER_SENTENCES, PAPER_TABLE1, cheaper_graphs, invariance_claims, paper_schedule,
    schedule_ideal)

__all__ = ["Rule", "RULES", "VERDICTS", "EFFICIENCY", "PAGES", "claim_rows", "paper_claims_table", "TABLE"]

VERDICTS = ("holds", "holds in part", "not shown at this scale", "does not hold here", "tested here", "not tested")
"""The page's verdict words."""

EFFICIENCY = 0.95
"""Refinement "shortens training" as its schedule predicts when its measured speed-up reaches this share of its
schedule's ideal (the library's goal for the refinement benchmark, *Measurements*)."""

K = KEEP_POINTS


@dataclass(frozen=True)
class Rule:
    """A verdict's rule: ``words`` (shown on the page, every verdict it can give said), ``verdict`` (the numbers of a
    claim, as keywords, to a verdict word) and ``fixed`` (when the rule was set, and whether before its numbers)."""

    words: str
    verdict: Callable[..., str]
    fixed: str


def _parts(n_met: int, n_parts: int) -> str:
    return "holds" if n_met == n_parts else "holds in part" if n_met else "does not hold here"


def _interval(low: float, high: float, for_claim_above: bool = True) -> str:
    """A claim that a difference is above 0 (``for_claim_above``), by its 95% interval."""
    if not for_claim_above:
        low, high = -high, -low
    return "holds" if low > 0 else "does not hold here" if high < 0 else "not shown at this scale"


def _dip(euler: float, others: list) -> str:
    return _parts((euler >= 10) + (max(others) <= 2), 2)


def _interchange(higher: list, euler: list) -> str:
    return _parts(all(0.5 <= r <= 2 for r in higher) + (min(euler) >= 10), 2)


def _large_interchange(ratios: dict) -> str:
    return _parts(sum(r <= 0.1 for r in ratios.values()), len(ratios))


def _slopes(differences: dict) -> str:
    return _parts(sum(abs(d) <= 0.5 for d in differences.values()), len(differences))


def _contrast(low: Optional[float], high: Optional[float], euler_mean: float, rk4_mean: float,
              blocks_matter: bool) -> str:
    if low is None or not blocks_matter:
        return "not shown at this scale"
    if low > 0 and euler_mean >= K and rk4_mean < K:
        return "holds"
    return "does not hold here" if high < 0 else "not shown at this scale"


def _sharp_minimum(fewer: float, more: float) -> str:
    return _parts((fewer >= K) + (more >= K), 2)


def _rk4_as_euler(own: float, finer: list) -> str:
    return "holds" if own < K else "holds in part" if any(v < K for v in finer) else "does not hold here"


def _cheaper(losses: dict, trained: int) -> str:
    coarsest = min(k for k in losses if 3 * k >= trained)
    if losses[coarsest] < K:
        return "holds"
    return "holds in part" if any(v < K for k, v in losses.items() if k > coarsest) else "does not hold here"


def _training_time(measured: list) -> str:
    if any(m["speedup"] <= 1 for m in measured):
        return "does not hold here"
    return "holds" if all(m["speedup"] >= EFFICIENCY * m["ideal"] for m in measured) else "holds in part"


def _twice(ratio: float) -> str:
    return "holds" if ratio < 3 else "does not hold here"


def _smooth(rk4: list, euler: list) -> str:
    return _parts(sum(a < b for a, b in zip(rk4, euler)), len(rk4))


def _robust(diff: float, low: float, high: float, min_effect: float) -> str:
    if low > 0 and diff >= min_effect:
        return "holds"
    return "does not hold here" if high < 0 and diff <= -min_effect else "not shown at this scale"


def _input_stability(rows: list) -> str:
    better = sum(r["significant"] and r["diff"] > 0 for r in rows)
    worse = sum(r["significant"] and r["diff"] < 0 for r in rows)
    if better == len(rows):
        return "holds"
    if better:
        return "holds in part"
    return "does not hold here" if worse else "not shown at this scale"


def _inductive_bias(estimate: float, p_holm: float) -> str:
    if p_holm >= planned.ALPHA:
        return "not shown at this scale"
    return "holds" if estimate > 0 else "does not hold here"


BEFORE = "2026-11-28, with the page"
REVISED = "2026-11-29 (issue 51), after its numbers were seen"

RULES = {
    "dip": Rule("holds when halving the step makes the Euler-trained model at least 10 times worse and leaves the others "
                "at most twice as bad; in part when one of the two; does not hold otherwise", _dip, BEFORE),
    "interchange": Rule("holds when the midpoint- and RK4-trained models swapped among the higher-order schemes stay "
                        "within a factor 2 of their own error and the Euler-trained one is at least 10 times worse; in "
                        "part when one of the two; does not hold otherwise", _interchange, BEFORE),
    "large_interchange": Rule("holds when the midpoint-trained model run with RK4 is at least 10 times more accurate "
                              "than with midpoint at every step above 2Δt_data that the grid admits (2.5 to 25 Δt_data); "
                              "in part when at some; does not hold at none", _large_interchange, REVISED),
    "slopes": Rule("holds when the midpoint- and RK4-trained models' fitted slopes at Δt ≥ 10Δt_data are each within "
                   "0.5 of the baseline's; in part when one is; does not hold otherwise", _slopes, BEFORE),
    "contrast": Rule(f"over the training seeds, on valid graphs: holds when Welch's 95% interval of the Euler-trained "
                     f"models' worst loss minus the RK4-trained ones' lies above 0, the Euler-trained models lose at "
                     f"least {K:g} points on average and the RK4-trained ones less (the book's one threshold for a model "
                     f"that keeps its accuracy); does not hold when the interval lies below 0; not shown "
                     f"otherwise", _contrast, REVISED),
    "sharp_minimum": Rule(f"holds when one step fewer and twice the steps each cost the Euler-trained model at least "
                          f"{K:g} points (it does not keep its accuracy on either side); in part when one of them does; "
                          f"does not hold otherwise", _sharp_minimum, REVISED),
    "rk4_as_euler": Rule(f"holds when Euler at the trained N_t costs the RK4-trained model less than {K:g} points; in "
                         f"part when some finer Euler graph whose steps lie within θ's pieces does; does not hold "
                         f"otherwise", _rk4_as_euler, REVISED),
    "cheaper": Rule(f"with the paper's scheme, RK4-3/8: holds when the same weights on the coarsest graph with at least "
                    f"a third of the trained steps (the paper's 11 of 32) cost less than {K:g} points; in part when only "
                    f"a finer graph does; does not hold otherwise", _cheaper, REVISED),
    "training_time": Rule(f"holds when every measured speed-up of refinement reaches {EFFICIENCY:.0%} of its own "
                          f"schedule's ideal (epochs × final N_t / Σ N_t; the paper's: 1,053/608 min against its "
                          f"schedule's ideal); in part when refinement is faster but short of that; does not hold when "
                          f"it is not faster", _training_time, REVISED),
    "twice": Rule("holds when the refined RK4 model trains in less than three times the Euler model's time (nearer "
                  "twice than four times); does not hold otherwise", _twice, BEFORE),
    "quality": Rule("holds when refined minus fixed depth is above 0 with its whole 95% interval; does not hold when "
                    "the interval lies below 0; not shown otherwise", lambda low, high: _interval(low, high), REVISED),
    "smooth": Rule("holds when the RK4-trained, refined model's θ(t) jumps less between neighbouring pieces than the "
                   "Euler-trained, fixed-depth model's in every block; in part in some; does not hold in none (the cpu "
                   "preset's four models say which of the two makes it so)", _smooth, REVISED),
    "robust": Rule(f"the robustness chapter's primary test ({PRIMARY.name}, Euler's drop minus RK4's) over the training "
                   f"seeds: holds when its 95% interval lies above 0 and the difference is at least {PRIMARY.min_effect:g} "
                   f"point; does not hold when the interval lies below 0 and the difference is at most "
                   f"−{PRIMARY.min_effect:g}; not shown otherwise", _robust, BEFORE),
    "input_stability": Rule("the robustness chapter's input-noise rows over the training seeds (Euler's drop minus "
                            "RK4's, Holm within the family): holds when every row is significant and above 0; in part "
                            "when some are; does not hold when none is and some row is significant below 0; not shown "
                            "otherwise", _input_stability, REVISED),
    "inductive_bias": Rule("the planned manifestation study's test of the integrator (H_I: Euler-trained models lose more "
                           "on the plan's three valid graphs than RK4-trained ones, averaged over refinement; a "
                           "Welch-type contrast, Holm over H_I and H_R): holds when its Holm-adjusted p is below 0.05 "
                           "with Euler-trained models losing more; does not hold when it is below 0.05 the other way; "
                           "not shown otherwise", _inductive_bias,
                           "2026-11-29, in the study's analysis plan, before its first training run"),
    "accuracy": Rule("holds when Welch's 95% interval of the Euler-trained models' mean accuracy minus the RK4-trained "
                     "ones' over the training seeds lies above 0; does not hold when it lies below 0; not shown "
                     "otherwise", lambda low, high: _interval(low, high), REVISED),
}
"""Each tested claim's rule: words (shown on the page), the verdict as a function of the claim's numbers, and when it
was set."""


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
    return minus_sign(f"{v:+.{digits}f}")


def _paper(key: str) -> dict:
    return next(r for r in PAPER_TABLE1 if r["key"] == key)


def _pendulum_claims(add) -> None:
    """Figures 3 and 4 of the paper (Sec. 3.3): the pendulum's ODE-Nets."""
    dip, swap, large, slopes = _pendulum()
    others = [dip[s] for s in dip if s != "euler"]
    add("an Euler-trained ODE-Net gets worse when its step is halved (the dip); midpoint- and RK4-trained ones do not",
        "Sec. 3.3, Figures 3 and 4(a)", "resnet_euler", f"halving the step: Euler-trained {_x(dip['euler'])} the error, "
        f"the others {_x(min(others))} to {_x(max(others))}", "dip", euler=dip["euler"], others=others)
    hi = [r["ratio_to_own"] for r in swap if "euler" not in (r["trained"], r["evaluated"]) and r["trained"] != r["evaluated"]]
    eu = [r["ratio_to_own"] for r in swap if r["trained"] == "euler" and r["evaluated"] != "euler"]
    add("schemes can be swapped after training for the midpoint- and RK4-trained models, not for the Euler-trained one",
        "Sec. 3.3, Figure 4(b)", "resnet_euler", f"swapped: {_x(min(hi))} to {_x(max(hi))} their own error; the "
        f"Euler-trained model {_x(min(eu))} or more", "interchange", higher=hi, euler=eu)
    ratios = {r["h"]: r["ratio"] for r in large}
    add("the midpoint-trained model run with RK4: the error \u201cis improved by orders of magnitude for Δt > 2Δt_data\u201d",
        "Sec. 3.3, on Figure 4(b)", "paper_claims", "RK4's error over midpoint's own, at Δt = h·Δt_data: "
        + ", ".join(f"h = {h:g}: {1 / r:,.1f}× smaller" for h, r in ratios.items()), "large_interchange", ratios=ratios)
    by = {r["trained"]: r for r in slopes}
    hi_slopes = {s: by[s]["difference"] for s in ("midpoint", "rk4_38") if s in by}
    add("\u201cfor large Δt \u2273 10, the error of the ODE-Nets behaves similar to their respective integrators, i.e., "
        "their slopes match the baseline slopes\u201d", "Sec. 3.3, on Figure 4(a)", "paper_claims",
        "; ".join(f"{s['trained']}: {s['slope']:.2f} against {s['baseline']:.2f}" for s in slopes)
        + " (Δt = 10, 20, 25 × Δt_data, the paper's Δt in units of Δt_data; Euler's baseline diverges there, so its "
          "slope is no order)", "slopes", differences=hi_slopes)


def _manifestation_claims(add, sweeps: dict) -> None:
    """Figure 9 and two sentences on it (Sec. 5.3), and Table 1(a)'s cheaper graphs: the image models' sweeps over the
    seeds."""
    c = over_seeds(sweeps)
    d = {run: spread(v) for run, v in c.drops.items()}
    ci = c.methods["ci95"] if c.methods else (None, None)
    add("an RK4-trained, refined ContinuousNet keeps its accuracy on other graphs; an Euler-trained one does not",
        "Sec. 5.3, Figure 9", "manifestation_invariance",
        f"worst loss on valid graphs over {len(c.seeds)} seeds: Euler-trained {d['euler_fixed']['min']:.1f} to "
        f"{d['euler_fixed']['max']:.1f} points (mean {d['euler_fixed']['mean']:.1f}), RK4-trained "
        f"{d['rk4_refined']['min']:.2f} to {d['rk4_refined']['max']:.2f}"
        + (f"; Euler's minus RK4's {_signed(c.methods['diff'])}, 95% interval [{_signed(ci[0])}, {_signed(ci[1])}], "
           f"{p_value(c.methods['p'], 'Welch p')}" if c.methods else ""),
        "contrast", low=ci[0], high=ci[1], euler_mean=d["euler_fixed"]["mean"], rk4_mean=d["rk4_refined"]["mean"],
        blocks_matter=c.blocks_matter)
    claims = {(r["run"], r["n_steps"]): r["loss"]["mean"] for r in invariance_claims(sweeps)}
    nt = find_row(next(iter(sweeps.values()))["euler_fixed"], kind="trained")["n_steps"]
    fewer, more = claims.get(("euler_fixed", nt - 1)), claims.get(("euler_fixed", 2 * nt))
    q = PAPER_SENTENCES["euler_sharp_minimum"]
    add(f"\u201c{q['quote']}\u201d", q["where"], "manifestation_invariance",
        f"Euler at N_t = {nt - 1}: {_signed(-fewer, 1)} points, at N_t = {2 * nt}: {_signed(-more)} (mean over the seeds)",
        "sharp_minimum", fewer=fewer, more=more)
    q = PAPER_SENTENCES["rk4_as_euler"]
    eulers = sorted((n, loss) for (run, n), loss in claims.items() if run == "rk4_refined" and n >= nt)
    own = dict(eulers).get(nt)
    finer = [(n, loss) for n, loss in eulers if n > nt and n % nt == 0]  # steps within θ's pieces (M = N_t)
    add(f"\u201c{q['quote']}\u201d ({q['accuracy']:.2f}% at {q['units']})", q["where"], "manifestation_invariance",
        f"Euler at N_t = {nt}: {_signed(-own)} points; " + ", ".join(f"at N_t = {n}: {_signed(-v)}" for n, v in finer),
        "rk4_as_euler", own=own, finer=[v for _, v in finer])
    cheap = {r["graph"]: r for r in cheaper_graphs(sweeps) if r["source"] == "here"}
    p11, p6, best = _paper("same_11"), _paper("same_6"), _paper("rk4_best")
    losses = {k: -cheap[g]["delta"]["mean"] for k in range(1, nt) for g in [f"rk4_38 {'-'.join([str(k)] * 3)}"]
              if g in cheap}
    add("the same trained weights on fewer steps lose little (RK4-3/8, 11 of 32 steps: "
        f"{_signed(p11['accuracy'] - best['accuracy'])} points from the best instance; 6 of 32: "
        f"{_signed(p6['accuracy'] - best['accuracy'])})", "Table 1(a), Sec. 5.3.2", "manifestation_invariance",
        "RK4-3/8, " + "; ".join(f"{k} of {nt} steps: {_signed(-v, 1)} points" for k, v in sorted(losses.items(), reverse=True))
        + " (mean of the seeds)", "cheaper", losses=losses, trained=nt)


def _planned() -> Optional[tuple]:
    """The planned manifestation study as it ships: its analysis and post hoc analyses, or None without its record."""
    record = planned.shipped_record()
    if record is None:
        return None
    a = planned.analyse(record)
    return a, planned.post_hoc(record, a)


def _planned_claims(add, study: Optional[tuple]) -> None:
    """Sec. 5.1's attribution of manifestation invariance to the RK4 scheme's inductive bias, by the planned study
    (:func:`_planned`), which separates the integrator from refinement (the paper's RK4 models were also refined)."""
    claim = ("\u201cthe RK4-Classic scheme introduces a different inductive bias \u2026 This bias in turn also has "
             "benefits such as manifestation invariance\u201d (its RK4 models were also trained with refinement)")
    if study is None:
        add(claim, "Sec. 5.1", "manifestation_invariance", "the planned study's record does not ship with this copy",
            None, verdict="not tested")
        return
    a, later = study
    i, r = a["primary"]["integrator"], a["primary"]["refinement"]
    n = min(len(a["cells"][c]["seeds"]) for c in planned.PRIMARY)
    worth = later["blocks_worth"]
    small = " (below the plan's 2-point smallest effect)" if i["ci"][1] < planned.DELTA else ""
    add(claim, "Sec. 5.1", "manifestation_invariance",
        f"the planned 2 × 2 ({n} seeds a cell, a smaller model): Euler-trained minus RK4-trained loss "
        f"{_signed(i['estimate'])} points, 95% interval [{_signed(i['ci'][0])}, {_signed(i['ci'][1])}]{small}, "
        f"{p_value(i['p_holm'], 'Holm p')} ({i['verdict']}); fixed depth minus refined {_signed(r['estimate'])} "
        f"[{_signed(r['ci'][0])}, {_signed(r['ci'][1])}], {p_value(r['p_holm'], 'Holm p')} ({r['verdict']}); post hoc, the "
        f"fixed-depth models' blocks are worth {worth['euler_fixed']['mean']:.1f} and {worth['rk4_fixed']['mean']:.1f} "
        f"points, the refined ones' {worth['euler_refined']['mean']:.1f} and {worth['rk4_refined']['mean']:.1f}",
        "inductive_bias", estimate=i["estimate"], p_holm=i["p_holm"])


def _noskip_finding(study: Optional[tuple]) -> str:
    """Appendix B.2's models without skip-init, as far as the planned study's exploratory cell (:func:`_planned`)
    measures them."""
    if study is None or "euler_fixed_noskip" not in study[0]["exploratory"]["cell_loss"]:
        return "every model of the book uses skip-init; no run without it was made"
    loss, worth = study[0]["exploratory"]["cell_loss"], study[1]["blocks_worth"]
    return (f"exploratory only, with no verdict rule fixed in advance (the planned manifestation study, a smaller model): "
            f"Euler at fixed depth loses {loss['euler_fixed_noskip']['mean']:.2f} points on the plan's graphs without "
            f"skip-init ({loss['euler_fixed_noskip']['n']} seeds), {loss['euler_fixed']['mean']:.2f} with it; its "
            f"blocks are worth {worth['euler_fixed_noskip']['mean']:.1f} and {worth['euler_fixed']['mean']:.1f} points")


def _training_claims(add, root: Optional[Path]) -> None:
    """What refinement does to training (Sec. 5.2): its time, the RK4 model's time against Euler's, its accuracy."""
    t = PAPER_SENTENCES["training_time"]
    bench = result("bench_refinement.json", root)
    folder = SHIPPED / "gpu-rk4_refined"
    log = recorded_timing(SimpleNamespace(history=_history(folder), out_dir=folder))
    paper_ideal = schedule_ideal(paper_schedule())
    paper_speedup = t["minutes_fixed"] / t["minutes_refined"]
    measured = [{"speedup": bench["speedup"], "ideal": bench["ideal"]}, {"speedup": log["speedup"], "ideal": log["ideal"]}]
    add(f"refinement shortens training (RK4: {t['minutes_fixed']:,} min at fixed depth, {t['minutes_refined']} refined: "
        f"{paper_speedup:.2f}×, {paper_speedup / paper_ideal:.0%} of its schedule's ideal {paper_ideal:.2f}×)", t["where"],
        "refinement_training",
        f"the cpu model on a 2-core CPU, timed in turn: {bench['speedup']:.2f}× of its schedule's ideal "
        f"{bench['ideal']:.2f}× ({bench['speedup'] / bench['ideal']:.0%}); the gpu model's own training log (an H100, "
        f"seed 0): {log['speedup']:.2f}× of {log['ideal']:.2f}× ({log['speedup'] / log['ideal']:.0%})",
        "training_time", measured=measured)
    secs = {run: read_manifest(SHIPPED / f"gpu-{run}")["train_seconds"] for run in ("rk4_refined", "euler_fixed")}
    ratio = secs["rk4_refined"] / secs["euler_fixed"]
    add(f"refined RK4, \u201cstill slower than\u201d Euler, \u201ctakes only {t['quote']}\u201d without refinement "
        f"({t['minutes_refined']} and {t['minutes_fixed']:,} against {t['minutes_euler']} min)", t["where"],
        "refinement_training", f"refined RK4 over Euler: {ratio:.1f}× on an H100 (seed 0)", "twice", ratio=ratio)
    n = bench["settings"]["n_test"]
    diff = two_proportions(bench["runs"]["fixed"]["final_test_acc"], n, bench["runs"]["refined"]["final_test_acc"], n)
    add("refinement \u201cimproves model quality\u201d", "abstract", "refinement_training",
        f"refined minus fixed depth: {_signed(100 * diff['diff'], 1)} points, 95% interval "
        f"[{_signed(100 * diff['ci95'][0], 1)}, {_signed(100 * diff['ci95'][1], 1)}] ({n} images, one seed each)",
        "quality", low=100 * diff["ci95"][0], high=100 * diff["ci95"][1])


def _history(folder: Path) -> list:
    """A shipped run's training log (its results file's ``history``)."""
    record = read_results(folder) or {}
    if not record.get("history"):
        raise FileNotFoundError(f"{folder} has no training log (results.json's history): ship the preset again")
    return record["history"]


def _weight_claims(add) -> None:
    """Figure 8 (Sec. 5.2): how smooth θ(t) is, in the gpu models and the cpu preset's four models of integrator x
    refinement."""
    rk, eu = _roughness("gpu", "rk4_refined"), _roughness("gpu", "euler_fixed")
    cpu = {run: _roughness("cpu", run) for run in CELLS.values()}
    mean = {run: sum(v) / len(v) for run, v in cpu.items() if v}
    which = ""
    if len(mean) == len(CELLS):
        refinement = (mean["euler_fixed"] - mean["euler_refined"] + mean["rk4_fixed"] - mean["rk4_refined"]) / 2
        integrator = (mean["euler_fixed"] - mean["rk4_fixed"] + mean["euler_refined"] - mean["rk4_refined"]) / 2
        fixed = [mean["euler_fixed"], mean["rk4_fixed"]]
        which = (". The cpu preset's four models (seed 0): " + "; ".join(f"{run_label(r)} {v:.2f}" for r, v in mean.items())
                 + f": refinement accounts for {refinement:.2f} of the difference, the integrator for {integrator:.2f}. "
                 f"The fixed-depth models' {min(fixed):.2f} to {max(fixed):.2f} is about √2 ({math.sqrt(2):.2f}), the "
                 "value for independent pieces, and refinement starts every new piece as a copy of its parent: its "
                 "smoothness is partly by construction")
    add("\u201ctransitions between layers are smoother when ContinuousNet(RK4-classic) is trained with refinement\u201d "
        "than for the Euler-trained model", "Sec. 5.2, Figure 8", "paper_claims",
        f"mean relative jump between neighbouring pieces, per block: RK4-trained, refined "
        f"{', '.join(f'{v:.2f}' for v in rk)}; Euler-trained, fixed depth {', '.join(f'{v:.2f}' for v in eu)}" + which,
        "smooth", rk4=rk, euler=eu)


def _beyond_claims(add, seeds: dict) -> None:
    """What the paper expects without measuring it, its accuracies, and what it leaves to future work."""
    robust = robustness_over_seeds({s: r["robustness"] for s, r in seeds.items()})
    primary = next(row for row in robust.rows if row["role"] == "primary")
    add("ContinuousNets trained with refinement, being \u201cmore robust with respect to parameter perturbations\u201d, "
        "\u201cshould be well-suited to compression and other quantization strategies\u201d (expected, not measured)",
        "Sec. 6, future work (Compression)", "robustness",
        f"{PRIMARY.name}, Euler's drop minus RK4's: {_signed(primary['diff'])} points, 95% interval "
        f"[{_signed(primary['ci95'][0])}, {_signed(primary['ci95'][1])}] over {len(robust.seeds)} seeds",
        "robust", diff=primary["diff"], low=primary["ci95"][0], high=primary["ci95"][1], min_effect=PRIMARY.min_effect)
    noise = [{"name": r["name"], "diff": r["diff"], "significant": r["significant"]} for r in robust.rows
             if r["kind"] == "input_noise"]
    add("the RK4 scheme's inductive bias brings \u201cimproved stability with respect to input perturbations\u201d "
        "(said, not measured)", "Sec. 5.1", "robustness",
        "Euler's drop minus RK4's over the seeds: " + "; ".join(
            f"{r['name']}: {_signed(r['diff'])} points ({'significant' if r['significant'] else 'not significant'} "
            "after Holm)" for r in noise), "input_stability", rows=noise)
    acc = {run: [100 * r["runs"][run]["final_test_acc"] for r in seeds.values()] for run in ("rk4_refined", "euler_fixed")}
    w = welch(acc["rk4_refined"], acc["euler_fixed"])
    p_rk4, p_eu = _paper("rk4"), _paper("euler")
    add(f"RK4 \u201c(slightly) worse\u201d than Euler ({p_rk4['accuracy']:.2f}% against {p_eu['accuracy']:.2f}%; over "
        f"the authors' trainings {p_rk4['min']:.2f}–{p_rk4['max']:.2f}% against {p_eu['min']:.2f}–{p_eu['max']:.2f}%)",
        "Table 1(a), Sec. 5.1", "continuousnet",
        f"RK4-trained {sum(acc['rk4_refined']) / len(acc['rk4_refined']):.1f}%, Euler-trained "
        f"{sum(acc['euler_fixed']) / len(acc['euler_fixed']):.1f}% (mean of {len(acc['rk4_refined'])} seeds); Euler minus "
        f"RK4 {_signed(w['diff'])} points, 95% interval [{_signed(w['ci95'][0])}, {_signed(w['ci95'][1])}], "
        f"{p_value(w['p'], 'Welch p')}", "accuracy", low=w["ci95"][0], high=w["ci95"][1])
    a = adaptive.judge(shipped_study("gpu", adaptive.PREFIX), "rk4_refined", "euler_fixed")
    add("\u201cUsing adaptive time steps \u2026 is of interest but is left for future work\u201d", "Sec. 3.2", "adaptive",
        f"the error-controlled solver classes the RK4-trained model {a.classes['rk4_refined'].klass} and the "
        f"Euler-trained one {a.classes['euler_fixed'].klass} (one model per method)", None, verdict="tested here")


def _untested(add, study: Optional[tuple]) -> None:
    """The claims the book does not test, each with why (for skip-init, what the planned study's exploratory cell
    measured, from ``study``: :func:`_planned`'s)."""
    untested = [
        ("the full-scale accuracies (93.84% and 93.57%)", "Table 1(a)", "gpu",
         "the book's models are 11 to 12 points lower (16 epochs, 4-4-4); a wider probe reached about 90%"),
        ("the adjoint method needs N_t ≥ 3M", "Sec. 5.2", "library",
         "the book backpropagates through the graph and has no adjoint"),
        ("ContinuousNets trained without skip-init", "Appendix B.2, Figure 11", "manifestation_invariance",
         _noskip_finding(study)),
        ("CIFAR-100 and Tiny-ImageNet", "Table 1(b); Appendix B.1, Figure 10", "gpu",
         "no model of the book trains on them (the `paper` preset defines a CIFAR-100 run, never trained)"),
        ("comparisons with other networks", "Table 1", "library", "the book trains ContinuousNets only"),
    ]
    for claim, where, chapter, why in untested:
        add(claim, where, chapter, why, None, verdict="not tested")


def claim_rows(root: Optional[Path] = None) -> list:
    """One row per claim: ``claim`` (the paper's words or a summary of them), ``where`` (its place in the paper),
    ``chapter`` (the book's page that measures it), ``finding`` (the book's numbers), ``rule`` (a key of :data:`RULES`,
    or None for the untested and the future work), ``numbers`` (what the rule reads) and ``verdict`` (the rule's, of
    those numbers)."""
    rows = []

    def add(claim, where, chapter, finding, rule, verdict=None, **numbers):
        if rule is not None:
            verdict = RULES[rule].verdict(**numbers)
        rows.append({"claim": claim, "where": where, "chapter": chapter, "finding": finding, "rule": rule,
                     "numbers": numbers, "verdict": verdict})

    seeds = {r["seed"]: r for r in shipped_seeds("gpu")}
    _pendulum_claims(add)
    _manifestation_claims(add, {s: r["sweeps"] for s, r in seeds.items()})
    study = _planned()
    _planned_claims(add, study)
    _training_claims(add, root)
    _weight_claims(add)
    _beyond_claims(add, seeds)
    _untested(add, study)
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
                               "ODE-Nets included), the cpu preset's four models of integrator × refinement, the planned "
                               "manifestation study's record, and the "
                               "refinement benchmark's record (benchmarks/results/bench_refinement.json); where: the "
                               "paper's sections, figures and tables as its source numbers them")
    rules = format_table([{"claim": k.replace("_", " "), "rule": r.words, "fixed": r.fixed} for k, r in RULES.items()],
                         [("claim", "claim", "{}"), ("the verdict's rule", "rule", "{}"), ("set", "fixed", "{}")], left=2,
                         key=("the verdict's rule",), cards=True)
    return join_rich([claims, rules], sep="\n\n")


TABLE: dict[str, Callable[[Optional[Path]], Rich]] = {"paper_claims": paper_claims_table}
"""The page's table, by the name ``{measured-table}`` uses."""
