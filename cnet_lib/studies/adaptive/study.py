"""Adaptive steps, as numbers: does an error-controlled solver tell a continuous model from a discrete one?

**The image models.**  Each trained model is evaluated on the same held-out images on its own (trained) graph, then
with every embedded pair of the grid choosing its own steps in every OdeBlock
(:meth:`cnet_lib.core.models.ContinuousNet.manifested` with ``rtol = atol = tol``, for each ``tol`` of the grid; no
step crosses a break point of θ(t), :mod:`cnet_lib.core.adaptive`), and, for every tolerance of one pair, on a
fixed-step RK4-classic graph of equal cost (per block ``N_t = round(NFE / 4)``, the mean number of rate evaluations
the adaptive solve took; a graph that matches several tolerances is evaluated once and lists them in ``rtols``).
Recorded per evaluation (:func:`measure`): the predicted class of every image (two evaluations compare image by
image), the accuracy, and for an adaptive one per batch and block the rate evaluations (NFE), the accepted and
rejected steps, the accepted grid of the first batch and where the accepted steps of all batches end in depth-time
(a histogram of :data:`BINS` bins over [0, 1]).  The error norm of a batch is the largest per-image norm
(:mod:`cnet_lib.core.adaptive`): every image meets the tolerance, and the hardest image of a batch of
``batch_size`` sets its steps (the batch size is part of the study).  Evaluations run in float32, eagerly (an
adaptive solve decides each step on the host: no CUDA graph, no bf16 autocast, which would swamp the tolerance).

:func:`run` computes the study of the trained runs once, through the studies' one runner
(:func:`cnet_lib.studies.runner.cached_study`), in ``adaptive-<hash>.json`` beside the first run's
checkpoint, named by everything its numbers depend on (every checkpoint's SHA-256, the grid, the test split, the data
set, the device type); a shipped study stands in for it on any machine.

**The image verdict** (:data:`IMAGE_RULE`, fixed before the numbers were computed but for its minimum effect).  For
each model, with Dormand–Prince: *converged* when its predicted classes at the two tightest tolerances agree on at
least 99% of the images (else no class); the **drop**, its accuracy on its own graph minus its accuracy at the tightest tolerance,
paired image by image with its 95% interval (:func:`cnet_lib.studies.stats.paired_difference`);
**continuous** when the whole interval lies within ± the minimum effect (the book's one threshold for "keeps its
accuracy", 2 points), **discrete** when it excludes 0 and the drop is at least that either way, **undecided**
otherwise.  The solver **tells the models apart** when the RK4-trained model is continuous and the Euler-trained one
discrete (:func:`judge`).  The NFE ratio is reported beside it, never part of it.  One trained model per method: the
verdict is about these two models, not about the training methods.

**The pendulum's ODE-Nets.**  Each ODE-Net of the chapter "Is a ResNet a forward-Euler integrator?" (trained with
scheme A at Δt_data; with the table's ``controls`` also those trained on coarser data) and the true rate f are
integrated over [0, T_data] from the exact initial state by each pair at each tolerance of :data:`PENDULUM_GRIDS`
(:func:`flow_rows`; the solves of one pair advance together, :func:`adaptive_solves`, each with its own steps, as
:func:`cnet_lib.core.integrate_adaptive` takes them), against the exact elliptic solution; beside them each ODE-Net on
its own graph (:func:`own_rows`) and the same solves by torchdiffeq (:func:`torchdiffeq_rows`).  **The pendulum
verdict** (:data:`PENDULUM_RULE`, fixed before the numbers): with ``dopri5`` at the tightest tolerance an ODE-Net's
error is its *flow*'s; *converged* when the two tightest tolerances' errors differ by at most 10%; **continuous** when
the flow's error is at most twice its own graph's, **discrete** when more (:func:`judge_flows`).  All on the CPU in
float64 with one torch thread.

Numbers only: the tables, sentences, figures and the live app are :mod:`.show`'s.
"""
from __future__ import annotations

import base64
import contextlib
import math
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

import torch
from torch import nn

from ...images.data.batches import iterate_batches
from ...images.runs.image_presets import adaptive_grid, short_hash
from ...images.runs.run_loading import StudyRun, study_device
from ...images.runs.study_inputs import study_data
from ...core.adaptive import FACMAX, MaxStepsError, check_pair, propose_step
from ...core.integrate import weighted_sum
from ...core.models import ContinuousNet
from ...core.schemes import get_scheme
from ...core.validation import check_float, check_int
from ...runtime.device import full_float32, image_step_flops, threads_for, torch_threads
from ...runtime.settings import Settings, select_preset
from ...pendulum import (ODENet, ODENetFit, PendulumConfig, StackedRate, exact_solution, odenet_label, rollout,
    steps_for, train_models, true_rate)
from ..runner import Described, StudyFile, announce_recompute, cached_study, check_study_inputs, shipped_stand_ins
from ..stats import KEEP_POINTS, paired_difference

__all__ = [
    # the image models
    "BINS", "EQUAL_COST_SCHEME", "check_grid", "encode_predictions", "decode_predictions", "evaluate", "mean_nfe",
    "stages_per_step", "measure", "adaptive_rows", "equal_cost_rows", "seeds_record",
    "PREFIX", "checked_study", "study_file", "run", "study_for_shipping",
    "ImageRule", "IMAGE_RULE", "IMAGE_CLASSES", "OUTCOMES", "ModelClass", "Verdict", "classify_model", "judge",
    # the pendulum's ODE-Nets
    "PENDULUM_GRIDS", "pendulum_grid", "PendulumFlow", "pendulum_flows", "flow_rows", "own_rows", "torchdiffeq_rows",
    "PendulumRule", "PENDULUM_RULE", "judge_flows", "MemberRates", "adaptive_solves", "fixed_solves",
]

# =========================================================================== the image models: what is measured
BINS = 40
"""Bins of [0, 1] (depth-time t/T) of the histogram of where accepted steps end."""

EQUAL_COST_SCHEME = "rk4_classic"
"""The fixed-step scheme of the equal-cost graphs (4 rate evaluations per step)."""


def check_grid(grid: Mapping) -> dict:
    """``grid`` checked before any work: known pairs (embedded ones), at least two tolerances in (0, 1),
    loosest first, an equal-cost pair among the pairs, a batch size >= 1."""
    out = dict(grid)
    missing = [k for k in ("pairs", "tolerances", "equal_cost_pair", "batch_size") if k not in out]
    if missing:
        raise ValueError(f"the adaptive grid lacks {', '.join(missing)} (e.g. {adaptive_grid('smoke')})")
    out["pairs"] = tuple(check_pair(p).name for p in out["pairs"])
    tols = tuple(check_float(f"tolerances[{i}]", t, low=0, high=1, low_open=True, high_open=True, example=1e-3)
                 for i, t in enumerate(out["tolerances"]))
    if len(tols) < 2 or list(tols) != sorted(tols, reverse=True) or len(set(tols)) != len(tols):
        raise ValueError(f"tolerances must hold at least two different values, loosest first (e.g. (1e-2, 1e-4)), "
                         f"got {tols}")
    out["tolerances"] = tols
    if out["equal_cost_pair"] not in out["pairs"]:
        raise ValueError(f"equal_cost_pair {out['equal_cost_pair']!r} must be one of the pairs {out['pairs']}")
    out["batch_size"] = check_int("batch_size", out["batch_size"], low=1, example=100)
    if out.get("n_images") is not None:
        out["n_images"] = check_int("n_images", out["n_images"], low=1, example=1000)
    out.setdefault("n_images", None)
    return out


def encode_predictions(pred: torch.Tensor) -> str:
    """Predicted classes (< 256) as base64 of one byte each."""
    return base64.b64encode(bytes(pred.to(torch.uint8).cpu().tolist())).decode("ascii")


def decode_predictions(text: str) -> torch.Tensor:
    """The inverse of :func:`encode_predictions` (int64)."""
    return torch.tensor(list(base64.b64decode(text)), dtype=torch.int64)


def _threads(model: ContinuousNet, batch: int, device: torch.device, override: Optional[int]) -> Optional[int]:
    """CPU threads for a forward pass of ``model`` on ``batch`` images (a third of a training step at its
    own graph); None on a GPU."""
    if device.type != "cpu":
        return None
    blocks = list(model.blocks)
    flops = image_step_flops(model.config()["channels"], batch, blocks[0].scheme.stages, [b.n_steps for b in blocks])
    return threads_for(flops / 3, override=override)


def _histogram(grids) -> list:
    """Counts of accepted step ends (interior ones and t1; t0 left out) in :data:`BINS` bins of [0, 1]."""
    counts = [0] * BINS
    for t in grids:
        counts[min(int(t * BINS), BINS - 1)] += 1
    return counts


def evaluate(model: ContinuousNet, x, y, mean, std, batch_size: int, adaptive: bool) -> dict:
    """Predictions of ``model`` in its current manifestation on the uint8 images ``x`` (labels ``y``):
    ``accuracy, pred`` (:func:`encode_predictions`), ``seconds``; when ``adaptive``, per batch and block ``nfe,
    accepted, rejected``, the first batch's accepted grid per block (``first_grid``, t/T), the histogram of where all
    accepted steps end per block (``ends``) and the ``batch_sizes``."""
    preds, nfe, acc, rej, ends = [], [], [], [], [[] for _ in model.blocks]
    first_grid = None
    t0 = time.perf_counter()
    with torch.no_grad():
        for xb, _ in iterate_batches(x, y, batch_size, mean, std):
            preds.append(model(xb).argmax(1))
            if adaptive:
                stats = model.solve_stats
                nfe.append([s.nfe for s in stats])
                acc.append([s.n_accepted for s in stats])
                rej.append([s.n_rejected for s in stats])
                for b, s in enumerate(stats):
                    ends[b].extend(t / s.t[-1] for t in s.t[1:])
                first_grid = first_grid or [[t / s.t[-1] for t in s.t] for s in stats]
    pred = torch.cat(preds)
    row = {"accuracy": (pred == y).float().mean().item(), "pred": encode_predictions(pred),
           "seconds": time.perf_counter() - t0}
    if adaptive:
        sizes = [len(b) for b in torch.split(torch.arange(len(y)), batch_size)]
        row.update(nfe=nfe, accepted=acc, rejected=rej, first_grid=first_grid, ends=[_histogram(e) for e in ends],
                   batch_sizes=sizes)
    return row


def mean_nfe(row: Mapping) -> list:
    """Per block, the rate evaluations per image's forward pass: each batch's NFE weighted by its size."""
    sizes = row["batch_sizes"]
    return [sum(n[b] * s for n, s in zip(row["nfe"], sizes)) / sum(sizes) for b in range(len(row["nfe"][0]))]


def stages_per_step(scheme: str) -> int:
    """The rate evaluations of one fixed step of ``scheme`` (its used stages)."""
    return len(get_scheme(scheme).used_stages)


def _study_one(model: ContinuousNet, x, y, mean, std, grid: Mapping, say: Callable) -> dict:
    """Every evaluation of one model (module doc)."""
    bs = grid["batch_size"]
    own = evaluate(model, x, y, mean, std, bs, adaptive=False)
    own.update(kind="trained", nfe=[b.scheme.stages * b.n_steps for b in model.blocks])
    rows = [own]
    say(f"its own graph: accuracy {own['accuracy']:.4f}")
    for pair in grid["pairs"]:
        for tol in grid["tolerances"]:
            with model.manifested(pair, rtol=tol, atol=tol):
                row = evaluate(model, x, y, mean, std, bs, adaptive=True)
            row.update(kind="adaptive", pair=pair, rtol=tol, atol=tol)
            rows.append(row)
            say(f"{pair} at rtol = atol = {tol:g}: accuracy {row['accuracy']:.4f}, "
                f"NFE per block {[round(v, 1) for v in mean_nfe(row)]}")
    done: dict = {}
    per_step = stages_per_step(EQUAL_COST_SCHEME)
    for row in [r for r in rows if r.get("pair") == grid["equal_cost_pair"]]:
        n_steps = tuple(max(1, round(v / per_step)) for v in mean_nfe(row))
        if n_steps in done:  # the same graph matches several tolerances: evaluated once
            done[n_steps]["rtols"].append(row["rtol"])
            continue
        with model.manifested(EQUAL_COST_SCHEME, list(n_steps)):
            fixed = evaluate(model, x, y, mean, std, bs, adaptive=False)
        fixed.update(kind="equal_cost", pair=row["pair"], rtols=[row["rtol"]], scheme=EQUAL_COST_SCHEME,
                     n_steps=list(n_steps), nfe=[per_step * n for n in n_steps])
        rows.append(fixed)
        done[n_steps] = fixed
        say(f"{EQUAL_COST_SCHEME} at N_t = {list(n_steps)} (the cost of {row['pair']} at {row['rtol']:g}): "
            f"accuracy {fixed['accuracy']:.4f}")
    return {"graph": [list(b.manifestation) for b in model.blocks], "n_basis": [b.n_basis for b in model.blocks],
            "rows": rows}


def measure(models: Mapping[str, ContinuousNet], x: torch.Tensor, y: torch.Tensor, mean: torch.Tensor,
            std: torch.Tensor, grid: Mapping, *, threads: Optional[int] = None,
            progress: Optional[Callable[[str], None]] = None) -> dict:
    """The study of every model on the same uint8 test images ``x`` (labels ``y``; the first ``n_images`` of the
    grid when it names a number), on their device:
    ``{"n", "labels", "grid", "runs": {name: {"graph", "n_basis", "rows"}}}`` (rows: ``kind`` trained,
    adaptive or equal_cost, see the module doc), JSON-ready.  The models are left in their own
    manifestation and mode; ``progress`` receives a line per evaluation."""
    grid = check_grid(grid)
    if grid["n_images"] is not None:
        x, y = x[: grid["n_images"]], y[: grid["n_images"]]
    say = progress or (lambda line: None)
    out = {"n": len(y), "labels": encode_predictions(y), "grid": {**grid, "tolerances": list(grid["tolerances"]),
                                                                  "pairs": list(grid["pairs"])}, "runs": {}}
    for name, model in models.items():
        was_training = model.training
        model.eval()
        n_threads = _threads(model, min(grid["batch_size"], len(y)), x.device, threads)
        try:
            with torch_threads(n_threads) if n_threads else contextlib.nullcontext():
                out["runs"][name] = _study_one(model, x, y, mean, std, grid, lambda line: say(f"{name}: {line}"))
        finally:
            model.train(was_training)
    return out


def _own(study: Mapping, run: str) -> dict:
    return next(r for r in study["runs"][run]["rows"] if r["kind"] == "trained")


def adaptive_rows(study: Mapping) -> list:
    """One row per model, pair and tolerance: ``run, pair, tol, accuracy, drop`` (own − adaptive, points),
    ``changed`` (% of images whose predicted class differs from the own graph's), ``nfe`` (rate evaluations
    per image's forward pass, all blocks), ``nfe_blocks`` (per block), ``rejected`` (rejected steps per batch,
    all blocks, mean), ``seconds``; plus one row per model with ``pair = None``: its own graph."""
    out = []
    for run, res in study["runs"].items():
        own = _own(study, run)
        p_own = decode_predictions(own["pred"])
        out.append(dict(run=run, pair=None, tol=None, accuracy=own["accuracy"], drop=0.0, changed=0.0,
                        nfe=float(sum(own["nfe"])), nfe_blocks=[float(v) for v in own["nfe"]], rejected=0.0,
                        seconds=own["seconds"], graph=res["graph"]))
        for r in res["rows"]:
            if r["kind"] != "adaptive":
                continue
            pred = decode_predictions(r["pred"])
            blocks = mean_nfe(r)
            out.append(dict(run=run, pair=r["pair"], tol=r["rtol"], accuracy=r["accuracy"],
                            drop=100 * (own["accuracy"] - r["accuracy"]),
                            changed=100 * (pred != p_own).double().mean().item(), nfe=sum(blocks), nfe_blocks=blocks,
                            rejected=sum(map(sum, r["rejected"])) / len(r["rejected"]), seconds=r["seconds"]))
    return out


def equal_cost_rows(study: Mapping) -> list:
    """One row per model and tolerance of the equal-cost pair: ``run, pair, tol``, the adaptive ``accuracy``
    and ``nfe``, the fixed-step ``scheme``, ``n_steps`` (per block), ``fixed_accuracy``, ``fixed_nfe`` and
    ``agree`` (% of images both give the same class)."""
    out = []
    for run, res in study["runs"].items():
        rows = res["rows"]
        for ad in (r for r in rows if r["kind"] == "adaptive"):
            fixed = next((r for r in rows if r["kind"] == "equal_cost" and r["pair"] == ad["pair"]
                          and ad["rtol"] in r["rtols"]), None)
            if fixed is None:
                continue
            agree = (decode_predictions(ad["pred"]) == decode_predictions(fixed["pred"])).double().mean().item()
            out.append(dict(run=run, pair=ad["pair"], tol=ad["rtol"], accuracy=ad["accuracy"], nfe=sum(mean_nfe(ad)),
                            scheme=fixed["scheme"], n_steps=fixed["n_steps"], fixed_accuracy=fixed["accuracy"],
                            fixed_nfe=float(sum(fixed["nfe"])), agree=100 * agree))
    return out


def seeds_record(study: Mapping) -> dict:
    """The study in the compact form a training seed's record keeps (``seed_record(..., adaptive=...)``,
    :mod:`cnet_lib.studies.runner`), per run: ``{"n"`` (images), ``"rows"`` (:func:`adaptive_rows`),
    ``"equal_cost"`` (:func:`equal_cost_rows`)``}``: every number of the study's tables, without the per-image
    predictions."""
    rows, equal = adaptive_rows(study), equal_cost_rows(study)
    return {run: {"n": study["n"], "rows": [r for r in rows if r["run"] == run],
                  "equal_cost": [r for r in equal if r["run"] == run]} for run in study["runs"]}


# =========================================================================== the image models: computed once
PREFIX = "adaptive-"
"""The cache file's name starts with this (the ship command copies such files:
:data:`cnet_lib.cli.ship.STUDY_PREFIXES`)."""

DESCRIBED = Described("the adaptive-step study", "adaptive-step study", "computing the adaptive-step study")


def checked_study(record: Mapping) -> Mapping:
    """``record`` after checking that every run of it holds the rows the tables and figures read: a list of
    evaluations of a known kind, each with its accuracy and predictions, one of them the trained graph's; a
    ValueError (or KeyError, TypeError) says what is not (the runner then sets the file aside)."""
    for name, run in record["runs"].items():
        rows = run["rows"]
        for i, row in enumerate(rows):
            if row.get("kind") not in ("trained", "adaptive", "equal_cost") or not isinstance(row.get("pred"), str) \
                    or not isinstance(row.get("accuracy"), (int, float)):
                raise ValueError(f"row {i} of {str(name)[:40]} is not an evaluation")
        if not any(row["kind"] == "trained" for row in rows):
            raise ValueError(f"no row of {str(name)[:40]} is the trained graph's")
    return record


def _key_grid(runs: Mapping[str, StudyRun], grid: Optional[Mapping]) -> dict:
    """The grid (default: the first run's preset's), checked, as the cache key holds it."""
    first = runs[next(iter(runs))]
    g = check_grid(grid if grid is not None else adaptive_grid(first.config.preset))
    return {**g, "pairs": list(g["pairs"]), "tolerances": list(g["tolerances"])}


def _cache(runs: Mapping[str, StudyRun], grid: Mapping, device: torch.device) -> StudyFile:
    """The cache file of the study of ``runs`` over the checked ``grid`` on ``device``, beside the first run's
    checkpoint, with the key it records."""
    names = list(runs)
    first = runs[names[0]].config
    key = {"checkpoints": {n: runs[n].checkpoint_digest[:12] for n in names}, "grid": dict(grid),
           "n_test": first.n_test, "seed": first.seed, "dataset": first.dataset, "device": device.type}
    return StudyFile(runs[names[0]].out_dir / f"{PREFIX}{short_hash(key, 12)}.json", key)


def study_file(runs: Mapping[str, StudyRun], grid: Optional[Mapping] = None, device=None):
    """The cache file :func:`run` reads and writes for these arguments (the ship command copies it)."""
    check_study_inputs(runs)
    return _cache(runs, _key_grid(runs, grid), study_device(runs[next(iter(runs))], device)).path


def run(runs: Mapping[str, StudyRun], grid: Optional[Mapping] = None, *, device=None, verbose: bool = True,
        progress: bool = False) -> dict:
    """The adaptive-step study of ``runs`` (all on the same held-out images), computed once and cached (module
    doc): the dict of :func:`measure`, with ``"key"``, ``"environment"``, ``"seconds"``, ``"created_utc"`` and
    ``"tf32"``.  ``grid`` defaults to the preset's (:func:`cnet_lib.images.adaptive_grid`) and is checked first;
    ``device`` defaults to the session's; ``progress`` prints a line per evaluation."""
    names = check_study_inputs(runs)
    first = runs[names[0]]
    g, dev = _key_grid(runs, grid), study_device(first, device)
    file = _cache(runs, g, dev)

    def compute():
        announce_recompute(first, PREFIX, DESCRIBED.what)
        data = study_data(first.config, first.settings, dev, with_train=False)
        say = (lambda line: print(f"  {line}", flush=True)) if progress else None
        with full_float32():  # the chapter says float32: no TF32 convolutions on a GPU either
            study = measure({n: runs[n].model.to(dev) for n in names}, data.test_x, data.test_y, data.mean, data.std,
                            g, threads=first.config.threads, progress=say)
        return None, {**study, "tf32": False}

    done = cached_study(file, compute, DESCRIBED, fields=("runs", "labels", "n"), device=dev,
                        batch_size=g["batch_size"], read=checked_study,
                        also=shipped_stand_ins(first, PREFIX, file.key), verbose=verbose)
    study = done.record
    if verbose and done.computed:
        n_eval = sum(len(r["rows"]) for r in study["runs"].values())
        print(f"adaptive-step study: {n_eval} evaluations on {study['n']} held-out images in {study['seconds']:.1f} s"
              + (" (kept for the next time)" if done.kept else ""))
    return study


def study_for_shipping(runs: Mapping[str, StudyRun], device=None):
    """:func:`run` with a line per evaluation, then its file: what ``python -m cnet_lib ship`` ships beside the first
    run (:func:`cnet_lib.images.runs.shipping.ship_studied`, ``studies_of_all``)."""
    run(runs, verbose=True, progress=True, device=device)
    return study_file(runs, device=device)


# =========================================================================== the image models: the verdict
@dataclass(frozen=True)
class ImageRule:
    """The image verdict's fixed rule (module doc): the pair read, the minimum effect in points (the book's one
    threshold for "keeps its accuracy", :data:`cnet_lib.studies.stats.KEEP_POINTS`), the agreement that
    counts as converged, the NFE ratio that counts as more."""

    pair: str = "dopri5"
    min_effect: float = KEEP_POINTS
    agreement: float = 0.99
    nfe_ratio: float = 1.25


IMAGE_RULE = ImageRule()
"""Fixed before the study's numbers were computed, with a minimum effect of 1 point; the minimum effect is now the
book's one threshold for "keeps its accuracy" (2 points), which changes no class of the shipped models (the
CHANGELOG, issue 51)."""
IMAGE_CLASSES = ("continuous", "discrete", "undecided", "not converged")
OUTCOMES = ("tells them apart", "the other way round", "does not tell them apart", "inconclusive")


@dataclass(frozen=True)
class ModelClass:
    """One model under the rule: its class, the drop (own − adaptive, points) with its 95% interval, the
    share of images whose predicted class changes (own against adaptive), the agreement of the two tightest
    tolerances, the accuracies, the NFE per forward pass at the tightest tolerance and on its own graph."""

    run: str
    klass: str
    drop: float
    ci95: tuple
    changed: float
    agreement: float
    acc_own: float
    acc_adaptive: float
    nfe_adaptive: float
    nfe_own: float
    tol: float
    n: int


@dataclass(frozen=True)
class Verdict:
    """The verdict on models ``a`` (RK4-trained) and ``b`` (Euler-trained): each one's :class:`ModelClass`, the
    ``outcome`` (one of :data:`OUTCOMES`) and ``b``'s NFE over ``a``'s at the tightest tolerance."""

    a: str
    b: str
    rule: ImageRule
    classes: dict
    outcome: str
    nfe_ratio: float


def _rule_rows(study: Mapping, run: str, pair: str) -> tuple:
    rows = study["runs"][run]["rows"]
    own = next(r for r in rows if r["kind"] == "trained")
    adaptive = sorted((r for r in rows if r["kind"] == "adaptive" and r["pair"] == pair), key=lambda r: -r["rtol"])
    if len(adaptive) < 2:
        raise ValueError(f"the study holds {len(adaptive)} tolerance(s) of {pair!r} for {run!r}; the rule needs two")
    return own, adaptive[-2], adaptive[-1]


def classify_model(study: Mapping, run: str, rule: ImageRule = IMAGE_RULE) -> ModelClass:
    """Model ``run`` of ``study`` (:func:`measure`, :func:`run`) under ``rule``."""
    labels = decode_predictions(study["labels"])
    own, second, tight = _rule_rows(study, run, rule.pair)
    p_own, p_second, p_tight = (decode_predictions(r["pred"]) for r in (own, second, tight))
    agreement = (p_second == p_tight).double().mean().item()
    cmp = paired_difference((p_own == labels).double(), (p_tight == labels).double())
    lo, hi = cmp["ci95"]
    if agreement < rule.agreement:
        klass = "not converged"
    elif -rule.min_effect < lo and hi < rule.min_effect:
        klass = "continuous"
    elif (lo > 0 or hi < 0) and abs(cmp["diff"]) >= rule.min_effect:
        klass = "discrete"
    else:
        klass = "undecided"
    return ModelClass(run, klass, cmp["diff"], (lo, hi), 100 * (p_own != p_tight).double().mean().item(), agreement,
                      100 * own["accuracy"], 100 * tight["accuracy"], sum(mean_nfe(tight)), float(sum(own["nfe"])),
                      tight["rtol"], len(labels))


def judge(study: Mapping, a: str = "rk4_refined", b: str = "euler_fixed", rule: ImageRule = IMAGE_RULE) -> Verdict:
    """The verdict for model ``a`` (RK4-trained, refined) and ``b`` (Euler-trained), by the rule."""
    ca, cb = classify_model(study, a, rule), classify_model(study, b, rule)
    pair = (ca.klass, cb.klass)
    if pair == ("continuous", "discrete"):
        outcome = "tells them apart"
    elif pair == ("discrete", "continuous"):
        outcome = "the other way round"
    elif ca.klass == cb.klass and ca.klass in ("continuous", "discrete"):
        outcome = "does not tell them apart"
    else:
        outcome = "inconclusive"
    return Verdict(a, b, rule, {a: ca, b: cb}, outcome, cb.nfe_adaptive / ca.nfe_adaptive)


# =========================================================================== the pendulum: many solves at once
class MemberRates(nn.Module):
    """The rates of M solves evaluated at once: row m of ``x`` (M, 2) goes to ``rates[member[m]]``.

    ODE-Nets are evaluated together (:class:`cnet_lib.pendulum.StackedRate` over the members' weights); any
    other rate (the true f) is a function of ``x`` (..., 2), evaluated on every row and kept on its own."""

    def __init__(self, rates: Sequence, member: Sequence[int]):
        super().__init__()
        nets = [r for r in rates if isinstance(r, ODENet)]
        filler = nets[0] if nets else ODENet(1).double()
        self.stacked = StackedRate([rates[i] if isinstance(rates[i], ODENet) else filler for i in member]) if nets else None
        self.others = [(rates[i], torch.tensor([j == i for j in member]).unsqueeze(1))
                       for i in sorted(set(member)) if not isinstance(rates[i], ODENet)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.stacked(x) if self.stacked is not None else torch.zeros_like(x)
        for rate, rows in self.others:
            out = torch.where(rows, rate(x), out)
        return out


def _rms_rows(z: torch.Tensor) -> list:
    """The RMS of each row (inf where a row is not finite), as :func:`cnet_lib.core.adaptive.error_norm`
    measures a single state."""
    finite = torch.isfinite(z).all(1)
    return torch.where(finite, torch.nan_to_num(z).square().mean(1).sqrt(), torch.inf).tolist()


def _initial_steps(rate, x0, f0, rtol, atol, q: int, h_max: float) -> list:
    """HNW's first step of every solve (:func:`cnet_lib.core.adaptive.initial_step`, row by row)."""
    scale = atol + rtol * x0.abs()
    d0, d1 = _rms_rows(x0 / scale), _rms_rows(f0 / scale)
    h0 = [min(1e-6 if a < 1e-5 or b < 1e-5 or not math.isfinite(b) else 0.01 * a / b, h_max) for a, b in zip(d0, d1)]
    h0_t = torch.tensor(h0, dtype=x0.dtype).unsqueeze(1)
    f1 = rate(x0 + h0_t * f0)
    d2 = [d / h for d, h in zip(_rms_rows((f1 - f0) / scale), h0)]
    out = []
    for h, b1, b2 in zip(h0, d1, d2):
        big = max(b1, b2)
        h1 = max(1e-6, h * 1e-3) if big <= 1e-15 else (0.01 / big) ** (1.0 / (q + 1))
        out.append(min(100 * h, h1, h_max))
    return out


class _Solves:
    """The per-solve state of :func:`adaptive_solves` in Python floats: time, step, facmax and counters."""

    def __init__(self, h: list, t_end: float, max_steps: int, stages: int):
        M = len(h)
        self.h, self.t, self.facmax = list(h), [0.0] * M, [FACMAX] * M
        self.nfe, self.accepted, self.rejected = [2] * M, [0] * M, [0] * M  # k1 and the first step's trial
        self.active = list(range(M))
        self.t_end, self.max_steps, self.stages = t_end, max_steps, stages

    def tries(self, pair: str) -> tuple:
        """``(h_try, clipped)`` of every solve (0 for a finished one), checked like one solve's."""
        h_try, clipped = [0.0] * len(self.h), [False] * len(self.h)
        for m in self.active:
            t, h = self.t[m], self.h[m]
            if self.accepted[m] + self.rejected[m] >= self.max_steps:
                raise MaxStepsError(f"the adaptive solve {m} with {pair} stopped after max_steps = {self.max_steps} "
                                    f"steps at t = {t:.6g}: loosen its tolerances or allow more steps")
            clipped[m] = t + h >= self.t_end
            h_try[m] = self.t_end - t if clipped[m] else h
            if t + h_try[m] == t:
                raise FloatingPointError(f"the adaptive step of solve {m} underflowed at t = {t!r} ({pair})")
        return h_try, clipped

    def decide(self, errs: list, h_try: list, clipped: list, q: int) -> list:
        """Accept or reject each active solve's attempt; returns the accepted solves."""
        accepted = []
        for m in self.active:
            self.nfe[m] += self.stages - 1
            if errs[m] > 1:
                self.rejected[m] += 1
                self.h[m], self.facmax[m] = propose_step(h_try[m], errs[m], q, facmax=1.0), 1.0
                continue
            accepted.append(m)
            self.accepted[m] += 1
            self.t[m] = self.t_end if clipped[m] else self.t[m] + h_try[m]
            h_next = propose_step(h_try[m], errs[m], q, self.facmax[m])
            self.h[m], self.facmax[m] = (max(h_next, self.h[m]) if clipped[m] else h_next), FACMAX
        self.active = [m for m in self.active if self.t[m] < self.t_end]
        return accepted


def adaptive_solves(rate: Callable, x0: torch.Tensor, pair: str, t_end: float, rtol: Sequence[float],
                    atol: Sequence[float], max_steps: int = 10_000) -> tuple:
    """Solve ``x' = rate(x)`` row by row from ``x0`` (M, 2) over [0, t_end] with the FSAL ``pair``, row m with
    tolerances ``rtol[m]``, ``atol[m]``, all rows advancing together: per attempt the pair's stages run for every
    solve at once, and each solve accepts, rejects and chooses its next step on its own with the rules of
    :func:`cnet_lib.core.integrate_adaptive` (:mod:`cnet_lib.core.adaptive`; one interval, no break points); a
    finished solve's row is carried along unchanged.  Each solve equals its own ``integrate_adaptive`` up to the
    round-off of the batched products.  Returns ``(x at t_end (M, 2), stats)``, ``stats`` a list of dicts ``nfe,
    n_accepted, n_rejected`` per row."""
    tab = check_pair(pair)
    if not tab.fsal:
        raise ValueError(f"adaptive_solves needs a pair whose last stage is the next first (FSAL); {tab.name} is not")
    q, M = tab.error_order, x0.shape[0]
    rt = torch.tensor(list(rtol), dtype=x0.dtype).unsqueeze(1)
    at = torch.tensor(list(atol), dtype=x0.dtype).unsqueeze(1)
    with torch.no_grad():
        x, k1 = x0.clone(), rate(x0)
        state = _Solves(_initial_steps(rate, x, k1, rt, at, q, float(t_end)), float(t_end), max_steps, tab.stages)
        while state.active:
            h_try, clipped = state.tries(tab.name)
            H = torch.tensor(h_try, dtype=x.dtype).unsqueeze(1)
            ks = [k1] + [None] * (tab.stages - 1)
            for i in range(1, tab.stages):
                ks[i] = rate(x + H * weighted_sum(tab.float_a[i], ks) if tab.float_a[i] else x)
            y1, e = x + H * weighted_sum(tab.float_b, ks), H * weighted_sum(tab.float_error, ks)
            errs = _rms_rows(e / (at + rt * torch.maximum(x.abs(), y1.abs())))
            taken = state.decide(errs, h_try, clipped, q)
            if taken:
                rows = torch.zeros(M, 1, dtype=torch.bool)
                rows[taken] = True
                x, k1 = torch.where(rows, y1, x), torch.where(rows, ks[-1], k1)
    stats = [dict(nfe=state.nfe[m], n_accepted=state.accepted[m], n_rejected=state.rejected[m]) for m in range(M)]
    return x, stats


def fixed_solves(rate: Callable, x0: torch.Tensor, scheme: str, t_end: float, n_steps: Sequence[int]) -> torch.Tensor:
    """Row m of ``x0`` (M, 2) rolled out with ``scheme`` for ``n_steps[m]`` equal steps over [0, t_end], as
    :func:`cnet_lib.integrate` does it, all rows together; returns the states at t_end (M, 2)."""
    tab = get_scheme(scheme)
    H = torch.tensor([float(t_end) / n for n in n_steps], dtype=x0.dtype).unsqueeze(1)
    steps = torch.tensor(list(n_steps)).unsqueeze(1)
    x = x0.clone()
    with torch.no_grad():
        for k in range(max(n_steps)):
            ks = [None] * tab.stages
            for i in tab.used_stages:
                ks[i] = rate(x + H * weighted_sum(tab.float_a[i], ks) if tab.float_a[i] else x)
            x = torch.where(steps > k, x + H * weighted_sum(tab.float_b, ks), x)
    return x


# =========================================================================== the pendulum: the flows
PENDULUM_GRIDS = {
    "smoke": dict(pairs=("bosh3", "dopri5"), tolerances=(1e-2, 1e-3), n_iters=40, controls=False),
    "cpu": dict(pairs=("bosh3", "dopri5"), tolerances=(1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9), n_iters=None,
                controls=False),
    "gpu": dict(pairs=("bosh3", "dopri5"), tolerances=(1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9), n_iters=None,
                controls=True),
    "paper": dict(pairs=("bosh3", "dopri5"), tolerances=(1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10),
                  n_iters=None, controls=True),
}
"""Per preset: the pairs, the tolerances (loosest first), the training iterations of the ODE-Nets (None: the
pendulum preset's own, so the models are those of the pendulum chapters; ``smoke`` trains a few for seconds)
and whether the coarse-Δt_data controls are included (their training takes minutes on a CPU: not in ``cpu``)."""


def pendulum_grid(preset: str) -> dict:
    """The entry of :data:`PENDULUM_GRIDS` for ``preset``."""
    return dict(select_preset(PENDULUM_GRIDS, preset))


@dataclass(frozen=True)
class PendulumFlow:
    """A rate to integrate: ``name`` (a key), ``label`` (the book's words), ``rate`` (G(x)), ``trained`` (the
    training scheme, None for the true rate) and ``dt_data`` (its training Δt_data)."""

    name: str
    label: str
    rate: object
    trained: Optional[str]
    dt_data: Optional[float]


def pendulum_flows(cfg: PendulumConfig, table: Mapping, models: Optional[Mapping[str, ODENetFit]] = None,
                   progress: bool = True, settings: Optional[Settings] = None) -> list:
    """The true rate f and every ODE-Net the table (:func:`pendulum_grid`) asks for
    (:func:`cnet_lib.pendulum.train_models`, with ``settings``: obtained once per machine; or ``models`` as given for
    the main ones): ``[PendulumFlow]``."""
    n_iters = table.get("n_iters")
    main = dict(models) if models is not None else train_models(cfg, n_iters=n_iters, progress=progress, settings=settings)
    out = [PendulumFlow("true_f", "the true rate f", true_rate, None, None)]
    out += [PendulumFlow(a, odenet_label(a), fit.model, a, fit.dt_data) for a, fit in main.items()]
    if table.get("controls"):
        iters = cfg.control_iters if n_iters is None else n_iters
        for dtd in cfg.control_dt_data:
            for a, fit in train_models(cfg, cfg.control_schemes, dt_data=dtd, n_iters=iters, progress=progress,
                                       settings=settings).items():
                out.append(PendulumFlow(f"{a}@{dtd:g}", f"{odenet_label(a)}, Δt_data = {dtd:g}", fit.model, a, dtd))
    return out


def _x0(cfg: PendulumConfig) -> torch.Tensor:
    return torch.tensor(exact_solution(0.0, cfg.rho0, cfg.g), dtype=torch.float64)


def _error(x: torch.Tensor, cfg: PendulumConfig) -> float:
    x = x.detach()
    if not bool(torch.isfinite(x).all()):
        return math.inf
    return float(torch.linalg.norm(x - torch.tensor(exact_solution(cfg.T_data, cfg.rho0, cfg.g), dtype=torch.float64)))


def flow_rows(flows: Sequence[PendulumFlow], cfg: PendulumConfig, table: Mapping) -> list:
    """Rows ``name, label, trained, dt_data, pair, tol, error, nfe, n_accepted, n_rejected, fixed_n_steps,
    fixed_error`` (RK4-classic with ``N_t = round(NFE / 4)`` steps over [0, T_data]), one per flow, pair and
    tolerance; E = ‖x(T_data) − x_exact(T_data)‖₂.  The solves of one pair run together (:func:`adaptive_solves`,
    then :func:`fixed_solves`), each with its own steps."""
    members = [(i, tol) for i in range(len(flows)) for tol in table["tolerances"]]
    rate = MemberRates([fl.rate for fl in flows], [i for i, _ in members])
    x0 = _x0(cfg).expand(len(members), 2).clone()
    tols = [tol for _, tol in members]
    found = {}
    with torch_threads(1), torch.no_grad():
        for pair in table["pairs"]:
            x, stats = adaptive_solves(rate, x0, pair, cfg.T_data, tols, tols, max_steps=200_000)
            n_fixed = [max(1, round(st["nfe"] / 4)) for st in stats]
            fixed = fixed_solves(rate, x0, "rk4_classic", cfg.T_data, n_fixed)
            for m, (i, tol) in enumerate(members):
                found[i, pair, tol] = dict(error=_error(x[m], cfg), **stats[m], fixed_n_steps=n_fixed[m],
                                           fixed_error=_error(fixed[m], cfg))
    return [dict(name=fl.name, label=fl.label, trained=fl.trained, dt_data=fl.dt_data, pair=pair, tol=tol,
                 **found[i, pair, tol]) for i, fl in enumerate(flows) for pair in table["pairs"] for tol in table["tolerances"]]


def own_rows(flows: Sequence[PendulumFlow], cfg: PendulumConfig) -> list:
    """Per ODE-Net: ``name, label, trained, dt_data, error_own`` (its training scheme at its Δt_data over
    [0, T_data]) and ``nfe_own`` (stages × N_t)."""
    out = []
    with torch_threads(1):
        for fl in flows:
            if fl.trained is None:
                continue
            n = steps_for(cfg.T_data, fl.dt_data)
            path = rollout(fl.rate, _x0(cfg), fl.trained, fl.dt_data, n)
            out.append(dict(name=fl.name, label=fl.label, trained=fl.trained, dt_data=fl.dt_data,
                            error_own=_error(path[-1], cfg), nfe_own=get_scheme(fl.trained).stages * n))
    return out


def torchdiffeq_rows(flows: Sequence[PendulumFlow], cfg: PendulumConfig, tolerances: Sequence[float],
                     pair: str = "dopri5") -> list:
    """The same solves with torchdiffeq's ``pair`` (its own controller, RMS norm and, for dopri5, Shampine's
    error row; landing on T_data with ``step_t``): rows ``name, label, tol, difference`` (‖ours − theirs‖ at T_data),
    ``error, error_torchdiffeq`` (against the exact solution), ``nfe, nfe_torchdiffeq``."""
    from torchdiffeq import odeint  # imported here, as the ODE-Net's training step does

    x0, rows = _x0(cfg), []
    span = torch.tensor([0.0, cfg.T_data], dtype=torch.float64)
    members = [(i, tol) for i in range(len(flows)) for tol in tolerances]
    with torch_threads(1), torch.no_grad():
        ours, stats = adaptive_solves(MemberRates([fl.rate for fl in flows], [i for i, _ in members]),
                                      x0.expand(len(members), 2).clone(), pair, cfg.T_data, [t for _, t in members],
                                      [t for _, t in members], max_steps=200_000)
        for m, (i, tol) in enumerate(members):
            count = [0]

            def f(t, x, G=flows[i].rate):
                count[0] += 1
                return G(x)

            theirs = odeint(f, x0, span, method=pair, rtol=tol, atol=tol, options=dict(step_t=[cfg.T_data]))[-1]
            rows.append(dict(name=flows[i].name, label=flows[i].label, tol=tol,
                             difference=float(torch.linalg.norm(ours[m] - theirs)), error=_error(ours[m], cfg),
                             error_torchdiffeq=_error(theirs, cfg), nfe=stats[m]["nfe"], nfe_torchdiffeq=count[0]))
    return rows


@dataclass(frozen=True)
class PendulumRule:
    """The pendulum verdict's fixed rule (module doc): the pair read, the factor between the flow error and the
    own graph's error, and the relative change between the two tightest tolerances that counts as converged."""

    pair: str = "dopri5"
    factor: float = 2.0
    converged: float = 0.1


PENDULUM_RULE = PendulumRule()
"""Fixed before the study's numbers were computed."""


def judge_flows(rows: Sequence[Mapping], own: Sequence[Mapping], rule: PendulumRule = PENDULUM_RULE) -> list:
    """Per ODE-Net: ``name, label, trained, dt_data, tol, error_flow`` (``rule.pair`` at the tightest tolerance),
    ``error_second`` (at the next one), ``error_own, nfe_flow, nfe_own, ratio`` (flow / own) and ``klass``:
    ``continuous``, ``discrete`` or ``not converged`` (module doc)."""
    out = []
    for o in own:
        mine = sorted((r for r in rows if r["name"] == o["name"] and r["pair"] == rule.pair), key=lambda r: -r["tol"])
        if len(mine) < 2:
            raise ValueError(f"{o['label']}: {len(mine)} tolerance(s) of {rule.pair}; the rule needs two")
        tight, second = mine[-1], mine[-2]
        ratio = tight["error"] / o["error_own"] if o["error_own"] > 0 else math.inf
        change = abs(tight["error"] - second["error"]) / max(tight["error"], second["error"], 1e-300)
        if not (math.isfinite(tight["error"]) and change <= rule.converged):
            klass = "not converged"
        else:
            klass = "continuous" if ratio <= rule.factor else "discrete"
        out.append(dict(name=o["name"], label=o["label"], trained=o["trained"], dt_data=o["dt_data"], tol=tight["tol"],
                        error_flow=tight["error"], error_second=second["error"], error_own=o["error_own"],
                        nfe_flow=tight["nfe"], nfe_own=o["nfe_own"], ratio=ratio, klass=klass))
    return out
