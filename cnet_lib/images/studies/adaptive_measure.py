"""Adaptive steps on the trained image models: does an error-controlled solver tell a continuous model
from a discrete one?

Each trained model is evaluated on the same test images on its own (trained) graph and then with every
embedded pair of the grid choosing its own steps in every OdeBlock (:meth:`cnet_lib.core.models.ContinuousNet.manifested`
with ``rtol = atol = tol``, for each ``tol`` of the grid; no step crosses a break point of θ(t), see
:mod:`cnet_lib.core.adaptive`), and, for every tolerance of one pair, on a fixed-step RK4-classic graph of
equal cost (per block ``N_t = round(NFE / 4)``, the mean number of rate evaluations the adaptive solve took;
a graph that matches several tolerances is evaluated once and lists them in ``rtols``).

What is recorded per evaluation: the predicted class of every image (so that two evaluations can be
compared image by image), the accuracy, and for an adaptive one per batch and block the number of rate
evaluations (NFE), of accepted and rejected steps, the accepted grid of the first batch, and where the
accepted steps of all batches end in depth-time (a histogram of :data:`BINS` bins over [0, 1]).

**Batches.**  The error norm of a batch is the largest per-image norm (:mod:`cnet_lib.core.step_control`):
every image meets the tolerance, and the steps, so the NFE, are set by the hardest image of its batch of
``batch_size`` images (the grid's; it is part of the study).  Evaluations run in float32, eagerly (an
adaptive solve decides each step on the host: no CUDA graph, no bf16 autocast, which would swamp the tolerance).
"""
from __future__ import annotations

import base64
import contextlib
import time
from typing import Callable, Mapping, Optional

import torch

from ...core.adaptive import check_pair
from ...core.models import ContinuousNet
from ...core.schemes import get_scheme
from ...core.validation import check_float, check_int
from ...runtime.threads import image_step_flops, threads_for, torch_threads
from ..data.batches import iterate_batches
from ..runs.image_presets import adaptive_grid

__all__ = ["BINS", "EQUAL_COST_SCHEME", "check_adaptive_grid", "adaptive_study", "mean_nfe", "stages_per_step", "encode_predictions",
           "decode_predictions", "adaptive_rows", "equal_cost_rows"]

BINS = 40
"""Bins of [0, 1] (depth-time t/T) of the histogram of where accepted steps end."""

EQUAL_COST_SCHEME = "rk4_classic"
"""The fixed-step scheme of the equal-cost graphs (4 rate evaluations per step)."""


def check_adaptive_grid(grid: Mapping) -> dict:
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


def _evaluate(model: ContinuousNet, x, y, mean, std, batch_size: int, adaptive: bool) -> dict:
    """Predictions of ``model`` (its current manifestation) on the uint8 images ``x``, with the solve
    statistics of every batch when ``adaptive``."""
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


def _study_one(model: ContinuousNet, x, y, mean, std, grid: Mapping, say: Callable) -> dict:
    """Every evaluation of one model (see the module doc)."""
    bs = grid["batch_size"]
    own = _evaluate(model, x, y, mean, std, bs, adaptive=False)
    own.update(kind="trained", nfe=[b.scheme.stages * b.n_steps for b in model.blocks])
    rows = [own]
    say(f"its own graph: accuracy {own['accuracy']:.4f}")
    for pair in grid["pairs"]:
        for tol in grid["tolerances"]:
            with model.manifested(pair, rtol=tol, atol=tol):
                row = _evaluate(model, x, y, mean, std, bs, adaptive=True)
            row.update(kind="adaptive", pair=pair, rtol=tol, atol=tol)
            rows.append(row)
            say(f"{pair} at rtol = atol = {tol:g}: accuracy {row['accuracy']:.4f}, "
                f"NFE per block {[round(v, 1) for v in mean_nfe(row)]}")
    done: dict = {}
    for row in [r for r in rows if r.get("pair") == grid["equal_cost_pair"]]:
        n_steps = tuple(max(1, round(v / stages_per_step(EQUAL_COST_SCHEME))) for v in mean_nfe(row))
        if n_steps in done:  # the same graph matches several tolerances: evaluated once
            done[n_steps]["rtols"].append(row["rtol"])
            continue
        with model.manifested(EQUAL_COST_SCHEME, list(n_steps)):
            fixed = _evaluate(model, x, y, mean, std, bs, adaptive=False)
        fixed.update(kind="equal_cost", pair=row["pair"], rtols=[row["rtol"]], scheme=EQUAL_COST_SCHEME,
                     n_steps=list(n_steps), nfe=[stages_per_step(EQUAL_COST_SCHEME) * n for n in n_steps])
        rows.append(fixed)
        done[n_steps] = fixed
        say(f"{EQUAL_COST_SCHEME} at N_t = {list(n_steps)} (the cost of {row['pair']} at {row['rtol']:g}): "
            f"accuracy {fixed['accuracy']:.4f}")
    return {"graph": [list(b.manifestation) for b in model.blocks], "n_basis": [b.n_basis for b in model.blocks],
            "rows": rows}


def stages_per_step(scheme: str) -> int:
    """The rate evaluations of one fixed step of ``scheme`` (its used stages)."""
    return len(get_scheme(scheme).used_stages)


def adaptive_study(models: Mapping[str, ContinuousNet], x: torch.Tensor, y: torch.Tensor, mean: torch.Tensor,
                   std: torch.Tensor, grid: Mapping, *, threads: Optional[int] = None,
                   progress: Optional[Callable[[str], None]] = None) -> dict:
    """The study of every model on the same uint8 test images ``x`` (labels ``y``; the first ``n_images`` of the
    grid when it names a number), on their device:
    ``{"n", "labels", "grid", "runs": {name: {"graph", "n_basis", "rows"}}}`` (rows: ``kind`` trained,
    adaptive or equal_cost, see the module doc), JSON-ready.  The models are left in their own
    manifestation and mode; ``progress`` receives a line per evaluation."""
    grid = check_adaptive_grid(grid)
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
