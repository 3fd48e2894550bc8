"""The numbers of the published book (the ``gpu`` preset, :data:`cnet_lib.book.project.PUBLISHED_PRESET`), computed
the way its chapters compute them, from what ships with the book: the pendulum's ODE-Nets (their adaptive flows), the
image models' studies (sweeps, robustness, adaptive steps, the three training seeds) and the shipped models' records.
(The pendulum chapters and the robustness chapter glue their numbers from their cells: ``tests/test_pendulum.py``,
``tests/test_robustness.py``; the introduction's one robustness number is computed here.)

``tests/test_prose_numbers.py`` checks that every number the chapters' prose states is one of these, formatted as the
prose prints it.  Everything here is computed on the CPU in float64 (the pendulum) or read from the shipped study
files (the image models), so the numbers are the same on every machine.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from cnet_lib import book, images, pendulum, report
from cnet_lib.book.paper_claims import PAPER_SENTENCES, PAPER_TABLE1, paper_schedule, schedule_ideal
from cnet_lib.book.paper_comparison import book_rows
from cnet_lib.book.project import PUBLISHED_PRESET
from cnet_lib.images.runs.shipped import SHIPPED, read_manifest
from cnet_lib.images.studies.paired_stats import two_proportions
from cnet_lib.studies.pendulum.show import times
from cnet_lib.runtime.progress import duration
from cnet_lib.runtime.rows import find_row
from cnet_lib.studies import robustness
from smoke_data import smoke_settings

ROOT = Path(__file__).resolve().parents[1]


def pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}"


def minus(text: str) -> str:
    """A number as the prose prints it: with a real minus sign."""
    return text.replace("-", "−")


@lru_cache(maxsize=None)
def settings(runs_dir: str):
    return smoke_settings(preset=PUBLISHED_PRESET, runs_dir=Path(runs_dir))


# --------------------------------------------------------------------------- the pendulum's adaptive flows
@lru_cache(maxsize=None)
def adaptive_pendulum_numbers(runs_dir: str) -> dict:
    """*Adaptive steps* on the pendulum in the published preset: the check against torchdiffeq and the verdicts."""
    cfg = pendulum.config_for(PUBLISHED_PRESET)
    table = pendulum.adaptive_table_for(PUBLISHED_PRESET)
    flows = pendulum.pendulum_flows(cfg, table, settings=settings(runs_dir))
    rows = pendulum.flow_rows(flows, cfg, table)
    judged = {(r["trained"], r["dt_data"]): r for r in pendulum.judge_flows(rows, pendulum.own_rows(flows, cfg))}
    checked = pendulum.torchdiffeq_rows(flows, cfg, table["tolerances"])
    said = str(report.word_torchdiffeq(checked))
    lo, hi = re.search(r"lie (\S+) to (\S+) times", said).groups()
    nfe = max(abs(r["nfe"] - r["nfe_torchdiffeq"]) / min(r["nfe"], r["nfe_torchdiffeq"]) for r in checked)
    return {"td_lo": lo, "td_hi": hi, "td_slope": re.search(r"slope (\S+) of", said).group(1),
            "td_nfe": f"{100 * nfe:.0f}%",
            **{f"flow_{a}": times(judged[(a, cfg.dt_data)]["ratio"]) for a in ("euler", "midpoint", "rk4_38")},
            "flow_mid_coarse1": times(judged[("midpoint", 0.05)]["ratio"]),
            "flow_mid_coarse2": times(judged[("midpoint", 0.1)]["ratio"]),
            "flow_rk4_coarse2": times(judged[("rk4_38", 0.1)]["ratio"])}


# --------------------------------------------------------------------------- the image models
@lru_cache(maxsize=None)
def image_numbers(runs_dir: str) -> dict:
    """The image chapters in the published preset: the shipped models' records and studies."""
    runs = images.trained_runs(settings(runs_dir), verbose=False)
    sweeps = images.sweep_runs(runs, verbose=False)
    v = images.judge_sweeps(sweeps)
    by_seed = images.seed_sweeps(runs, sweeps)
    c = images.contrast_over_seeds(by_seed)
    r = robustness.judge(robustness.run(runs, verbose=False), "rk4_refined", "euler_fixed")
    adaptive = images.adaptive_runs(runs, verbose=False)
    a = images.judge_adaptive(adaptive, "rk4_refined", "euler_fixed")
    rk4, euler = find_row(sweeps["rk4_refined"], kind="trained"), find_row(sweeps["euler_fixed"], kind="trained")
    t1 = {(row["model"], row["kind"], row.get("scheme"), row.get("n_steps"), row.get("n_basis")): row
          for row in images.table1_rows(sweeps)}
    comp2 = next(row for k, row in t1.items() if k[1] == "compressed" and k[2] == "rk4_classic" and k[4] == 2
                 and "RK4" in k[0])
    m = read_manifest(SHIPPED / f"{PUBLISHED_PRESET}-rk4_refined")
    drops = c.drops
    out = {
        "acc_rk4": pct(rk4["accuracy"]), "acc_euler": pct(euler["accuracy"]), "params": f"{rk4['n_parameters']:,}",
        "epochs": str(len(m["history"])), "n_test": f"{r.n:,}",
        "gap_rk4": f"{v.gaps['rk4_refined']:.1f}", "gap_euler": f"{v.gaps['euler_fixed']:.1f}",
        "drop_euler": f"{v.drops['euler_fixed']:.1f}", "drop_rk4": f"{v.drops['rk4_refined']:.1f}",
        "seeds_euler_lo": f"{min(drops['euler_fixed']):.1f}", "seeds_euler_hi": f"{max(drops['euler_fixed']):.1f}",
        "seeds_euler_mean": f"{sum(drops['euler_fixed']) / 3:.1f}",
        "seeds_rk4_lo": f"{min(drops['rk4_refined']):.2f}", "seeds_rk4_hi": f"{max(drops['rk4_refined']):.2f}",
        "x_euler_lo": f"{min(c.straddle_drops['euler_fixed']):.1f}", "x_euler_hi": f"{max(c.straddle_drops['euler_fixed']):.1f}",
        "x_rk4_lo": minus(f"{min(c.straddle_drops['rk4_refined']):.2f}"),
        "x_rk4_hi": minus(f"{max(c.straddle_drops['rk4_refined']):.2f}"),
        "x_euler_seed0": f"{v.straddle_drops['euler_fixed']:.1f}",
        "seeds_ci_lo": minus(f"{c.methods['ci95'][0]:+.1f}"), "seeds_ci_hi": minus(f"{c.methods['ci95'][1]:+.1f}"),
        "seeds_p": f"{c.methods['p']:.2g}", "comp2_acc": pct(comp2["accuracy"]), "comp2_delta": minus(f"{comp2['delta_points']:+.1f}"),
        "euler_comp2_acc": pct(next(row for k, row in t1.items() if k[1] == "compressed" and k[2] == "rk4_classic"
                                    and k[4] == 2 and "Euler" in k[0])["accuracy"]),
        "live_images": f"{images.live_images(PUBLISHED_PRESET):,}", "sweep_n": f"{images.sweep_images(sweeps['rk4_refined']):,}",
        "comp2_params": f"{comp2['n_parameters']:,}",
        "adaptive_n": f"{adaptive['n']:,}", "ad_tol": f"{a.classes['rk4_refined'].tol:g}",
        **{f"ad_own_{key}": pct(next(row for row in images.studies.adaptive_measure.adaptive_rows(adaptive)
                                     if row["run"] == run and row["pair"] is None)["accuracy"])
           for run, key in (("rk4_refined", "rk4"), ("euler_fixed", "euler"))},
    }
    cheap = {(row["source"], row["graph"]): row for row in book.paper_claims.cheaper_graphs(by_seed)}
    claims = {(row["run"], row["n_steps"]): row["loss"]["mean"] for row in book.paper_claims.invariance_claims(by_seed)}
    out.update({"same3_38": f"{-cheap[('here', 'rk4_38 3-3-3')]['delta']['mean']:.1f}",
                "same2_38": f"{-cheap[('here', 'rk4_38 2-2-2')]['delta']['mean']:.1f}",
                "same2_c": f"{-cheap[('here', 'rk4_classic 2-2-2')]['delta']['mean']:.1f}",
                "same1_38": f"{-cheap[('here', 'rk4_38 1-1-1')]['delta']['mean']:.1f}",
                "proj2_acc": f"{cheap[('here', 'rk4_classic 2-2-2, M = 2')]['accuracy']['mean']:.1f}",
                "proj2_delta": minus(f"{cheap[('here', 'rk4_classic 2-2-2, M = 2')]['delta']['mean']:+.1f}"),
                "eu3": f"{claims[('euler_fixed', 3)]:.1f}", "eu2": f"{claims[('euler_fixed', 2)]:.1f}",
                "eu8": f"{claims[('euler_fixed', 8)]:.2f}", "eu16": f"{claims[('euler_fixed', 16)]:.2f}",
                "rke4": f"{claims[('rk4_refined', 4)]:.2f}", "rke8": f"{claims[('rk4_refined', 8)]:.2f}",
                "rke16": f"{claims[('rk4_refined', 16)]:.2f}"})
    w4 = next(row for row in r.rows if row["kind"] == "quantized_weights" and row["level"] == 4)
    out["w4_diff"] = f"{w4['diff']:.2f}"  # the introduction's (the robustness chapter glues its own numbers)
    for i, block in enumerate(images.skip_gains(runs["rk4_refined"].model), 1):
        gains = [float(g) for g in block["gains"]]
        out[f"gain{i}_hi"], out[f"gain{i}_lo"] = (f"{max(gains):.2f}".replace("-", "−"),
                                                  f"{min(gains):.2f}".replace("-", "−"))
    for name, key in (("rk4_refined", "ad_rk4"), ("euler_fixed", "ad_euler")):
        k = a.classes[name]
        out.update({f"{key}_class": k.klass, f"{key}_drop": minus(f"{k.drop:+.2f}"), f"{key}_drop_plain": f"{k.drop:.2f}",
                    f"{key}_lo": minus(f"{k.ci95[0]:+.2f}"), f"{key}_hi": minus(f"{k.ci95[1]:+.2f}"), f"{key}_changed": f"{k.changed:.1f}%",
                    f"{key}_nfe": f"{k.nfe_adaptive:.0f}", f"{key}_own_nfe": f"{k.nfe_own:.0f}"})
    return out


def factorial_numbers() -> dict:
    """The `cpu` preset's four models of integrator x refinement, as the chapter shows them (shipped_factorial: each
    cell's mean over its training seeds, the effects' Welch intervals and Holm's correction), and the roughness of
    their theta(t) (theta_roughness of the shipped checkpoints, training seed 0)."""
    from cnet_lib.images.studies.factorial import shipped_factorial
    from cnet_lib.images.studies.theta import theta_roughness
    from cnet_lib.images.training.train_state import load_model

    fx = shipped_factorial("cpu", fallback=None)
    e = {k: v["spread"]["mean"] for k, v in fx.effects.items()}
    mean = lambda values: sum(values) / len(values)  # noqa: E731
    words = {0: "none", 1: "one", 2: "two", 3: "three", 4: "all four"}
    out = {f"fx_valid_{run}": f"{mean(v['valid']):.1f}" for run, v in fx.cells.items()}
    out.update({f"fx_cross_{run}": f"{mean(v['straddles']):.1f}" for run, v in fx.cells.items()})
    out.update({"fx_integrator": f"{(e['integrator, refined'] + e['integrator, fixed depth']) / 2:.1f}",
                "fx_refinement": f"{(e['refinement, Euler'] + e['refinement, RK4']) / 2:.1f}",
                "fx_main": format(e["main runs' contrast"], ".1f"), "fx_ref_euler": f"{e['refinement, Euler']:.1f}",
                "fx_ref_rk4": f"{e['refinement, RK4']:.1f}", "fx_seeds": words[len(fx.seeds)]})
    tests = {k: v["test"] for k, v in fx.effects.items() if k != "main runs' contrast"}
    if all(tests.values()):  # two or more seeds per cell
        t = tests["integrator, fixed depth"]
        out.update({"fx_excluding": words[sum(x["ci95"][0] > 0 or x["ci95"][1] < 0 for x in tests.values())],
                    "fx_held": words[sum(x["p_holm"] < 0.05 for x in tests.values())],
                    "fx_int_fixed": f"{t['diff']:+.1f}", "fx_int_fixed_lo": f"{t['ci95'][0]:+.1f}",
                    "fx_int_fixed_hi": f"{t['ci95'][1]:+.1f}", "fx_int_fixed_p": f"{t['p']:.3f}",
                    "fx_int_fixed_p_holm": f"{t['p_holm']:.2f}"})
    for run in fx.cells:
        rough = [r["roughness"] for r in theta_roughness(load_model(SHIPPED / f"cpu-{run}", "cpu")[0])]
        out[f"rough_{run}"] = f"{sum(rough) / len(rough):.2f}"
    return out


def paper_numbers() -> dict:
    """The paper's Table 1 and sentences as :mod:`cnet_lib.book.paper_claims` types them, and the book's rows."""
    p = {r["key"]: r for r in PAPER_TABLE1}
    rows = {(r["source"], r["model"]): r for r in book_rows()}
    probe = {m: rows[("book, probe", m)] for m in ("Euler (ResNet-like)", "RK4-classic, refined")}
    gpu = {m: float(rows[("book, gpu", m)]["accuracy"]) for m in ("Euler (ResNet-like)", "RK4-classic, refined")}
    return {"below_rk4": f"{p['rk4']['accuracy'] - gpu['RK4-classic, refined']:.0f}",
            "below_euler": f"{p['euler']['accuracy'] - gpu['Euler (ResNet-like)']:.0f}",
            "paper_euler": f"{p['euler']['accuracy']:.2f}", "paper_rk4": f"{p['rk4']['accuracy']:.2f}",
            "paper_best": f"{p['rk4_best']['accuracy']:.2f}", "paper_same11": f"{p['same_11']['accuracy']:.2f}",
            "paper_same11_loss": f"{p['rk4_best']['accuracy'] - p['same_11']['accuracy']:.2f}",
            "paper_same6_loss": f"{p['rk4_best']['accuracy'] - p['same_6']['accuracy']:.2f}",
            "paper_as_euler": f"{PAPER_SENTENCES['rk4_as_euler']['accuracy']:.2f}",
            "paper_params": f"{p['rk4']['parameters'] / 1e6:.2f}",
            "probe_rk4": probe["RK4-classic, refined"]["accuracy"], "probe_euler": probe["Euler (ResNet-like)"]["accuracy"],
            "probe_params": f"{probe['RK4-classic, refined']['parameters'] / 1e6:.2f}",
            "probe_epochs": str(probe["RK4-classic, refined"]["epochs"])}


def _median(values) -> float:
    v = sorted(values)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2


def history_numbers() -> dict:
    """The shipped models' training logs (their manifests): the median seconds of an epoch at each N_t, and the
    speed-up of refinement those medians give against its ideal."""
    out = {}
    for run in ("rk4_refined", "euler_fixed"):
        h = read_manifest(SHIPPED / f"{PUBLISHED_PRESET}-{run}")["history"]
        out[f"{run}_total"] = f"{sum(e['train_seconds'] for e in h):.1f}"
        out[f"_{run}_seconds"] = sum(e["train_seconds"] for e in h)
        medians = {n: _median(e["train_seconds"] for e in h if e["n_steps"][0] == n) for n in {e["n_steps"][0] for e in h}}
        for n, seconds in sorted(medians.items()):
            out[f"{run}_epoch_{n}"] = f"{seconds:.1f}"
        schedule = [e["n_steps"][0] for e in h]  # refinement's speed-up read from the log (its median epochs)
        out[f"{run}_log_speedup"] = f"{len(h) * medians[schedule[-1]] / sum(medians[n] for n in schedule):.2f}"
        out[f"{run}_log_ideal"] = f"{len(h) * schedule[-1] / sum(schedule):.2f}"
    out["rk4_over_euler"] = f"{out.pop('_rk4_refined_seconds') / out.pop('_euler_fixed_seconds'):.1f}"
    return out


def training_numbers() -> dict:
    """What training the published preset's image models took (their manifests: seed 0, on the GPU they trained on)
    and the T4 estimate from their records (:func:`cnet_lib.book.measurements.t4_estimate`), as the book rounds a
    duration."""
    from cnet_lib.book.measurements import t4_estimate

    seconds = sum(read_manifest(SHIPPED / f"{PUBLISHED_PRESET}-{run}")["train_seconds"] for run in ("rk4_refined", "euler_fixed"))
    return {"both_train": duration(seconds), "t4_chapters": duration(60 * t4_estimate(PUBLISHED_PRESET))}


def refinement_numbers() -> dict:
    """What refinement saved, measured against fixed-depth RK4 (``benchmarks/bench_refinement.py``)."""
    r = json.loads((ROOT / "benchmarks" / "results" / "bench_refinement.json").read_text(encoding="utf-8"))
    n = r["settings"]["n_test"]
    d = two_proportions(r["runs"]["fixed"]["final_test_acc"], n, r["runs"]["refined"]["final_test_acc"], n)
    t = PAPER_SENTENCES["training_time"]
    return {"speedup": f"{r['speedup']:.2f}", "ideal": f"{r['ideal']:.2f}",
            "refined_diff": minus(f"{100 * d['diff']:+.1f}"), "refined_lo": minus(f"{100 * d['ci95'][0]:+.1f}"),
            "refined_hi": minus(f"{100 * d['ci95'][1]:+.1f}"), "paper_min_refined": f"{t['minutes_refined']:,}",
            "paper_min_fixed": f"{t['minutes_fixed']:,}", "paper_speedup": f"{t['minutes_fixed'] / t['minutes_refined']:.2f}",
            "paper_ideal": f"{schedule_ideal(paper_schedule()):.2f}", "paper_epochs": str(len(paper_schedule())),
            "refined_acc": pct(r["runs"]["refined"]["final_test_acc"]), "fixed_acc": pct(r["runs"]["fixed"]["final_test_acc"]),
            "refined_min": f"{r['runs']['refined']['train_seconds'] / 60:.0f}",
            "fixed_min": f"{r['runs']['fixed']['train_seconds'] / 60:.0f}", "bench_epochs": str(r["settings"]["epochs"]),
            "bench_train": f"{r['settings']['n_train']:,}", "bench_test": f"{r['settings']['n_test']:,}"}
