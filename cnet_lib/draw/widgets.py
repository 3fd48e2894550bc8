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
"""
from __future__ import annotations

import html as _html
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from .html_figures import figure_html
from .progressive import Refiner
from .widget_view import bundle_for_ipython, widget_bundle

__all__ = ["LiveApp", "live_app", "Choice", "IntRange", "Steps", "STATIC_NOTE", "SLIDER_PX", "controls_row"]


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
        :mod:`cnet_lib.draw.widget_view`).  Returns ``(data, metadata)`` when there is metadata,
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
