"""The live app of the manifestation chapter: a trained ContinuousNet evaluated on any graph
(:func:`live_sweep_app`) while the reader moves the controls; the robustness chapter's app is in
:mod:`cnet_lib.draw.robustness_app`.  :func:`cnet_lib.draw.widgets.live_app` turns the controls into
widgets, and the static book shows the figure given as ``static_fallback_fig`` in their place.

Every interaction answers at once (:mod:`cnet_lib.images.quick_answers`): from the run's cached sweep
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
from plotly.subplots import make_subplots

from ..images.batches import normalize
from ..images.checks import check_study_inputs
from ..images.evaluation import Evaluator, model_dtype
from ..images.image_presets import sweep_grid
from ..images.quick_answers import Estimate, estimate_from, quick_size, sweep_answer
from ..images.study_inputs import study_data
from ..images.study_run import StudyRun
from ..runtime.device import resolve_device
from ..runtime.vocabulary import run_label
from .progressive import Progressive
from .widgets import Choice, IntRange, live_app

__all__ = ["live_sweep_app", "evaluate_in_chunks"]


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


def _thumbnails(m, x, y, data, n_show: int) -> list:
    with torch.no_grad():
        pred = m(normalize(x[:n_show], data.mean, data.std).to(model_dtype(m))).argmax(1).cpu().tolist()
    return [f"{'✓' if p == t else '✗'} {data.classes[p]}" for p, t in zip(pred, y[:n_show].cpu().tolist())]


def _figure(x, titles: list, n_show: int, heading: str) -> go.Figure:
    imgs = x[:n_show].cpu()
    cols = min(n_show, 6)
    fig = make_subplots(rows=math.ceil(n_show / cols), cols=cols, horizontal_spacing=0.01, vertical_spacing=0.08,
                        subplot_titles=titles)
    for i in range(n_show):
        fig.add_trace(go.Image(z=imgs[i].permute(1, 2, 0).numpy()), row=i // cols + 1, col=i % cols + 1)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(title=heading, height=330, margin=dict(t=90, l=10, r=10, b=10))
    return fig


def live_sweep_app(runs: Mapping[str, StudyRun], static_fallback_fig, device=None, n_images: int = 1000, n_show: int = 12,
                   sweeps: Optional[Mapping[str, list]] = None):
    """A live app (model, scheme, N_t, compression) over the trained models on ``device`` (default: the
    model's), showing the accuracy with its ± and a few test images with their predicted class.

    An interaction is answered from ``sweeps`` (the runs' cached sweeps, :func:`cnet_lib.images.sweep_runs`;
    measured on all of their test images) when it evaluated that graph, else from the first images of the
    ``n_images`` the app holds that :func:`cnet_lib.images.quick_answers.quick_size` allows, and refined to
    all ``n_images`` in the background."""
    check_study_inputs(runs, n_images, n_show)
    first = next(iter(runs.values()))
    dev = resolve_device(device) if device is not None else next(first.model.parameters()).device
    data = study_data(first.config, first.settings, dev, with_train=False)
    n_sweep = len(data.test_y)
    x, y = data.test_x[:n_images], data.test_y[:n_images]
    grid = sweep_grid(first.config.preset)
    max_m = max(b.n_basis for r in runs.values() for b in r.model.blocks)
    comp_opts = [("none (trained θ)", 0)] + [(f"M = {m}", m) for m in sorted(set(grid.get("compress", ())) | {1, 2, 4}) if m < max_m]
    ev = Evaluator()

    def heading(model, scheme, n_steps, compress, est: Estimate) -> str:
        ident = compress and f"θ compressed to M = {compress}, " or ""
        more = "" if est.final else "; all of them follow"
        return (f"{run_label(model)}: {ident}{scheme}, N_t = {n_steps}: accuracy {est.text()}{more}; predicted classes "
                f"of the first {n_show}")

    def render(model, scheme, n_steps, compress):
        n_steps = int(n_steps)
        m = copy.deepcopy(runs[model].model.to(dev))  # the background refinement keeps its own copy
        if compress:
            m.project(compress)
        m.manifest(scheme, n_steps)
        titles = _thumbnails(m, x, y, data, n_show)
        cached = sweep_answer(sweeps[model], n_sweep, scheme, n_steps, compress) if sweeps and model in sweeps else None
        if cached is not None:
            return _figure(x, titles, n_show, heading(model, scheme, n_steps, compress, cached))
        n = quick_size(m, dev, len(y))
        hits = ev.correct(m, x[:n], y[:n], data.mean, data.std, batch_size=max(n, 1))[0]
        source = "all images of the app" if n >= len(y) else f"first {n} of {len(y)} images"
        quick = _figure(x, titles, n_show, heading(model, scheme, n_steps, compress, estimate_from(hits, source)))
        if n >= len(y):
            return quick

        def refine(stale):
            rest = evaluate_in_chunks(Evaluator(), m, x, y, data.mean, data.std, n, stale)
            if rest is None:
                return None
            est = estimate_from(torch.cat([hits, rest]), f"all {len(y)} images of the app")
            return _figure(x, titles, n_show, heading(model, scheme, n_steps, compress, est))

        return Progressive(quick, refine)

    schemes = list(grid["schemes"])
    return live_app(
        {"model": Choice([(r.label, k) for k, r in runs.items()], description="model"),
         "scheme": Choice(schemes, schemes[-1], "scheme"),
         "n_steps": IntRange(1, max(grid["n_steps"]), max(grid["n_steps"]) // 2 or 1, "N_t"),
         "compress": Choice(comp_opts, 0, "compress")},
        render, static_fallback_fig, title="Evaluate a trained ContinuousNet on any graph")
