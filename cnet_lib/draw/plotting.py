"""Shared plotly figure builders for the book (the static half of its interactivity).

Every figure here is built from values computed beforehand, so its sliders and dropdowns work
in the static HTML with no kernel: each control only toggles which precomputed traces are
visible.  Figure texts use Unicode (Δt, ε, N_t) rather than LaTeX: see
:func:`cnet_lib.draw.html_figures.figure_html`.
"""
from __future__ import annotations

import math
from typing import Hashable, Mapping, Optional, Sequence

import plotly.graph_objects as go

from .html_figures import lean

__all__ = ["ACCURACY_TITLE", "percent", "slider_figure", "dropdown_slider_figure", "loglog_style", "log_ticks", "log_tick_values", "log_tick_text", "line", "line_styles", "reference_slope", "book_layout",
           "LEGEND_RIGHT", "LEGEND_BELOW"]

LEGEND_RIGHT = dict(orientation="v", x=1.02, xanchor="left", y=1.0, yanchor="top")
"""The book's legend: a column to the right of the plot, clear of the title above, the menus above
and the sliders below it (a legend across the top of the plot ran into long titles)."""

LEGEND_BELOW = dict(orientation="h", x=0.0, xanchor="left", y=-0.25, yanchor="top")
"""For long legend entries (which would squeeze the plot from the right): rows below the x-axis
title.  Not for figures with a slider, which sits there."""


ACCURACY_TITLE = "held-out accuracy (%)"
"""The book's accuracy axis: percent, as the chapters and tables say it (82.3%, 1.9 points)."""


def percent(value):
    """An accuracy (a fraction) in percent, ``None`` kept (a bar not measured); for axes in the prose's unit."""
    return None if value is None else 100.0 * value


def line(x, y, name: str = "", color: Optional[str] = None, dash: Optional[str] = None, mode: str = "lines", **kw) -> go.Scatter:
    """A ``go.Scatter`` from array-likes (lists, numpy arrays or CPU/GPU tensors)."""
    return go.Scatter(x=_to_list(x), y=_to_list(y), name=name, mode=mode, line=dict(color=color, dash=dash), **kw)


def line_styles(*styles: tuple[str, Optional[str]]) -> list:
    """Legend entries (no data) that say what each line style means, e.g. ``("trained", None)``,
    ``("untrained", "dash")``, so that the curves themselves need one legend entry per series, not per style."""
    return [line([None], [None], name=f"{'solid' if dash is None else dash + 'ed'}: {what}", color="#555555", dash=dash,
                 legendrank=2000, hoverinfo="skip") for what, dash in styles]


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
    """A dropdown over options and a slider over steps, each keeping what the other chose.

    ``frames[option][step]`` is the list of traces shown for that (option, step); every option
    must have the same step labels (e.g. option = scheme, step = N_t), and the k-th trace of a step
    the same trace type in every option.  The figure holds one set of traces per step, drawn with the
    chosen option's data: the slider shows its step's set (``visible``), and the dropdown restyles
    every step's set with its option's data (only the attributes that differ between options, so
    never ``visible``).  Neither control touches what the other owns, so that a student can compare
    the options at the same step (a dropdown that also set the slider put it back to its first step).
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

    # the k-th trace of each step, as each option draws it (a step with fewer traces in one option: an empty one)
    slots = []
    for step in steps:
        for k in range(max(len(frames[opt][step]) for opt in options)):
            drawn = [_lean(frames[opt][step][k]) if k < len(frames[opt][step]) else None for opt in options]
            kinds = {t.type for t in drawn if t is not None}
            if len(kinds) > 1:
                raise ValueError(f"trace {k} of step {step!r} is a {' in one option, a '.join(sorted(kinds))} in "
                                 "another: the options must draw each step with the same trace types")
            some = next(t for t in drawn if t is not None)
            slots.append((step, [t if t is not None else type(some)(showlegend=False, hoverinfo="skip") for t in drawn]))
    fig, owner = _traces_with_owners(static_traces, {})
    for step, drawn in slots:
        fig.add_trace(drawn[active_option])
        owner.append(steps.index(step))
    first = len(static_traces)
    changed = sorted({path for _, drawn in slots for path in _differences(drawn)})
    buttons = [
        dict(method="restyle", label=f"{dropdown_prefix}{opt}",
             args=[{path: [_attributes(drawn[oi]).get(path) for _, drawn in slots] for path in changed},
                   list(range(first, first + len(slots)))])
        for oi, opt in enumerate(options)
    ]
    vis = [[o is None or o == si for o in owner] for si in range(len(steps))]
    for trace, v in zip(fig.data, vis[active_step]):
        trace.visible = v
    fig.update_layout(
        sliders=[_slider(steps, vis, slider_prefix, active_step)],
        updatemenus=[dict(type="dropdown", active=active_option, buttons=buttons, x=0.0, xanchor="left", y=1.02,
                          yanchor="bottom", showactive=True)],
    )
    book_layout(fig, title, xaxis_title, yaxis_title, height, top=45)
    return _menu_room(fig, len(options))


def _lean(trace: go.BaseTraceType) -> go.BaseTraceType:
    """A copy of ``trace`` made lean as the book writes its figures (:func:`cnet_lib.draw.html_figures.lean`: long
    lines thinned, an evenly spaced x as its start and step, numbers at float32's precision): a menu's restyle carries
    the data of every option, which the book's writer does not thin."""
    return lean(go.Figure(data=[trace])).data[0]


def _attributes(trace: go.BaseTraceType) -> dict:
    """A trace's attributes as restyle takes them: ``{"line.color": "red", "y": [...]}`` (nested objects as dotted
    paths, arrays as lists; ``visible`` left out, which the slider owns)."""
    def flat(d: Mapping, prefix: str = "") -> dict:
        out = {}
        for key, value in d.items():
            if isinstance(value, Mapping) and value:
                out.update(flat(value, f"{prefix}{key}."))
            else:
                out[f"{prefix}{key}"] = _compact(value)
        return out

    out = flat(trace.to_plotly_json())
    out.pop("visible", None)
    return out


def _compact(value):
    """A numpy array as a list whose floats print in at most 7 significant digits (a float32's precision)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            return [None if not np.isfinite(v) else float(f"{v:.7g}") for v in value.tolist()]
        return value.tolist()
    if isinstance(value, tuple):
        return list(value)
    return value


def _differences(drawn: Sequence[go.BaseTraceType]) -> set:
    """The attribute paths (``"y"``, ``"line.color"``) whose values are not the same in every option's trace."""
    attrs = [_attributes(t) for t in drawn]
    paths = set().union(*attrs) - {"type"}
    return {p for p in paths if any(a.get(p) != attrs[0].get(p) for a in attrs[1:])}


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
    """Log-log axes with labelled ticks at 1, 2 and 5 or the powers of ten of the data (:func:`log_ticks`; for
    convergence plots; call it once the traces are in); returns ``fig``."""
    axis = dict(type="log", exponentformat="power", showgrid=True, gridcolor="#e5e5e5", minor=dict(showgrid=False))
    fig.update_xaxes(**axis)
    fig.update_yaxes(**axis)
    if x_title is not None:
        fig.update_xaxes(title=x_title)
    if y_title is not None:
        fig.update_yaxes(title=y_title)
    return log_ticks(fig)


MAX_LOG_TICKS = 6
"""At most this many labelled ticks on a log axis (a phone's plot is about 280 px wide)."""


def log_tick_values(lo: float, hi: float, max_ticks: int = MAX_LOG_TICKS) -> list[float]:
    """Ticks for a log axis over [lo, hi]: 1, 2 and 5 times the powers of ten, or the powers of ten alone (every
    second or third where there are too many), or, over less than a decade, every digit times its power of ten;
    at least two where the range holds two."""
    if not (0 < lo <= hi) or not math.isfinite(hi):
        raise ValueError(f"a log axis needs 0 < lo <= hi, got {lo}, {hi}")
    k0, k1 = math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1

    def within(mantissas):
        vals = [float(f"{m * 10.0 ** k:.12g}") for k in range(k0, k1 + 1) for m in mantissas]
        return [v for v in vals if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]

    for mantissas in ((1, 2, 5), (1,)):
        vals = within(mantissas)
        if 2 <= len(vals) <= max_ticks:
            return vals
    powers = within((1,))
    if len(powers) > max_ticks:
        return powers[::math.ceil(len(powers) / max_ticks)]
    digits = within(range(1, 10))
    if len(digits) > max_ticks:
        digits = digits[::math.ceil(len(digits) / max_ticks)]
    return digits if len(digits) >= 2 else within((1, 2, 5)) or digits


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def log_tick_text(values: Sequence[float]) -> list[str]:
    """Labels that read as the numbers they stand for: ``0.001``, ``20``, ``5000``, or, where a value is smaller than
    0.001 or from 100,000 on, every label as a power of ten (``10⁻⁵``, ``2×10⁻⁵``)."""
    if all(1e-3 <= v < 1e5 for v in values):
        return [f"{v:g}" for v in values]
    out = []
    for v in values:
        k = math.floor(math.log10(v) + 1e-9)
        m = float(f"{v / 10.0 ** k:.3g}")
        power = "10" + str(k).translate(_SUPERSCRIPT)
        out.append(power if m == 1 else f"{m:g}×{power}")
    return out


def log_ticks(fig: go.Figure, max_ticks: int = MAX_LOG_TICKS) -> go.Figure:
    """Every log axis of ``fig`` without ticks of its own gets :func:`log_tick_values` over the values drawn on it
    (its traces, slider steps included, and lines drawn across the plot), labelled by :func:`log_tick_text`.

    Plotly labels a log axis over a decade or two with the leading digit alone ("2", "5" for 20 and 50, "8 9" for 0.8
    and 0.9 beside a "1"): a reader cannot tell which number a label stands for."""
    import numpy as np

    layout = fig.layout
    axes = [name for name in layout.to_plotly_json() if name.startswith(("xaxis", "yaxis"))]
    for name in axes:
        ax = layout[name]
        if ax.type != "log" or ax.tickvals is not None:
            continue
        letter, ident = name[0], name[0] + name[5:]
        values = []
        for tr in fig.data:
            if (getattr(tr, f"{letter}axis", None) or letter) != ident:
                continue
            data = getattr(tr, letter, None)
            if data is not None:
                values.extend(np.asarray(data, dtype=float).ravel().tolist())
        for shape in layout.shapes or ():
            ref = shape[f"{letter}ref"] or letter
            if ref.split(" ")[0] == ident:
                values += [shape[f"{letter}0"], shape[f"{letter}1"]]
        values = [v for v in values if v is not None and math.isfinite(v) and v > 0]
        if not values:
            continue
        ticks = log_tick_values(min(values), max(values), max_ticks)
        layout[name].update(tickmode="array", tickvals=ticks, ticktext=log_tick_text(ticks))
    return fig


def reference_slope(x0: float, x1: float, y0: float, order: float, name: Optional[str] = None) -> go.Scatter:
    """A dashed guide line of slope ``order`` on log-log axes through ``(x0, y0)`` to ``x1``."""
    y1 = y0 * (x1 / x0) ** order
    return go.Scatter(
        x=[x0, x1], y=[y0, y1], mode="lines", name=name or f"slope {order:g}",
        line=dict(color="#888888", dash="dot"), hoverinfo="skip",
    )
