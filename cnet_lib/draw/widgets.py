"""Live ipywidgets apps that never leave an empty hole in the static book.

:func:`live_app` builds the controls and an output area that re-runs ``render_fn`` whenever a
control changes (in Jupyter or Colab, on the GPU when there is one).  The object it returns
displays as *one* output carrying two representations:

* ``application/vnd.jupyter.widget-view+json``: the live app, which Jupyter, JupyterLab,
  VS Code and Colab show (they prefer a widget view whenever a kernel is attached);
* ``text/html``: the static counterpart (a plotly figure over precomputed values, with its
  own sliders/dropdowns) and a line saying how to get the live version.

The book's ``_config.yml`` ranks ``text/html`` above widget views for the HTML builder
(``nb_mime_priority_overrides``), so the built page shows the static counterpart exactly where
the live app sits in the notebook.  A bare widget displayed without :func:`live_app` would
render as an empty hole in the book; ``tests/test_book_build.py`` fails on any such widget.

Controls are ipywidgets value widgets, or plain specifications (:class:`Choice`, :class:`IntRange`,
:class:`Steps`) that :func:`live_app` turns into widgets: the chapters' figure modules describe
their apps with these, so that display code stays in this package.  They wrap in rows that fit the output
area, from a narrow notebook's to a wide one's (:func:`controls_row`), each slider :data:`SLIDER_PX` wide (its
track about 200 px) and answering when released.  The answers go into the app's output from the kernel
(:class:`cnet_lib.draw.progressive.Refiner`), the first one when the cell runs.

Also here: the display bundle of an ipywidget, the same on ipywidgets 7 and 8 (:func:`widget_bundle`), and what the
image chapters' live apps share (:func:`app_data`, :func:`mosaic`, :func:`thumbnails`).
"""
from __future__ import annotations

import html as _html
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

import plotly.graph_objects as go
import torch

from ..images.runs.run_loading import StudyRun
from ..images.runs.study_inputs import study_data
from ..images.training.evaluation import Evaluator
from .html_figures import below_modebar, figure_html
from .progressive import Refiner

__all__ = ["LiveApp", "live_app", "Choice", "IntRange", "Steps", "STATIC_NOTE", "SLIDER_PX", "controls_row",
           "WIDGET_VIEW", "colab_widget_metadata", "widget_bundle", "bundle_for_ipython", "app_data",
           "evaluate_in_chunks", "mosaic", "predicted_titles", "thumbnails"]


# The display bundle of an ipywidget, the same on ipywidgets 7 and 8, with its metadata kept.
#
# :class:`cnet_lib.draw.widgets.LiveApp` and the pendulum's progress bar display a widget together
# with a static ``text/html`` view.  They build their bundle from :func:`widget_bundle`:
#
# * ipywidgets 8 has ``Widget._repr_mimebundle_``, which may return ``(data, metadata)``;
#   the metadata is kept, never dropped;
# * ipywidgets 7 (Colab's preinstalled major) has no ``_repr_mimebundle_``, only
#   ``_ipython_display_``; the widget view is written the way it writes it;
# * on Google Colab with the custom widget manager enabled, the widget view carries the
#   metadata that manager needs (``{"colab": {"custom_widget_manager": {"url": ...}}}``).
#   Colab adds it itself only to outputs sent with ``display()``, not to a cell's last value.
#
# This module imports nothing from the book's frame, so any layer may use it.

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def colab_widget_metadata() -> dict:
    """The metadata Colab's custom widget manager needs on a widget view; ``{}`` when it is off."""
    output = sys.modules.get("google.colab.output")
    url = getattr(getattr(output, "_widgets", None), "_installed_url", None)
    if not url:
        return {}
    return {WIDGET_VIEW: {"colab": {"custom_widget_manager": {"url": url}}}}


def _merged(metadata: dict, extra: dict) -> dict:
    """``metadata`` with the entries of ``extra`` added one mime type deep (existing keys win)."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in metadata.items()}
    for mime, entries in extra.items():
        target = out.setdefault(mime, {})
        if isinstance(target, dict):
            for key, value in entries.items():
                target.setdefault(key, value)
    return out


def widget_bundle(widget: Any, include=None, exclude=None) -> tuple[dict, dict]:
    """``(data, metadata)`` that display ``widget``, on ipywidgets 7 and 8 alike.

    ``data`` holds the widget view (``application/vnd.jupyter.widget-view+json``) and
    ``text/plain``; it holds no widget view for a closed widget.  ``metadata`` is what the
    widget itself returned plus, on Colab, :func:`colab_widget_metadata`.
    """
    data: dict = {}
    metadata: dict = {}
    repr_bundle = getattr(widget, "_repr_mimebundle_", None)
    if callable(repr_bundle):  # ipywidgets >= 8
        out = repr_bundle(include=include, exclude=exclude)
        if isinstance(out, tuple):
            data, metadata = out[0] or {}, out[1] or {}
        else:
            data = out or {}
    elif getattr(widget, "comm", None) is not None and getattr(widget, "_view_name", None):  # ipywidgets 7
        text = repr(widget)
        data = {
            "text/plain": text if len(text) <= 110 else text[:110] + "…",
            WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": widget.model_id},
        }
    data, metadata = dict(data), dict(metadata)
    if WIDGET_VIEW in data:
        metadata = _merged(metadata, colab_widget_metadata())
    return data, metadata


def bundle_for_ipython(data: dict, metadata: Optional[dict]):
    """What ``_repr_mimebundle_`` returns: ``(data, metadata)`` when there is metadata, else ``data``."""
    return (data, metadata) if metadata else data


# ---------------------------------------------------------------------- the module's own part (its docstring above)

@dataclass(frozen=True)
class Choice:
    """A menu: ``options`` are values or ``(label, value)`` pairs; ``value`` the first one's by default."""

    options: Sequence
    value: Any = None
    description: str = ""


@dataclass(frozen=True)
class IntRange:
    """An integer slider from ``min`` to ``max``."""

    min: int
    max: int
    value: int
    description: str = ""


@dataclass(frozen=True)
class Steps:
    """A slider over the given ``options`` (values or ``(label, value)`` pairs)."""

    options: Sequence
    value: Any = None
    description: str = ""


def _first_value(options: Sequence):
    first = options[0]
    return first[1] if isinstance(first, tuple) else first


SLIDER_PX = 320
"""A slider's width: its track keeps about 200 px beside its name and readout (a finger's or a mouse's room for
every step of N_t from 1 to 16); in an output area narrower than this it takes the area's width."""


def _fitted(widget, width: str):
    """``widget`` laid out to wrap with the app's other controls: its name as wide as its text (ipywidgets' default
    kept 148 px for it), ``width`` wide (``auto``: a menu as wide as its longest option) and never wider than the
    output area."""
    widget.style.description_width = "initial"
    widget.layout.width = width
    widget.layout.max_width = "100%"
    widget.layout.flex = "0 1 auto"
    return widget


def _control(spec):
    """The ipywidget of a control specification (an ipywidget passes through).  A slider answers when it is
    released (``continuous_update=False``: a drag is one answer, not one per step it passes)."""
    import ipywidgets as W

    if isinstance(spec, Choice):
        value = _first_value(spec.options) if spec.value is None else spec.value
        return _fitted(W.Dropdown(options=list(spec.options), value=value, description=spec.description), "auto")
    if isinstance(spec, IntRange):
        return _fitted(W.IntSlider(value=spec.value, min=spec.min, max=spec.max, description=spec.description,
                                   continuous_update=False), f"{SLIDER_PX}px")
    if isinstance(spec, Steps):
        value = _first_value(spec.options) if spec.value is None else spec.value
        return _fitted(W.SelectionSlider(options=list(spec.options), value=value, description=spec.description,
                                         continuous_update=False), f"{SLIDER_PX}px")
    return spec


def controls_row(controls: Sequence):
    """The controls in rows that wrap to the output area's width, from a narrow notebook's (or Colab's) to a wide
    one's: none is cut off and no scroll bar appears (one ``HBox`` with ``flex-wrap``)."""
    import ipywidgets as W

    return W.HBox(list(controls), layout=W.Layout(flex_flow="row wrap", width="100%", max_width="100%",
                                                  align_items="center", grid_gap="4px 16px"))

STATIC_NOTE = (
    "Static view of a live app: the controls below move over precomputed values. "
    "Open this chapter in Colab or Jupyter to drive the live version."
)


class LiveApp:
    """A live widget app with its static fallback figure; display it as a cell's last value."""

    def __init__(self, widget, static_fig, note: str = STATIC_NOTE, render: Optional[Callable[..., Any]] = None):
        self.widget = widget
        self.static_fig = static_fig
        self.note = note
        self.render = render  # the render function, for timing an interaction without a frontend

    def static_html(self) -> str:
        """The ``text/html`` shown where no widget can run (the static book)."""
        note = f'<p class="cnet-live-app-note"><em>{_html.escape(self.note)}</em></p>\n' if self.note else ""
        return f'<div class="cnet-live-app-static">\n{note}{figure_html(self.static_fig)}\n</div>'

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The widget view and the static view in one output.

        Works on ipywidgets 7 and 8; the widget's display metadata is kept, and on Colab with
        the custom widget manager the metadata that manager needs is added (see
        :mod:`cnet_lib.draw.widgets`).  Returns ``(data, metadata)`` when there is metadata,
        else ``data`` (IPython accepts both).
        """
        data, metadata = widget_bundle(self.widget, include, exclude)
        data["text/html"] = self.static_html()
        data["text/plain"] = "Live app (" + ", ".join(self.controls) + "): run the notebook to use it."
        return bundle_for_ipython(data, metadata)

    @property
    def controls(self) -> list:
        return list(getattr(self.widget, "_cnet_controls", {}))

    def __repr__(self) -> str:
        return f"LiveApp(controls={self.controls})"


def live_app(
    controls: Mapping[str, Any],
    render_fn: Callable[..., Any],
    static_fallback_fig,
    *,
    title: Optional[str] = None,
    note: str = STATIC_NOTE,
) -> LiveApp:
    """A live app: ``controls`` (name -> ipywidget or :class:`Choice`/:class:`IntRange`/:class:`Steps`)
    drive ``render_fn(**values)``.

    ``render_fn`` receives the current value of every control as a keyword argument and returns
    what to show (a plotly figure, text, ...), or a :class:`cnet_lib.draw.progressive.Progressive` (shown
    at once, then replaced by its refinement computed in the background); an exception shows as its traceback.
    ``static_fallback_fig`` is the plotly figure (built from precomputed values, e.g. with
    :func:`cnet_lib.draw.plotting.dropdown_slider_figure`) that the static book shows in its place.
    """
    import ipywidgets as W

    if not controls:
        raise ValueError("live_app needs at least one control, e.g. {'n_steps': IntSlider(...)}")
    if static_fallback_fig is None:
        raise ValueError("live_app needs a static_fallback_fig: the static book shows it in the app's place")
    controls = {name: _control(spec) for name, spec in controls.items()}
    for name, w in controls.items():
        if not isinstance(w, W.ValueWidget):
            raise TypeError(f"control {name!r} must be an ipywidgets value widget, got {type(w).__name__}")

    output = W.Output()
    refiner = Refiner(output)  # the only writer of the output's answers (see cnet_lib.draw.progressive)

    def answer(change=None):
        values = {name: w.value for name, w in controls.items()}
        refiner.interaction()  # a control moved: a refinement still running stops, and never shows itself
        try:
            result = render_fn(**values)
        except Exception as err:  # the traceback in the app, where the figure would be
            refiner.show_error(err)
            return
        refiner.show(result)

    for w in controls.values():
        w.observe(answer, "value")
    answer()
    header = [W.HTML(f"<b>{_html.escape(title)}</b>")] if title else []
    box = W.VBox(header + [controls_row(controls.values()), output], layout=W.Layout(width="100%", max_width="100%"))
    box._cnet_controls = dict(controls)
    return LiveApp(box, static_fallback_fig, note=note, render=render_fn)


# What the image chapters' live apps share (the manifestation app is :func:`cnet_lib.studies.manifestation.live_app`;
# the robustness chapter's :func:`cnet_lib.studies.robustness.show.live_app`): the held-out images an app evaluates
# (:func:`app_data`: :func:`cnet_lib.images.live_images` of the preset's, or as many as the data folder holds, and a note
# for the app's title then), the outcomes of a model on the rest of them in chunks that stop as soon as the answer is no
# longer wanted (:func:`evaluate_in_chunks`, for the refinement in the background), and images tiled into one
# (:func:`mosaic`, one plotly Image trace instead of n subplots) with each image's predicted class above it
# (:func:`thumbnails`, :func:`predicted_titles`).

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
