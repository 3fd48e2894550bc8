"""The numbers of the published book (the ``gpu`` preset, :data:`cnet_lib.book.project.PUBLISHED_PRESET`), computed
the way its chapters compute them, from what ships with the book: the pendulum's ODE-Nets, the image models' studies
(sweeps, robustness, the three training seeds) and the shipped models' records.

``tests/test_prose_numbers.py`` checks that every number the chapters' prose states is one of these, formatted as the
prose prints it.  Everything here is computed on the CPU in float64 (the pendulum) or read from the shipped study
files (the image models), so the numbers are the same on every machine.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from cnet_lib import book, images, pendulum
from cnet_lib.book.paper_claims import PAPER_SENTENCES, PAPER_TABLE1, paper_schedule, schedule_ideal
from cnet_lib.book.paper_comparison import book_rows
from cnet_lib.book.project import PUBLISHED_PRESET
from cnet_lib.images.runs.shipped import SHIPPED, read_manifest
from cnet_lib.images.studies.paired_stats import two_proportions
from cnet_lib.report.pendulum_claims_report import span, times
from cnet_lib.runtime.progress import duration
from cnet_lib.runtime.rows import find_row
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


# --------------------------------------------------------------------------- the pendulum
@lru_cache(maxsize=None)
def pendulum_numbers(runs_dir: str) -> dict:
    """*Is a ResNet a forward-Euler integrator?* in the published preset: the shipped ODE-Nets, rolled out as the
    chapter rolls them out."""
    cfg = pendulum.config_for(PUBLISHED_PRESET)
    models = pendulum.train_models(cfg, settings=settings(runs_dir), progress=False)
    summary = pendulum.training_summary(models)
    rows = pendulum.rollout_rows(models, cfg.eval_schemes, cfg.h_values, cfg, keep_paths=False)
    dip = {r["trained"]: r for r in pendulum.dip_rows(rows)}
    dist = {r["trained"]: r for r in pendulum.rate_distances(models, cfg)}
    curves = pendulum.odenet_convergence(rows)
    numerical = pendulum.integrator_convergence(cfg.train_schemes, cfg.h_values, cfg.dt_data, cfg.T_data)
    floor = find_row(pendulum.error_floor_rows(models, rows, cfg), trained="rk4_38")
    matrix = pendulum.interchange_matrix(rows, 1.0)
    control = pendulum.dt_data_control(cfg, models, settings=settings(runs_dir))
    dt_c = max(cfg.control_dt_data)
    coarse = pendulum.train_models(cfg, cfg.control_schemes, dt_data=dt_c, n_iters=cfg.control_iters, progress=False)
    rates = {"the true f": pendulum.true_rate, pendulum.odenet_label("rk4_38"): coarse["rk4_38"].model}
    gained = pendulum.energy_gained(rates, "midpoint", dt_c, cfg)
    levels = (gained[0]["energy_start"], find_row(gained, rate="the true f")["energy_end"])
    periods = {r["rate"]: r for r in pendulum.flow_periods(rates, levels, cfg.g)}
    losses = [r["final_loss"] for r in summary]
    euler_others = [r["ratio_to_own"] for r in matrix if r["trained"] == "euler" and r["evaluated"] != "euler"]
    swaps = [r["ratio_to_own"] for r in matrix if "euler" not in (r["trained"], r["evaluated"])
             and r["trained"] != r["evaluated"]]
    fine = [r["ratio_to_own"] for r in control if r["dt_data"] == min(r["dt_data"] for r in control)]
    coarse_rows = [r for r in control if r["dt_data"] == dt_c]
    mid = sorted((r for r in curves if r["trained"] == "midpoint"), key=lambda r: r["h"])
    rk4 = sorted((r for r in curves if r["trained"] == "rk4_38"), key=lambda r: r["h"])
    euler_v = sorted((r for r in curves if r["trained"] == "euler"), key=lambda r: r["h"])
    at_1 = find_row(euler_v, h=1.0)["error"]
    return {
        "loss_lo": f"{min(losses):.1e}", "loss_hi": f"{max(losses):.1e}", "loss_factor": times(max(losses) / min(losses)),
        "dip_euler": times(dip["euler"]["ratio"]), "dip_mid": times(dip["midpoint"]["ratio"]),
        "dip_rk4": times(dip["rk4_38"]["ratio"]),
        "e_euler": f"{dip['euler']['error_h'] if 'error_h' in dip['euler'] else at_1:.1e}",
        "dist_euler": times(dist["euler"]["factor"]), "dist_mid": times(dist["midpoint"]["factor"]),
        "dist_rk4": times(dist["rk4_38"]["factor"]),
        "v_worse": times(min(r["error"] for r in euler_v if r["h"] != 1.0) / at_1),
        "mid_flat": times(max(r["error"] for r in mid if r["h"] <= 1) / min(r["error"] for r in mid if r["h"] <= 1)),
        "mid_rise": times(max(r["error"] for r in mid if r["h"] > 1) / max(r["error"] for r in mid if r["h"] <= 1)),
        "mid_hmax": f"{max(r['h'] for r in mid):g}",
        "rk4_lo": f"{min(r['error'] for r in rk4 if r['h'] <= 4):.1e}",
        "rk4_hi": f"{max(r['error'] for r in rk4 if r['h'] <= 4):.1e}", "rk4_last": f"{rk4[-1]['error']:.1e}",
        "rk4_f_4": f"{find_row(numerical, scheme='rk4_38', h=4.0)['error']:.1e}",
        "rk4_f_8": f"{find_row(numerical, scheme='rk4_38', h=8.0)['error']:.1e}",
        "floor": f"{floor['error_own']:.2e}", "floor_above": times(floor["error_own"] / floor["error_numerical"]),
        "floor_numerical": f"{floor['error_numerical']:.1e}",
        "swap_euler": span(min(euler_others), max(euler_others)), "swap_others": span(min(swaps), max(swaps)),
        "control_fine": span(min(fine), max(fine)),
        "control_coarse": span(min(r["ratio_to_own"] for r in coarse_rows), max(r["ratio_to_own"] for r in coarse_rows)),
        "control_to_f": span(min(r["ratio_to_numerical"] for r in coarse_rows),
                             max(r["ratio_to_numerical"] for r in coarse_rows)),
        "dt_coarse": f"{dt_c:g}",
        "gain_learned": f"{find_row(gained, rate=pendulum.odenet_label('rk4_38'))['energy_gained']:+.3f}",
        "gain_true": f"{find_row(gained, rate='the true f')['energy_gained']:+.3f}",
        "period_learned": f"{100 * periods[pendulum.odenet_label('rk4_38')]['change']:+.1f}%",
        "period_true": f"{100 * periods['the true f']['change']:+.1f}%",
    }


def integrator_numbers() -> dict:
    """*Numerical integrators* in the published preset: the fitted slopes over its step sizes, and the long window."""
    cfg = pendulum.config_for(PUBLISHED_PRESET)
    schemes = ["euler", "midpoint", "rk4_classic", "rk4_38"]
    rows = pendulum.integrator_convergence(schemes, cfg.integrator_h, cfg.dt_data, cfg.integrator_t_final)
    slopes = {r["scheme"]: r["slope"] for r in pendulum.fit_slopes(rows, cfg.fit_h_integrators)}
    h_long = [h for h in cfg.integrator_h if h >= 1 / 4]
    long = pendulum.integrator_convergence(schemes, h_long, cfg.dt_data, 10.0)
    long_slopes = {r["scheme"]: r["slope"] for r in pendulum.fit_slopes(long, (min(h_long), max(h_long)),
                                                                          max_error=float("inf"))}
    euler = [r["error"] for r in long if r["scheme"] == "euler"]
    return {**{f"slope_{k}": f"{v:.2f}" for k, v in slopes.items()},
            **{f"long_{k}": f"{v:.2f}" for k, v in long_slopes.items()},
            "long_euler_lo": f"{min(euler):.2g}", "long_euler_hi": f"{max(euler):.2g}",
            "long_others_max": f"{max(r['error'] for r in long if r['scheme'] != 'euler'):.2g}"}


# --------------------------------------------------------------------------- the image models
@lru_cache(maxsize=None)
def image_numbers(runs_dir: str) -> dict:
    """The image chapters in the published preset: the shipped models' records and studies."""
    runs = images.trained_runs(settings(runs_dir), verbose=False)
    sweeps = images.sweep_runs(runs, verbose=False)
    v = images.judge_sweeps(sweeps)
    by_seed = images.seed_sweeps(runs, sweeps)
    c = images.contrast_over_seeds(by_seed)
    study = images.robustness_runs(runs, verbose=False)
    r = images.judge(study, "rk4_refined", "euler_fixed")
    over = images.robustness_over_seeds(images.seed_studies(runs, study))
    rk4, euler = find_row(sweeps["rk4_refined"], kind="trained"), find_row(sweeps["euler_fixed"], kind="trained")
    primary = next(row for row in over.rows if row["role"] == "primary")
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
        "over_primary_diff": f"{primary['diff']:+.2f}", "over_primary_lo": f"{primary['ci95'][0]:+.2f}",
        "over_primary_hi": f"{primary['ci95'][1]:+.2f}",
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
    over_rows = {(row["kind"], row["level"]): row for row in over.rows}
    sizes = {(c.kind, c.level): c.bytes for c in study["rk4_refined"]}
    out.update({"wn3_a": f"{over_rows[('weight_noise', 0.3)]['a']['mean']:.2f}",
                "wn3_b": f"{over_rows[('weight_noise', 0.3)]['b']['mean']:.2f}",
                "in3_a": f"{over_rows[('input_noise', 0.3)]['a']['mean']:.2f}",
                "in3_b": f"{over_rows[('input_noise', 0.3)]['b']['mean']:.2f}",
                "bytes_w4": f"{sizes[('quantized_weights', 4)]:,}", "bytes_f32": f"{sizes[('clean', None)]:,}"})
    pr = r.primary
    w4 = next(row for row in r.rows if row["kind"] == "quantized_weights" and row["level"] == 4)
    w4s = next(row for row in over.rows if row["kind"] == "quantized_weights" and row["level"] == 4)
    out.update({"rob_a": f"{pr['drop_a']:.2f}", "rob_b": f"{pr['drop_b']:.2f}", "rob_diff": minus(f"{pr['diff']:+.2f}"),
                "rob_lo": minus(f"{pr['ci95'][0]:+.2f}"), "rob_hi": minus(f"{pr['ci95'][1]:+.2f}"),
                "over_a": f"{primary['a']['mean']:.2f}", "over_b": f"{primary['b']['mean']:.2f}",
                "over_diff": minus(f"{primary['diff']:+.2f}"), "over_lo": minus(f"{primary['ci95'][0]:+.2f}"),
                "over_hi": minus(f"{primary['ci95'][1]:+.2f}"), "w4_diff": f"{w4['diff']:.2f}",
                "w4_holm": f"{w4['p_holm']:.2g}", "w4s_diff": minus(f"{w4s['diff']:+.2f}"),
                "w4s_lo": minus(f"{w4s['ci95'][0]:+.2f}"), "w4s_hi": minus(f"{w4s['ci95'][1]:+.2f}")})
    for i, block in enumerate(images.skip_gains(runs["rk4_refined"].model), 1):
        gains = [float(g) for g in block["gains"]]
        out[f"gain{i}_hi"], out[f"gain{i}_lo"] = (f"{max(gains):.2f}".replace("-", "−"),
                                                  f"{min(gains):.2f}".replace("-", "−"))
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
