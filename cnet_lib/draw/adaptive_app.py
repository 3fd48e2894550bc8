"""The live app of the chapter "Beyond the paper II: adaptive steps": choose a trained image model, an
embedded pair and a tolerance, and the model is evaluated with adaptive steps on held-out images
(:func:`live_adaptive_app`); the static book shows :func:`fig_step_explorer`, the same view over the
study's precomputed tolerances, in its place.
"""
from __future__ import annotations

import time
from typing import Mapping, Optional

import plotly.graph_objects as go
import torch

from ..images.data.batches import iterate_batches
from ..images.runs.image_presets import adaptive_grid, live_images
from ..images.runs.study_run import StudyRun, study_device
from ..images.studies.adaptive_measure import mean_nfe
from ..images.studies.checks import check_study_inputs
from ..runtime.vocabulary import run_color, run_label
from .html_figures import below_modebar
from .image_apps import app_data
from .plotting import book_layout, dropdown_slider_figure
from .widgets import Choice, Steps, live_app

__all__ = ["LIVE_TOLERANCES", "fig_step_explorer", "live_adaptive_app"]

LIVE_TOLERANCES = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6)
"""The tolerances the live app offers (rtol = atol)."""


def _grid_traces(grids, stats, color: str) -> list:
    """One marker trace per block: the accepted step ends (t/T) of one batch at height ``block``."""
    out = []
    for b, ts in enumerate(grids):
        out.append(go.Scatter(x=list(ts), y=[b + 1] * len(ts), mode="markers+lines", line=dict(color=color, width=1),
                              marker=dict(color=color, size=8, symbol="line-ns-open", line=dict(width=2)),
                              name=f"block {b + 1}: {stats[b]}", hovertemplate="t/T = %{x:.4f}"))
    return out


def fig_step_explorer(study: Mapping, title: str = ""):
    """The static counterpart of :func:`live_adaptive_app`: a menu over model and pair, a slider over the
    study's tolerances, and for each the accepted steps of the first batch in every block (one row per block;
    the legend gives each block's NFE and rejected steps, per image and batch)."""
    frames = {}
    for run, res in study["runs"].items():
        for pair in study["grid"]["pairs"]:
            steps = {}
            for r in (r for r in res["rows"] if r["kind"] == "adaptive" and r["pair"] == pair):
                nfe = mean_nfe(r)
                rejected = [sum(batch[b] for batch in r["rejected"]) / len(r["rejected"]) for b in range(len(nfe))]
                stats = [f"NFE {n:.1f}, rejected {j:.1f}" for n, j in zip(nfe, rejected)]
                steps[f"{r['rtol']:g}"] = _grid_traces(r["first_grid"], stats, run_color(run))
            frames[f"{run_label(run)}, {pair}"] = steps
    fig = dropdown_slider_figure(frames, title=title or "Accepted steps of the first batch, per block",
                                 slider_prefix="rtol = atol = ", xaxis_title="depth-time t/T", yaxis_title="block",
                                 height=480)
    fig.update_yaxes(dtick=1, range=[0.5, len(next(iter(study["runs"].values()))["graph"]) + 0.5])
    fig.update_xaxes(range=[-0.02, 1.02])
    return fig


def _evaluate(run: StudyRun, x, y, mean, std, own_pred, pair: str, tol: float, batch_size: int) -> tuple:
    """Accuracy, agreement with the own graph, per-block NFE (per image), the first batch's grids and stats."""
    model = run.model
    preds, nfe, sizes, first = [], [], [], None
    with torch.no_grad(), model.manifested(pair, rtol=tol, atol=tol):
        for xb, _ in iterate_batches(x, y, batch_size, mean, std):
            preds.append(model(xb).argmax(1))
            stats = model.solve_stats
            nfe.append([s.nfe for s in stats])
            sizes.append(len(xb))
            first = first or stats
    pred = torch.cat(preds)
    per_block = [sum(n[b] * s for n, s in zip(nfe, sizes)) / sum(sizes) for b in range(len(nfe[0]))]
    return (pred == y).float().mean().item(), (pred == own_pred).float().mean().item(), per_block, first


def live_adaptive_app(runs: Mapping[str, StudyRun], static_fallback_fig, device=None, n_images: Optional[int] = None):
    """A live app (model, pair, tolerance): evaluates the trained model with adaptive steps on the first
    ``n_images`` held-out images (default :func:`cnet_lib.images.studies.adaptive_measure.live_images` of the preset) on
    ``device`` (default: the model's) in batches of the study's size, and shows the first batch's accepted
    steps per block with the accuracy, the share of classes unchanged from the model's own graph and the
    rate evaluations per image."""
    check_study_inputs(runs, n_images)
    first = next(iter(runs.values()))
    dev = study_device(first, device)
    data, x, y, note = app_data(first, dev, n_images or live_images(first.config.preset))
    batch = adaptive_grid(first.config.preset)["batch_size"]
    own = {}
    with torch.no_grad():
        for name, run in runs.items():
            run.model.to(dev).eval()
            own[name] = torch.cat([run.model(xb).argmax(1) for xb, _ in iterate_batches(x, y, batch, data.mean, data.std)])

    def render(model, pair, tol):
        t0 = time.perf_counter()
        acc, same, per_block, stats = _evaluate(runs[model], x, y, data.mean, data.std, own[model], pair, tol, batch)
        fig = go.Figure(_grid_traces([[t / s.t[-1] for t in s.t] for s in stats],
                                     [f"{s.n_accepted} accepted, {s.n_rejected} rejected" for s in stats],
                                     run_color(model)))
        book_layout(fig, f"{run_label(model)}, {pair}, rtol = atol = {tol:g}: accuracy {acc:.4f} on {len(y)} images, "
                         f"{100 * same:.1f}% of the classes as on its own graph; NFE per image "
                         f"{' / '.join(f'{v:.1f}' for v in per_block)} ({time.perf_counter() - t0:.1f} s)",
                    "depth-time t/T (accepted steps of the first batch)", "block", height=360, legend_below=True)
        fig.update_yaxes(dtick=1, range=[0.5, len(stats) + 0.5])
        fig.update_xaxes(range=[-0.02, 1.02])
        return below_modebar(fig, grow=True)

    grid = adaptive_grid(first.config.preset)
    return live_app(
        {"model": Choice([(r.label, k) for k, r in runs.items()], description="model"),
         "pair": Choice(list(grid["pairs"]), grid["pairs"][-1], "pair"),
         "tol": Steps([(f"{t:g}", t) for t in LIVE_TOLERANCES], 1e-3, "rtol = atol")},
        render, static_fallback_fig, title="Adaptive steps in a trained ContinuousNet" + note)
