"""The live app of the manifestation chapter: a trained ContinuousNet evaluated on any graph
(:func:`live_sweep_app`) while the reader moves the controls; the robustness chapter's app is in
:mod:`cnet_lib.draw.robustness_app`.  :func:`cnet_lib.draw.widgets.live_app` turns the controls into
widgets, and the static book shows the figure given as ``static_fallback_fig`` in their place.

Every interaction answers at once (:mod:`cnet_lib.draw.quick_answers`): from the run's cached sweep
when the graph is one the sweep evaluated, else from the first images that a fixed budget of
floating-point operations allows, with the ± of that sample, refined to all of the app's images in the
background (:class:`cnet_lib.draw.progressive.Progressive`).
"""
from __future__ import annotations

import copy
import math
from typing import Mapping, Optional

import plotly.graph_objects as go
import torch

from ..images.runs.image_presets import sweep_grid
from ..images.runs.study_inputs import study_data
from ..images.runs.study_run import StudyRun, study_device
from ..images.studies.checks import check_study_inputs
from ..images.training.evaluation import Evaluator
from ..runtime.vocabulary import run_label
from .progressive import Progressive
from .quick_answers import Estimate, estimate_from, quick_size, sweep_answer
from .widgets import Choice, IntRange, live_app

__all__ = ["live_sweep_app", "evaluate_in_chunks", "mosaic"]


def evaluate_in_chunks(ev: Evaluator, model, x, y, mean, std, start: int, stale, chunk: int = 200,
                       transform=None) -> Optional[torch.Tensor]:
    """Per-image outcomes of ``model`` on ``x[start:]``, ``chunk`` images at a time, checking ``stale()``
    before each chunk (``None`` as soon as it says the answer is no longer wanted)."""
    parts = []
    for i in range(start, len(y), chunk):
        if stale():
            return None
        parts.append(ev.correct(model, x[i:i + chunk], y[i:i + chunk], mean, std, batch_size=chunk, transform=transform)[0])
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.bool, device=y.device)


def _titles(pred: torch.Tensor, y: torch.Tensor, classes) -> list:
    """``✓ cat`` / ``✗ dog``: each thumbnail's predicted class, marked right or wrong."""
    return [f"{'✓' if p == t else '✗'} {classes[p]}" for p, t in zip(pred.cpu().tolist(), y.cpu().tolist())]


def mosaic(images: torch.Tensor, cols: int, pad: int = 2) -> torch.Tensor:
    """The uint8 images ``images`` (n, 3, H, W) tiled row by row into one (rows·(H + pad) − pad,
    cols·(W + pad) − pad, 3) image with white gutters, for one plotly Image trace instead of n subplots."""
    n, c, h, w = images.shape
    rows = math.ceil(n / cols)
    out = torch.full((rows * (h + pad) - pad, cols * (w + pad) - pad, c), 255, dtype=torch.uint8)
    for i in range(n):
        r, k = divmod(i, cols)
        out[r * (h + pad):r * (h + pad) + h, k * (w + pad):k * (w + pad) + w] = images[i].permute(1, 2, 0)
    return out


def _figure(x, titles: list, n_show: int, heading: str) -> go.Figure:
    """The first ``n_show`` held-out images as one mosaic, each labelled above with its predicted class."""
    cols, pad = min(n_show, 6), 2
    h, w = x.shape[-2:]
    fig = go.Figure(go.Image(z=mosaic(x[:n_show].cpu(), cols, pad).numpy(), hoverinfo="skip"))
    for i, title in enumerate(titles):
        r, k = divmod(i, cols)
        fig.add_annotation(x=k * (w + pad) + w / 2, y=r * (h + pad), text=title, showarrow=False, yanchor="bottom",
                           font=dict(size=11))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(title=heading, height=330, margin=dict(t=90, l=10, r=10, b=10))
    return fig


def live_sweep_app(runs: Mapping[str, StudyRun], static_fallback_fig, device=None, n_images: int = 1000, n_show: int = 12,
                   sweeps: Optional[Mapping[str, list]] = None):
    """A live app (model, scheme, N_t, compression) over the trained models on ``device`` (default: the
    model's), showing the accuracy with its ± and a few held-out images with their predicted class.

    An interaction is answered from ``sweeps`` (the runs' cached sweeps, :func:`cnet_lib.images.sweep_runs`;
    measured on all of their held-out images) when it evaluated that graph, else from the first images of the
    ``n_images`` the app holds that :func:`cnet_lib.draw.quick_answers.quick_size` allows, and refined to
    all ``n_images`` in the background."""
    check_study_inputs(runs, n_images, n_show)
    first = next(iter(runs.values()))
    dev = study_device(first, device)
    data = study_data(first.config, first.settings, dev, with_train=False)
    n_sweep = len(data.test_y)
    x, y = data.test_x[:n_images], data.test_y[:n_images]
    grid = sweep_grid(first.config.preset)
    max_m = max(b.n_basis for r in runs.values() for b in r.model.blocks)
    comp_opts = [("none (trained θ)", 0)] + [(f"M = {m}", m) for m in sorted(set(grid.get("compress", ())) | {1, 2, 4}) if m < max_m]
    ev = Evaluator()

    def figure(graph: tuple, titles: list, est: Estimate) -> go.Figure:
        model, scheme, n_steps, compress = graph
        ident = compress and f"θ compressed to M = {compress}, " or ""
        more = "" if est.final else "; all of them follow"
        return _figure(x, titles, n_show, f"{run_label(model)}: {ident}{scheme}, N_t = {n_steps}: accuracy {est.text()}"
                                          f"{more}; predicted classes of the first {n_show}")

    def render(model, scheme, n_steps, compress):
        n_steps = int(n_steps)
        m = copy.deepcopy(runs[model].model.to(dev))  # the background refinement keeps its own copy
        if compress:
            m.project(compress)
        m.manifest(scheme, n_steps)
        cached = sweep_answer(sweeps[model], n_sweep, scheme, n_steps, compress) if sweeps and model in sweeps else None
        n = 0 if cached is not None else quick_size(m, dev, len(y))
        k = max(n, n_show)  # the thumbnails' predictions come from the sample's forward pass
        pred = ev.predictions(m, x[:k], data.mean, data.std, batch_size=k)[0]
        titles, graph = _titles(pred[:n_show], y[:n_show], data.classes), (model, scheme, n_steps, compress)
        if cached is not None:
            return figure(graph, titles, cached)
        hits = pred[:n] == y[:n]
        source = "all images of the app" if n >= len(y) else f"first {n} of {len(y)} images"
        quick = figure(graph, titles, estimate_from(hits, source))
        if n >= len(y):
            return quick

        def refine(stale):
            rest = evaluate_in_chunks(Evaluator(), m, x, y, data.mean, data.std, n, stale)
            return None if rest is None else figure(graph, titles, estimate_from(torch.cat([hits, rest]),
                                                                                   f"all {len(y)} images of the app"))

        return Progressive(quick, refine)

    schemes = list(grid["schemes"])
    return live_app(
        {"model": Choice([(r.label, k) for k, r in runs.items()], description="model"),
         "scheme": Choice(schemes, schemes[-1], "scheme"),
         "n_steps": IntRange(1, max(grid["n_steps"]), max(grid["n_steps"]) // 2 or 1, "N_t"),
         "compress": Choice(comp_opts, 0, "compress")},
        render, static_fallback_fig, title="Evaluate a trained ContinuousNet on any graph")
