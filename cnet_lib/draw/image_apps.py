"""What the image chapters' live apps share (the manifestation app is :func:`cnet_lib.studies.manifestation.live_app`;
the robustness chapter's :func:`cnet_lib.studies.robustness.show.live_app`): the held-out images an app evaluates
(:func:`app_data`: :func:`cnet_lib.images.live_images` of the preset's, or as many as the data folder holds, and a note
for the app's title then), the outcomes of a model on the rest of them in chunks that stop as soon as the answer is no
longer wanted (:func:`evaluate_in_chunks`, for the refinement in the background), and images tiled into one
(:func:`mosaic`, one plotly Image trace instead of n subplots) with each image's predicted class above it
(:func:`thumbnails`, :func:`predicted_titles`).
"""
from __future__ import annotations

import math
from typing import Optional

import plotly.graph_objects as go
import torch

from ..images.runs.study_inputs import study_data
from ..images.runs.study_run import StudyRun
from ..images.training.evaluation import Evaluator
from .html_figures import below_modebar

__all__ = ["app_data", "evaluate_in_chunks", "mosaic", "predicted_titles", "thumbnails"]


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


def app_data(first: StudyRun, device, n_images: int) -> tuple:
    """``(data, x, y, note)`` of a live app on ``device``: the run's held-out images (:func:`study_data`), of which
    the app takes the first ``n_images``, as many as the data folder holds (a small copy of the data set may hold
    fewer than the preset's); ``note`` says so in the app's title then (``""`` otherwise)."""
    data = study_data(first.config, first.settings, device, with_train=False)
    want, have = first.config.n_test, len(data.test_y)
    note = f" (on the {have} test images this data copy holds, of the preset's {want})" if want and have < want else ""
    return data, data.test_x[:n_images], data.test_y[:n_images], note


def predicted_titles(pred: torch.Tensor, y: torch.Tensor, classes) -> list:
    """``✓ cat`` / ``✗ dog``: each thumbnail's predicted class, marked right or wrong."""
    return [f"{'✓' if p == t else '✗'} {classes[p]}" for p, t in zip(pred.cpu().tolist(), y.cpu().tolist())]


def thumbnails(x, titles: list, n_show: int, heading: str) -> go.Figure:
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
