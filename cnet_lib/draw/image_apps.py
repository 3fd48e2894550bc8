"""The live app of the manifestation chapter: a trained ContinuousNet evaluated on any graph
(:func:`live_sweep_app`) while the reader moves the controls; the robustness chapter's app is
:func:`cnet_lib.studies.robustness.show.live_app`.  :func:`cnet_lib.draw.widgets.live_app` turns the controls into
widgets, and the static book shows the figure given as ``static_fallback_fig`` in their place.

Every interaction answers at once (:mod:`cnet_lib.draw.quick_answers`): from the run's cached sweep
when the graph is one the sweep evaluated, else from the first images that a fixed budget of
floating-point operations allows, with the ± of that sample, refined to all of the app's images in the
background (:class:`cnet_lib.draw.progressive.Progressive`) within the seconds the first answer states.  An app
evaluates :func:`cnet_lib.images.live_images` of the preset's held-out images, or as many as the data folder holds
(:func:`app_data`: a small copy of the data set), and says so in its title.
"""
from __future__ import annotations

import copy
import math
import time
from typing import Mapping, Optional

import plotly.graph_objects as go
import torch

from ..images.runs.image_presets import live_images, sweep_grid
from ..images.runs.study_inputs import study_data
from ..images.runs.study_run import StudyRun, study_device
from ..images.studies.checks import check_study_inputs
from ..images.training.evaluation import Evaluator
from ..images.studies.sweep_measure import sweep_images
from ..runtime.vocabulary import run_label
from .html_figures import below_modebar
from .progressive import Progressive
from .quick_answers import Estimate, estimate_from, follow_text, quick_size, sweep_answer
from .widgets import Choice, IntRange, live_app

__all__ = ["live_sweep_app", "app_data", "swept_images", "evaluate_in_chunks", "mosaic"]


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


def mosaic(images: torch.Tensor, cols: int, pad: int = 2, row_pad: Optional[int] = None) -> torch.Tensor:
    """The uint8 images ``images`` (n, 3, H, W) tiled row by row into one (rows·(H + row_pad) − row_pad,
    cols·(W + pad) − pad, 3) image with white gutters (``row_pad`` between rows, default ``pad``), for one plotly
    Image trace instead of n subplots."""
    n, c, h, w = images.shape
    rows, rp = math.ceil(n / cols), pad if row_pad is None else row_pad
    out = torch.full((rows * (h + rp) - rp, cols * (w + pad) - pad, c), 255, dtype=torch.uint8)
    for i in range(n):
        r, k = divmod(i, cols)
        out[r * (h + rp):r * (h + rp) + h, k * (w + pad):k * (w + pad) + w] = images[i].permute(1, 2, 0)
    return out


def _figure(x, titles: list, n_show: int, heading: str) -> go.Figure:
    """The first ``n_show`` held-out images as one mosaic, each labelled above with its predicted class, under
    ``heading`` broken into lines at its phrases and placed below plotly's toolbar (:func:`below_modebar`: the same
    in the book's renderer and in Colab's)."""
    cols, pad = min(n_show, 4), 2  # four columns: a label stays within its image down to a phone's width
    h, w = x.shape[-2:]
    row_pad = h // 2  # room above each row of images for its labels
    fig = go.Figure(go.Image(z=mosaic(x[:n_show].cpu(), cols, pad, row_pad).numpy(), hoverinfo="skip"))
    for i, title in enumerate(titles):
        r, k = divmod(i, cols)
        fig.add_annotation(x=k * (w + pad) + w / 2, y=r * (h + row_pad), text=title, showarrow=False, yanchor="bottom",
                           font=dict(size=11))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(title=heading, height=380, margin=dict(t=50, l=10, r=10, b=10))
    return below_modebar(fig, grow=True)


def app_data(first: StudyRun, device, n_images: int) -> tuple:
    """``(data, x, y, note)`` of a live app on ``device``: the run's held-out images (:func:`study_data`), of which
    the app takes the first ``n_images``, as many as the data folder holds (a small copy of the data set may hold
    fewer than the preset's); ``note`` says so in the app's title then (``""`` otherwise)."""
    data = study_data(first.config, first.settings, device, with_train=False)
    want, have = first.config.n_test, len(data.test_y)
    note = f" (on the {have} test images this data copy holds, of the preset's {want})" if want and have < want else ""
    return data, data.test_x[:n_images], data.test_y[:n_images], note


def swept_images(rows, default: int) -> int:
    """How many images a cached sweep's ``rows`` were measured on (:func:`cnet_lib.images.sweep_images`), else
    ``default``."""
    return sweep_images(rows) if any(r.get("ms_per_image") for r in rows) else default


def live_sweep_app(runs: Mapping[str, StudyRun], static_fallback_fig, device=None, n_images: Optional[int] = None,
                   n_show: int = 12, sweeps: Optional[Mapping[str, list]] = None):
    """A live app (model, scheme, N_t, compression) over the trained models on ``device`` (default: the
    model's), showing the accuracy with its ± and a few held-out images with their predicted class.

    An interaction is answered from ``sweeps`` (the runs' cached sweeps, :func:`cnet_lib.images.sweep_runs`;
    measured on all of their held-out images) when it evaluated that graph, else from the first images of the
    ``n_images`` the app holds (default :func:`cnet_lib.images.live_images` of the preset) that
    :func:`cnet_lib.draw.quick_answers.quick_size` allows, and refined to all of them in the background (the first
    answer says within how many seconds).  A data folder with fewer test images than the preset's gives the app fewer
    images, and its title says so."""
    check_study_inputs(runs, n_images, n_show)
    first = next(iter(runs.values()))
    dev = study_device(first, device)
    data, x, y, note = app_data(first, dev, n_images or live_images(first.config.preset))
    n_show = min(n_show, len(y))
    grid = sweep_grid(first.config.preset)
    max_m = max(b.n_basis for r in runs.values() for b in r.model.blocks)
    comp_opts = [("none (trained θ)", 0)] + [(f"M = {m}", m) for m in sorted(set(grid.get("compress", ())) | {1, 2, 4}) if m < max_m]
    ev = Evaluator()

    def figure(graph: tuple, titles: list, est: Estimate, follow: str = "") -> go.Figure:
        model, scheme, n_steps, compress = graph
        ident = compress and f"θ compressed to M = {compress}, " or ""
        more = f"; {follow}" if follow and not est.final else ""
        return _figure(x, titles, n_show, f"{run_label(model)}: {ident}{scheme}, N_t = {n_steps}: accuracy {est.text()}"
                                          f"{more}; predicted classes of the first {n_show}")

    def render(model, scheme, n_steps, compress):
        n_steps = int(n_steps)
        m = copy.deepcopy(runs[model].model.to(dev))  # the background refinement keeps its own copy
        if compress:
            m.project(compress)
        m.manifest(scheme, n_steps)
        rows = sweeps.get(model) if sweeps else None
        cached = sweep_answer(rows, swept_images(rows, len(data.test_y)), scheme, n_steps, compress) if rows else None
        n = 0 if cached is not None else quick_size(m, dev, len(y))
        k = max(n, n_show)  # the thumbnails' predictions come from the sample's forward pass
        start = time.perf_counter()
        pred = ev.predictions(m, x[:k], data.mean, data.std, batch_size=k)[0]
        per_image = (time.perf_counter() - start) / k
        titles, graph = _titles(pred[:n_show], y[:n_show], data.classes), (model, scheme, n_steps, compress)
        if cached is not None:
            return figure(graph, titles, cached)
        hits = pred[:n] == y[:n]
        source = f"all {len(y)} images of the app" if n >= len(y) else f"first {n} of {len(y)} images"
        quick = figure(graph, titles, estimate_from(hits, source), follow_text(len(y), n, per_image))
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
        render, static_fallback_fig, title="Evaluate a trained ContinuousNet on any graph" + note)
