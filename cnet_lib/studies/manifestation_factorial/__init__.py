"""The planned manifestation factorial: training integrator × refinement, 12 training seeds a cell.

The study's question, statistic, test and seed count were fixed before its first run: ``analysis_plan.md`` beside
this module.  This module is that plan as code, in three steps:

1. :func:`train_and_evaluate` trains every run (one :class:`~cnet_lib.images.training.train_config.TrainConfig` per
   cell and seed, :func:`run_config`) with the library's own resumable training, then evaluates each model once on
   :data:`GRAPHS`; interrupted, it starts again where it stopped (epoch checkpoints; an evaluation is written
   atomically, once).
2. :func:`collect` gathers the runs into the study's record (one entry a model: cell, seed, accuracies per graph,
   training time, machine), the file that ships (``results.json`` beside this module).
3. :func:`analyse` computes the plan's primary test from that record (it refuses an incomplete primary design),
   then the exploratory analyses, labelled so; :func:`report` (:mod:`.show`) shows them in that order, or says that
   the study has not finished while its record does not ship.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import time
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

import torch

from ...images.data.image_data import load_dataset
from ..stats import holm, welch
from ...images.training.evaluation import manifestation_sweep
from ...images.training.train_config import TrainConfig
from ...images.training.train_loop import train
from ...runtime.checkpoint import atomic_write_text
from ...runtime.device import environment
from ...runtime.progress import progress_bar, progress_write
from . import show
from .show import NOT_FINISHED, fig_losses

__all__ = ["CELLS", "PRIMARY", "EXPLORATORY", "PRIMARY_SEEDS", "EXPLORATORY_SEEDS", "GRAPHS", "PRIMARY_GRAPHS",
           "DELTA", "ALPHA", "POWER", "RESULTS", "fixed_plan", "run_config", "schedule", "train_and_evaluate",
           "collect", "model_loss", "contrast_test", "analyse", "blocks_worth", "skip_gain", "add_skip_gains",
           "post_hoc", "shipped_record", "report", "facts", "fig_losses", "NOT_FINISHED"]

RECIPE = dict(dataset="cifar10", n_train=10_000, n_test=None, channels=(8, 16, 32), batch_size=128, lr=0.1,
              lr_schedule="step", lr_milestones=(5,), lr_decay=0.1, epochs=6, weight_decay=5e-4, momentum=0.9)
"""What every run shares (the plan's *Model, data and recipe*)."""

CELLS = {
    "euler_fixed": dict(scheme="euler", n_basis=4),
    "euler_refined": dict(scheme="euler", n_basis=1, refine_at=(1, 3)),
    "rk4_fixed": dict(scheme="rk4_classic", n_basis=4),
    "rk4_refined": dict(scheme="rk4_classic", n_basis=1, refine_at=(1, 3)),
    "midpoint_fixed": dict(scheme="midpoint", n_basis=4),
    "euler_fixed_noskip": dict(scheme="euler", n_basis=4, skip_init=False),
}
"""Each cell's departure from :data:`RECIPE` (the plan's table)."""
PRIMARY = ("euler_fixed", "euler_refined", "rk4_fixed", "rk4_refined")
EXPLORATORY = ("midpoint_fixed", "euler_fixed_noskip")
PRIMARY_SEEDS = tuple(range(12))
EXPLORATORY_SEEDS = tuple(range(8))

GRAPHS = tuple((s, n) for s in ("euler", "midpoint", "rk4_classic", "rk4_38") for n in (4, 8))
"""Every graph each model is evaluated on (its own among them)."""
PRIMARY_GRAPHS = (("rk4_38", 4), ("rk4_classic", 8), ("rk4_38", 8))
"""G of the plan: valid for every model of every cell, and never a model's own graph."""
DELTA = 2.0
"""The smallest effect that matters, in accuracy points."""
ALPHA = 0.05
"""The family-wise level of the two primary tests (Holm)."""
POWER = {8: 0.67, 10: 0.80, 12: 0.88, 16: 0.97}
"""The plan's simulated power to find a 2-point effect of either factor, by seeds per cell (its *Power* table)."""
RESULTS = Path(__file__).with_name("results.json")
"""The study's record as it ships."""
EVALUATION = "evaluation.json"


def run_config(cell: str, seed: int, root, data_dir, threads: int = 1) -> TrainConfig:
    """The run of ``cell`` with training seed ``seed``, written to ``root/<cell>-seed<seed>``."""
    if cell not in CELLS:
        raise ValueError(f"unknown cell {cell!r}; the cells are {', '.join(CELLS)}")
    return TrainConfig(**RECIPE, **CELLS[cell], seed=int(seed), data_dir=str(data_dir), threads=threads,
                       out_dir=str(Path(root) / f"{cell}-seed{seed}"), resume=True, progress=False,
                       preset="manifestation_factorial", run_name=cell, device="cpu")


def schedule(primary_seeds: Iterable[int] = PRIMARY_SEEDS,
             exploratory_seeds: Iterable[int] = EXPLORATORY_SEEDS) -> list[tuple[str, int]]:
    """The order of the runs: the primary cells seed by seed, then the exploratory cells seed by seed."""
    out = [(c, s) for s in primary_seeds for c in PRIMARY]
    return out + [(c, s) for s in exploratory_seeds for c in EXPLORATORY]


def _evaluate(result, data, threads: int) -> dict:
    rows = manifestation_sweep(result.model, data.test_x, data.test_y, data.mean, data.std,
                               schemes=tuple(dict.fromkeys(s for s, _ in GRAPHS)), n_steps=(4, 8), compress=(),
                               batch_size=500, amp=False, progress=False, graphs=False, threads=threads)
    acc = {f"{r['scheme']}@{r['n_steps']}": r["accuracy"] for r in rows if r["kind"] == "manifestation"}
    trained = next(r for r in rows if r["kind"] == "trained")
    return {"trained_graph": f"{trained['scheme']}@{trained['n_steps']}", "accuracy": acc,
            "identity_accuracy": next(r["accuracy"] for r in rows if r["kind"] == "identity"),
            "n_images": len(data.test_y)}


def train_and_evaluate(root, data_dir, runs: Optional[Sequence[tuple[str, int]]] = None, threads: int = 1,
                       deadline: Optional[float] = None) -> list[Path]:
    """Train and evaluate ``runs`` (default :func:`schedule`) under ``root``, in order, resuming whatever an
    interruption left; stops before starting a run once ``time.time()`` passes ``deadline``.  Shows a bar over
    the runs and one line per finished run (its own graph's accuracy only: the plan looks at nothing else before
    the primary design is complete).  Returns the folders that hold an evaluation."""
    runs = list(schedule() if runs is None else runs)
    torch.set_num_threads(threads)
    data_cache: dict = {}
    done = []
    bar = progress_bar(total=len(runs), desc="manifestation factorial", leave=True)
    for cell, seed in runs:
        cfg = run_config(cell, seed, root, data_dir, threads)
        out = Path(cfg.out_dir)
        if (out / EVALUATION).is_file():
            done.append(out)
            bar.update(1)
            continue
        if deadline is not None and time.time() > deadline:
            break
        key = (cfg.n_train, cfg.seed)
        if key not in data_cache:
            data_cache.clear()
            data_cache[key] = load_dataset(cfg.dataset, data_dir, n_train=cfg.n_train, n_test=None, seed=cfg.seed,
                                           device="cpu", download=False, progress=False)
        data = data_cache[key]
        t0 = time.perf_counter()
        result = train(cfg, data)
        t1 = time.perf_counter()
        record = _evaluate(result, data, threads)
        record.update(cell=cell, seed=seed, final_accuracy=result.final_accuracy,
                      train_seconds=result.results.get("train_seconds_total"), eval_seconds=time.perf_counter() - t1,
                      environment=environment("cpu"))
        atomic_write_text(out / EVALUATION, json.dumps(record, indent=1))
        progress_write(f"{cell} seed {seed}: {100 * record['final_accuracy']:.2f}% on its own graph "
                       f"({t1 - t0:.0f} s this call)")
        done.append(out)
        bar.update(1)
    bar.close()
    return done


def skip_gain(state: Mapping[str, torch.Tensor]) -> Optional[float]:
    """How large a trained model's skip gains grew: the mean of |s(t)| over depth-time and over its OdeBlocks, from its
    state_dict (each block's mean |ŝ_β|: with a piecewise-constant basis on equal pieces, the mean of |s(t)| over t);
    ``None`` for a model without skip-init.  A post hoc measurement (the plan's *Deviations*, item 3)."""
    gains = [v.abs().mean().item() for k, v in state.items() if k.endswith("skip_gain")]
    return sum(gains) / len(gains) if gains else None


def _checkpoint_facts(ckpt: Path) -> dict:
    """The digest of a run's checkpoint, and what :func:`skip_gain` reads from its weights."""
    if not ckpt.is_file():
        return {"checkpoint_sha256": None}
    data = ckpt.read_bytes()  # read once: hashed and loaded
    state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)["model"]
    return {"checkpoint_sha256": hashlib.sha256(data).hexdigest(), "skip_gain": skip_gain(state)}


def add_skip_gains(record: Mapping, root) -> dict:
    """``record`` with each model's :func:`skip_gain` read from its checkpoint under ``root`` (``<cell>-seed<n>/``),
    refusing a checkpoint whose digest is not the one the record holds (another model than the one evaluated)."""
    out = json.loads(json.dumps(record))
    for model in out["models"]:
        ckpt = Path(root) / f"{model['cell']}-seed{model['seed']}" / "checkpoint.pt"
        facts = _checkpoint_facts(ckpt)
        if facts["checkpoint_sha256"] != model["checkpoint_sha256"]:
            raise ValueError(f"{ckpt}: not the checkpoint the record holds (its digest differs, or it is missing); "
                             "point root at the folder the study's runs were trained in")
        model["skip_gain"] = facts["skip_gain"]
    return out


def collect(root) -> dict:
    """The study's record from the evaluated runs under ``root``: ``{"models": [...], "plan_sha256": ...}``, one
    entry a model with its checkpoint's digest and :func:`skip_gain`."""
    models = []
    for path in sorted(Path(root).glob(f"*-seed*/{EVALUATION}")):
        record = json.loads(path.read_text(encoding="utf-8"))
        record.update(_checkpoint_facts(path.parent / "checkpoint.pt"))
        models.append(record)
    models.sort(key=lambda r: (list(CELLS).index(r["cell"]), r["seed"]))
    plan = fixed_plan()
    return {"format": "cnet_lib manifestation factorial, version 1", "recipe": {k: list(v) if isinstance(v, tuple)
            else v for k, v in RECIPE.items()}, "cells": {c: {k: list(v) if isinstance(v, tuple) else v
            for k, v in spec.items()} for c, spec in CELLS.items()}, "primary_graphs": [f"{s}@{n}" for s, n in
            PRIMARY_GRAPHS], "plan_sha256": hashlib.sha256(plan).hexdigest(), "models": models}


def fixed_plan() -> bytes:
    """The plan as fixed in advance: ``analysis_plan.md`` above its *Deviations* section (its digest is in the
    record, so a record can be held to the plan it was analysed by)."""
    return Path(__file__).with_name("analysis_plan.md").read_bytes().split(b"\n## Deviations")[0]


def model_loss(model: Mapping, graphs: Sequence[tuple[str, int]] = PRIMARY_GRAPHS) -> float:
    """L of the plan: 100 × the mean over ``graphs`` of (own-graph accuracy − the graph's accuracy), in points."""
    acc = model["accuracy"]
    own = acc[model["trained_graph"]]
    return 100 * sum(own - acc[f"{s}@{n}"] for s, n in graphs) / len(graphs)


def contrast_test(groups: Sequence[Sequence[float]], weights: Sequence[float], alpha: float = 0.05) -> dict:
    """The Welch-type t test of the linear contrast Σ w_c mean_c of independent groups (one value per model):
    ``estimate``, ``se`` = √(Σ w_c² s_c² / n_c), Welch–Satterthwaite ``df``, two-sided ``p`` and the (1 − α)
    interval ``ci``.  Each group needs two values or more."""
    from scipy import stats  # imported here: scipy.stats takes a moment to import

    if len(groups) != len(weights) or any(len(g) < 2 for g in groups):
        raise ValueError("a contrast needs one weight per group and at least two values (models) in every group")
    means = [sum(g) / len(g) for g in groups]
    parts = [w * w * (sum((x - m) ** 2 for x in g) / (len(g) - 1)) / len(g) for g, w, m in zip(groups, weights, means)]
    estimate = sum(w * m for w, m in zip(weights, means))
    se = math.sqrt(sum(parts))
    if se == 0:
        return {"estimate": estimate, "se": 0.0, "df": float(sum(len(g) - 1 for g in groups)), "p": 1.0 if
                estimate == 0 else 0.0, "ci": (estimate, estimate)}
    df = sum(parts) ** 2 / sum(p * p / (len(g) - 1) for p, g in zip(parts, groups) if p > 0)
    t = estimate / se
    half = float(stats.t.ppf(1 - alpha / 2, df)) * se
    return {"estimate": estimate, "se": se, "df": df, "p": float(2 * stats.t.sf(abs(t), df)),
            "ci": (estimate - half, estimate + half)}


def _verdict(test: dict, holm_p: float) -> str:
    if holm_p < ALPHA:
        return "holds" if test["estimate"] > 0 else "the opposite holds"
    lo, hi = test["ci"]
    return "not shown, and no difference as large as 2 points" if -DELTA < lo and hi < DELTA else \
        "not shown: the data cannot tell"


def _by_cell(record: Mapping, value) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {c: [] for c in CELLS}
    for m in sorted(record["models"], key=lambda r: r["seed"]):
        out[m["cell"]].append(value(m))
    return out


def analyse(record: Mapping) -> dict:
    """The plan's primary test on ``record`` (:func:`collect`'s): H_I and H_R, Holm at :data:`ALPHA`, verdicts by
    the plan's rule; then the exploratory analyses (``"exploratory"``).  A ValueError when a primary cell lacks
    one of :data:`PRIMARY_SEEDS`."""
    seeds = {c: sorted(m["seed"] for m in record["models"] if m["cell"] == c) for c in CELLS}
    missing = {c: sorted(set(PRIMARY_SEEDS) - set(seeds[c])) for c in PRIMARY if set(PRIMARY_SEEDS) - set(seeds[c])}
    if missing:
        raise ValueError(f"the primary design is incomplete (missing seeds {missing}): the plan is tested on all "
                         f"{len(PRIMARY_SEEDS)} seeds of every primary cell, never before")
    loss = _by_cell(record, model_loss)
    ef, er, rf, rr = (loss[c] for c in PRIMARY)
    tests = {"integrator": contrast_test([ef, er, rf, rr], [0.5, 0.5, -0.5, -0.5]),
             "refinement": contrast_test([ef, er, rf, rr], [0.5, -0.5, 0.5, -0.5])}
    adjusted = holm([tests["integrator"]["p"], tests["refinement"]["p"]])
    for (name, test), p in zip(tests.items(), adjusted):
        test.update(p_holm=p, verdict=_verdict(test, p))
    return {"primary": tests, "cells": {c: {"seeds": seeds[c], "loss": loss[c]} for c in CELLS},
            "exploratory": _exploratory(record, loss)}


def _exploratory(record: Mapping, loss: Mapping[str, list]) -> dict:
    """The plan's exploratory analyses (unadjusted; labelled so wherever shown)."""
    ef, er, rf, rr = (loss[c] for c in PRIMARY)
    acc = _by_cell(record, lambda m: 100 * m["final_accuracy"])
    out = {"interaction": contrast_test([ef, er, rf, rr], [1, -1, -1, 1]),
           "cell_loss": {c: _mean_ci(v) for c, v in loss.items() if len(v) >= 2},
           "cell_accuracy": {c: _mean_ci(v) for c, v in acc.items() if len(v) >= 2},
           "accuracy_integrator": contrast_test([acc[c] for c in PRIMARY], [0.5, 0.5, -0.5, -0.5]),
           "accuracy_refinement": contrast_test([acc[c] for c in PRIMARY], [0.5, -0.5, 0.5, -0.5])}
    for other, base in (("midpoint_fixed", "euler_fixed"), ("midpoint_fixed", "rk4_fixed"),
                        ("euler_fixed_noskip", "euler_fixed")):
        if len(loss[other]) >= 2:
            out[f"{other} - {base}"] = welch(loss[base], loss[other])
    return out


def blocks_worth(model: Mapping) -> float:
    """What a model's blocks are worth, in points: its own graph's accuracy minus that of the model with every OdeBlock
    replaced by the identity (a model whose blocks compute almost nothing gives the same output on every graph)."""
    return 100 * (model["final_accuracy"] - model["identity_accuracy"])


def post_hoc(record: Mapping, analysis: Mapping) -> dict:
    """Analyses chosen **after** the plan's test had been computed (2026-11-29; the plan's *Deviations* list them),
    shown labelled post hoc: each cell's :func:`blocks_worth` and, where the record holds it, :func:`skip_gain`, and
    the integrator's effect on L within each level of refinement (Welch, Euler-trained minus RK4-trained,
    unadjusted).  ``analysis`` is :func:`analyse`'s."""
    worth = _by_cell(record, blocks_worth)
    gains = {c: [g for g in v if g is not None]
             for c, v in _by_cell(record, lambda m: m.get("skip_gain")).items()}
    loss = {c: v["loss"] for c, v in analysis["cells"].items()}
    return {"blocks_worth": {c: _mean_ci(v) for c, v in worth.items() if len(v) >= 2},
            "skip_gain": {c: _mean_ci(v) for c, v in gains.items() if len(v) >= 2},
            "euler_minus_rk4_refined": welch(loss["rk4_refined"], loss["euler_refined"]),
            "euler_minus_rk4_fixed": welch(loss["rk4_fixed"], loss["euler_fixed"])}


def report(record: Optional[Mapping], analysis: Optional[Mapping] = None, post_hoc: Optional[Mapping] = None,
           part: str = "all"):
    """The study as its plan demands it be shown (:func:`.show.report` with the plan's :data:`PRIMARY` cells)."""
    return show.report(record, analysis, post_hoc, part, primary=PRIMARY)


def facts(analysis: Mapping, post_hoc: Optional[Mapping] = None, record: Optional[Mapping] = None) -> dict[str, str]:
    """The study's numbers as the chapter's prose says them (:func:`.show.facts` with the plan's :data:`POWER` and
    :data:`PRIMARY` cells)."""
    return show.facts(analysis, post_hoc, record, power=POWER, primary=PRIMARY)


def _mean_ci(values: Sequence[float]) -> dict:
    from scipy import stats

    n = len(values)
    m = sum(values) / n
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return {"n": n, "mean": m, "sd": sd, "ci": (m - half, m + half)}


def shipped_record() -> Optional[dict]:
    """The record that ships with the library (``results.json``), or None before the study has run."""
    return json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else None
