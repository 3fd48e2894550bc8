"""Shared plotly figure builders for the book (the static half of its interactivity).

Every figure here is built from values computed beforehand, so its sliders and dropdowns work
in the static HTML with no kernel: each control only toggles which precomputed traces are
visible.  Figure texts use Unicode (Δt, ε, N_t) rather than LaTeX: see
:func:`cnet_lib.draw.html_figures.figure_html`.
"""
from __future__ import annotations

from typing import Hashable, Mapping, Optional, Sequence

import plotly.graph_objects as go

__all__ = ["slider_figure", "dropdown_slider_figure", "loglog_style", "line", "reference_slope", "book_layout",
           "LEGEND_RIGHT", "LEGEND_BELOW"]

LEGEND_RIGHT = dict(orientation="v", x=1.02, xanchor="left", y=1.0, yanchor="top")
"""The book's legend: a column to the right of the plot, clear of the title above, the menus above
and the sliders below it (a legend across the top of the plot ran into long titles)."""

LEGEND_BELOW = dict(orientation="h", x=0.0, xanchor="left", y=-0.25, yanchor="top")
"""For long legend entries (which would squeeze the plot from the right): rows below the x-axis
title.  Not for figures with a slider, which sits there."""


def line(x, y, name: str = "", color: Optional[str] = None, dash: Optional[str] = None, mode: str = "lines", **kw) -> go.Scatter:
    """A ``go.Scatter`` from array-likes (lists, numpy arrays or CPU/GPU tensors)."""
    return go.Scatter(x=_to_list(x), y=_to_list(y), name=name, mode=mode, line=dict(color=color, dash=dash), **kw)


def _to_list(v):
    if hasattr(v, "detach"):
        v = v.detach().cpu()
    if hasattr(v, "tolist"):
        return v.tolist()
    return list(v)


def book_layout(fig: go.Figure, title: str = "", xaxis_title: str = "", yaxis_title: str = "", height: int = 480,
                top: int = 0, legend_below: bool = False) -> go.Figure:
    """The book's layout: white template, the title at the top left, the legend in a column on the
    right (:data:`LEGEND_RIGHT`), or below the plot (:data:`LEGEND_BELOW`) with ``legend_below``;
    ``top`` extra pixels above the plot (for a menu)."""
    fig.update_layout(
        title=dict(text=title, x=0.0, xanchor="left", y=0.98, yanchor="top") if title else None,
        xaxis_title=xaxis_title or None,
        yaxis_title=yaxis_title or None,
        height=height,
        template="plotly_white",
        margin=dict(l=60, r=20, t=(60 if title else 30) + top, b=110 if legend_below else 40),
        legend=LEGEND_BELOW if legend_below else LEGEND_RIGHT,
    )
    return fig


def _check_frames(frames: Mapping) -> None:
    if not frames:
        raise ValueError("frames is empty: give at least one {label: [traces]} entry")
    for label, traces in frames.items():
        if not isinstance(traces, (list, tuple)) or not traces:
            raise ValueError(f"frame {label!r} must be a non-empty list of plotly traces")


def _slider(labels: Sequence, visible_per_step: Sequence[list], prefix: str, active: int, y: float = 0.0) -> dict:
    # a step's label is centred under its tick: pad the slider by half the end labels' width
    # (about 3.5 px per character at the default font) so that they are not cut at the edges
    first, last = (len(str(labels[0])), len(str(labels[-1]))) if labels else (0, 0)
    return dict(
        active=active,
        currentvalue=dict(prefix=prefix),
        pad=dict(t=50, l=min(160, 10 + 4 * first), r=min(160, 10 + 4 * last)),
        y=y,
        steps=[
            dict(method="update", label=str(lab), args=[{"visible": vis}])
            for lab, vis in zip(labels, visible_per_step)
        ],
    )


def slider_figure(
    frames: Mapping[Hashable, Sequence[go.BaseTraceType]],
    *,
    title: str = "",
    slider_prefix: str = "",
    xaxis_title: str = "",
    yaxis_title: str = "",
    static_traces: Sequence[go.BaseTraceType] = (),
    active: int = 0,
    height: int = 480,
) -> go.Figure:
    """A figure with one slider step per entry of ``frames`` (label -> traces shown at that step).

    ``static_traces`` (for example an exact solution) stay visible at every step.
    """
    _check_frames(frames)
    labels = list(frames)
    if not 0 <= active < len(labels):
        raise ValueError(f"active={active} is not a step index (0..{len(labels) - 1})")
    fig, owner = _traces_with_owners(static_traces, {i: frames[lab] for i, lab in enumerate(labels)})
    vis = [[o is None or o == i for o in owner] for i in range(len(labels))]
    for trace, v in zip(fig.data, vis[active]):
        trace.visible = v
    fig.update_layout(sliders=[_slider(labels, vis, slider_prefix, active)])
    book_layout(fig, title, xaxis_title, yaxis_title, height)
    return fig


def dropdown_slider_figure(
    frames: Mapping[Hashable, Mapping[Hashable, Sequence[go.BaseTraceType]]],
    *,
    title: str = "",
    dropdown_prefix: str = "",
    slider_prefix: str = "",
    xaxis_title: str = "",
    yaxis_title: str = "",
    static_traces: Sequence[go.BaseTraceType] = (),
    active_option: int = 0,
    active_step: int = 0,
    height: int = 520,
) -> go.Figure:
    """A dropdown over options and, for the chosen option, a slider over its steps.

    ``frames[option][step]`` is the list of traces shown for that (option, step); every option
    must have the same step labels (e.g. option = scheme, step = N_t).  Choosing an option
    shows its slider at step ``active_step``.
    """
    if not frames:
        raise ValueError("frames is empty: give {option: {step: [traces]}}")
    options = list(frames)
    steps = list(frames[options[0]])
    for opt in options:
        _check_frames(frames[opt])
        if list(frames[opt]) != steps:
            raise ValueError(f"option {opt!r} has steps {list(frames[opt])}, expected {steps} like {options[0]!r}")
    if not 0 <= active_option < len(options) or not 0 <= active_step < len(steps):
        raise ValueError("active_option / active_step out of range")

    fig, owner = _traces_with_owners(static_traces, {(oi, si): frames[opt][step] for oi, opt in enumerate(options)
                                                     for si, step in enumerate(steps)})

    def visible(oi: int, si: int) -> list:
        return [o is None or o == (oi, si) for o in owner]

    sliders = [
        _slider(steps, [visible(oi, si) for si in range(len(steps))], slider_prefix, active_step)
        for oi in range(len(options))
    ]
    for trace, v in zip(fig.data, visible(active_option, active_step)):
        trace.visible = v
    buttons = [
        dict(method="update", label=f"{dropdown_prefix}{opt}",
             args=[{"visible": visible(oi, active_step)}, {"sliders": [sliders[oi]]}])
        for oi, opt in enumerate(options)
    ]
    fig.update_layout(
        sliders=[sliders[active_option]],
        updatemenus=[dict(type="dropdown", active=active_option, buttons=buttons, x=0.0, xanchor="left", y=1.02,
                          yanchor="bottom", showactive=True)],
    )
    book_layout(fig, title, xaxis_title, yaxis_title, height, top=45)
    return _menu_room(fig, len(options))


def menu_figure(
    frames: Mapping[Hashable, Sequence[go.BaseTraceType]],
    *,
    title: str = "",
    menu_prefix: str = "",
    xaxis_title: str = "",
    yaxis_title: str = "",
    active: int = 0,
    height: int = 480,
) -> go.Figure:
    """A figure with a dropdown over the entries of ``frames`` (label -> traces shown for it): for many labels of
    different kinds, which a slider on a phone could only show one at a time."""
    _check_frames(frames)
    labels = list(frames)
    if not 0 <= active < len(labels):
        raise ValueError(f"active={active} is not an entry index (0..{len(labels) - 1})")
    fig, owner = _traces_with_owners((), {i: frames[lab] for i, lab in enumerate(labels)})
    vis = [[o == i for o in owner] for i in range(len(labels))]
    for trace, v in zip(fig.data, vis[active]):
        trace.visible = v
    buttons = [dict(method="update", label=f"{menu_prefix}{lab}", args=[{"visible": vis[i]}]) for i, lab in enumerate(labels)]
    fig.update_layout(updatemenus=[dict(type="dropdown", active=active, buttons=buttons, x=0.0, xanchor="left", y=1.02,
                                        yanchor="bottom", showactive=True)])
    book_layout(fig, title, xaxis_title, yaxis_title, height, top=45)
    return _menu_room(fig, len(labels))


MENU_ITEM_PX = 36
"""The height of one entry of an open dropdown with plotly's default font and padding (33 px drawn), and the gap to the next."""


def _menu_room(fig: go.Figure, n_items: int) -> go.Figure:
    """``fig`` tall enough for its dropdown's list of ``n_items``, opened under the menu above the plot, to end inside
    the figure (the robustness explorer's eleven entries ran past its bottom): below the top margin, and the toolbar's
    band the book adds above a title (:data:`cnet_lib.draw.html_figures.MODEBAR_PX`), the list's entries and 20 px."""
    need = (fig.layout.margin.t or 0) + 38 + MENU_ITEM_PX * n_items + 20
    if (fig.layout.height or 450) < need:
        fig.update_layout(height=need)
    return fig


def _traces_with_owners(static_traces: Sequence[go.BaseTraceType],
                        owned: Mapping[Hashable, Sequence[go.BaseTraceType]]) -> tuple[go.Figure, list]:
    """A figure holding ``static_traces`` and then the traces of each entry of ``owned``, and the owner
    of each trace in order (``None`` for a static trace, else its key in ``owned``)."""
    fig = go.Figure()
    owner = []
    for tr in static_traces:
        fig.add_trace(tr)
        owner.append(None)
    for key, traces in owned.items():
        for tr in traces:
            fig.add_trace(tr)
            owner.append(key)
    return fig, owner


def loglog_style(fig: go.Figure, *, x_title: Optional[str] = None, y_title: Optional[str] = None) -> go.Figure:
    """Log-log axes with powers-of-ten ticks (for convergence plots); returns ``fig``."""
    axis = dict(type="log", exponentformat="power", showgrid=True, gridcolor="#e5e5e5", minor=dict(showgrid=False))
    fig.update_xaxes(**axis)
    fig.update_yaxes(**axis)
    if x_title is not None:
        fig.update_xaxes(title=x_title)
    if y_title is not None:
        fig.update_yaxes(title=y_title)
    return fig


def reference_slope(x0: float, x1: float, y0: float, order: float, name: Optional[str] = None) -> go.Scatter:
    """A dashed guide line of slope ``order`` on log-log axes through ``(x0, y0)`` to ``x1``."""
    y1 = y0 * (x1 / x0) ** order
    return go.Scatter(
        x=[x0, x1], y=[y0, y1], mode="lines", name=name or f"slope {order:g}",
        line=dict(color="#888888", dash="dot"), hoverinfo="skip",
    )
