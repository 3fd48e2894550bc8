"""The numbers of the published book (the ``gpu`` preset, :data:`cnet_lib.book.project.PUBLISHED_PRESET`), computed
the way its chapters compute them, from what ships with the book: the pendulum's ODE-Nets (their adaptive flows), the
image models' studies (sweeps, robustness, adaptive steps, the three training seeds) and the shipped models' records.
(The chapters whose studies have their own folder glue their numbers from their cells: ``tests/test_pendulum.py``,
``tests/test_robustness.py``, ``tests/test_manifestation.py``, ``tests/test_continuousnet.py``,
``tests/test_refinement.py``.)

``tests/test_prose_numbers.py`` checks that every number the chapters' prose states is one of these, formatted as the
prose prints it.  Everything here is computed on the CPU in float64 (the pendulum) or read from the shipped study
files (the image models), so the numbers are the same on every machine.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from cnet_lib import images, pendulum, report
from cnet_lib.book.paper_claims import PAPER_TABLE1
from cnet_lib.book.paper_comparison import book_rows
from cnet_lib.book.project import PUBLISHED_PRESET
from cnet_lib.studies.pendulum.show import times
from cnet_lib.runtime.rows import find_row
from cnet_lib.studies import manifestation, robustness
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
    sweeps = manifestation.run(runs, verbose=False)
    r = robustness.judge(robustness.run(runs, verbose=False), "rk4_refined", "euler_fixed")
    adaptive = images.adaptive_runs(runs, verbose=False)
    a = images.judge_adaptive(adaptive, "rk4_refined", "euler_fixed")
    rk4, euler = find_row(sweeps["rk4_refined"], kind="trained"), find_row(sweeps["euler_fixed"], kind="trained")
    out = {
        "acc_rk4": pct(rk4["accuracy"]), "acc_euler": pct(euler["accuracy"]), "params": f"{rk4['n_parameters']:,}",
        "n_test": f"{r.n:,}",
        "live_images": f"{images.live_images(PUBLISHED_PRESET):,}",
        "sweep_n": f"{manifestation.sweep_images(sweeps['rk4_refined']):,}",
        "adaptive_n": f"{adaptive['n']:,}", "ad_tol": f"{a.classes['rk4_refined'].tol:g}",
        **{f"ad_own_{key}": pct(next(row for row in images.studies.adaptive_measure.adaptive_rows(adaptive)
                                     if row["run"] == run and row["pair"] is None)["accuracy"])
           for run, key in (("rk4_refined", "rk4"), ("euler_fixed", "euler"))},
    }
    for name, key in (("rk4_refined", "ad_rk4"), ("euler_fixed", "ad_euler")):
        k = a.classes[name]
        out.update({f"{key}_class": k.klass, f"{key}_drop": minus(f"{k.drop:+.2f}"), f"{key}_drop_plain": f"{k.drop:.2f}",
                    f"{key}_lo": minus(f"{k.ci95[0]:+.2f}"), f"{key}_hi": minus(f"{k.ci95[1]:+.2f}"), f"{key}_changed": f"{k.changed:.1f}%",
                    f"{key}_nfe": f"{k.nfe_adaptive:.0f}", f"{key}_own_nfe": f"{k.nfe_own:.0f}"})
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
            "paper_params": f"{p['rk4']['parameters'] / 1e6:.2f}",
            "probe_rk4": probe["RK4-classic, refined"]["accuracy"], "probe_euler": probe["Euler (ResNet-like)"]["accuracy"],
            "probe_params": f"{probe['RK4-classic, refined']['parameters'] / 1e6:.2f}",
            "probe_epochs": str(probe["RK4-classic, refined"]["epochs"])}
