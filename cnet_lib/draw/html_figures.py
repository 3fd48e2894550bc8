"""A plotly figure as the book's HTML: a ``<div>`` for pages that load plotly.js once, the renderer that
makes every figure of a notebook such a ``<div>``, and plotly.js itself, once per page.

In a Jupyter kernel plotly (>= 6) displays a figure by default with the
``application/vnd.plotly.v1+json`` mime type only.  The book's HTML writer (myst-nb) cannot render
that mime type, so the figure would be *dropped* from the built page (myst-nb warns
``mystnb.unknown_mime_type``, and the book build, run with ``-W``, fails).  The setup cell
(:func:`cnet_lib.book.setup`) therefore makes :data:`BOOK_RENDERER` the default: each figure becomes
``text/html`` only (:func:`figure_html`: a ``<div>`` and the ``Plotly.newPlot`` call; no CDN, no
MathJax download), and plotly.js itself is displayed once, inline, in the setup cell's output
(:func:`plotlyjs_html`).  Both work with plotly 5 (Colab's preinstalled major) and plotly 6.

Also here: a figure's layout on a phone, what changes when the page is narrow (:func:`phone_updates`,
:func:`phone_script`).
"""
from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["BOOK_RENDERER", "MODEBAR_PX", "TITLE_CHARS", "PLOTLYJS_MARKER", "book_renderer", "wrap_title",
           "below_modebar", "MAX_LINE_POINTS", "lean", "figure_html", "plotlyjs_html", "PHONE_PX", "LEGEND_GAP_PX",
           "phone_updates", "phone_script"]


# A figure's layout on a phone: what changes when the book's page is narrow.
#
# On a laptop the book's legends sit in a column to the right of the plot (:data:`cnet_lib.draw.plotting.LEGEND_RIGHT`)
# or in rows under it (:data:`~cnet_lib.draw.plotting.LEGEND_BELOW`).  On a phone (a text column of about 350 px) a
# column on the right leaves the plot a strip of 90 px, rows under the plot need more lines than on a laptop and ran
# past the figure's bottom edge, and a slider under such a plot prints its step labels on top of each other.  Plotly
# has no media queries, so the book's HTML carries a few lines of script (:func:`phone_script`) that, when the figure
# is drawn narrower than :data:`PHONE_PX`, apply :func:`phone_updates` with ``Plotly.relayout`` and then make room
# for the legend as the browser drew it:
#
# * the legend moves below everything, to the bottom of the figure (``yref: container``), in rows that may be as
#   tall as they need (``maxheight``: no scrolling legend); once drawn, its height is measured and the figure grows by
#   that much, so the plot keeps its own height and no legend entry falls outside the figure;
# * a slider moves down, clear of the x-axis title; one whose step labels do not fit side by side hides them
#   (transparent), keeps its current-value label, which names the step shown, and runs the width of the figure (the
#   padding that kept its end labels inside had left a rail of 48 px).
#
# The figure's box on the page grows with it (``book/_ext/phone.js``, which also gives a slider with steps too close
# for a finger a menu of its steps, and passes a touch on a slider to plotly as the mouse events it reads).  Wider
# pages (Jupyter, Colab, the book on a laptop) keep the figure exactly as built.

PHONE_PX = 520
"""Below this drawn width (CSS pixels) a figure takes its phone layout."""
LEGEND_GAP_PX = 12
"""Room between the legend's rows and what is above them (the x-axis title or the slider)."""

_CHAR_PX = 6.5  # an average character of plotly's default 12 px font
_PHONE_WIDTH = 340  # the book's text column on a 390 px phone
_SLIDER_DROP = 30  # a slider moves this far down, clear of the x-axis title
_SLIDER_END_PX = 10  # a slider's padding at either end once its step labels are hidden
_BELOW_ROOM = 70  # what LEGEND_BELOW keeps under the x-axis title for its rows, given back once they move


_LEGEND_OFF = frozenset({"heatmap", "contour", "histogram2d", "histogram2dcontour", "surface"})
"""Trace types that plotly.js leaves out of the legend unless ``showlegend=True`` (a trace type without a
``showlegend`` property, such as ``image``, never has an entry)."""


def _in_legend(trace) -> bool:
    """Whether plotly shows ``trace`` in the legend: drawn (not ``visible=False``), named, and shown there."""
    if "showlegend" not in trace or trace["visible"] is False or not trace["name"]:
        return False
    shown = trace["showlegend"]
    return shown if shown is not None else trace.type not in _LEGEND_OFF


def _legend_entries(fig) -> list[str]:
    """The names the legend shows first: the traces plotly shows in it (:func:`_in_legend`), of any trace type."""
    return [str(t["name"]) for t in fig.data if _in_legend(t)]


def _legend_moves(fig) -> bool:
    """Whether the legend is shown beside the plot (on the right) or in rows under it (LEGEND_BELOW)."""
    legend = fig.layout.legend
    if fig.layout.showlegend is False or legend.yref == "container":
        return False
    right = legend.orientation != "h" and (legend.x is None or legend.x >= 1.0)
    below = legend.orientation == "h" and legend.y is not None and legend.y < 0
    return right or below


def phone_updates(fig) -> dict[str, Any]:
    """The ``Plotly.relayout`` updates of ``fig``'s phone layout (see the module doc); empty when it needs none.

    ``margin.b`` and ``height`` are the figure's without its legend's rows: :func:`phone_script` adds the height
    of the rows as drawn."""
    updates: dict[str, Any] = {}
    margin = fig.layout.margin
    bottom = margin.b if margin.b is not None else 80
    height = fig.layout.height or 450
    if _legend_entries(fig) and _legend_moves(fig):
        if fig.layout.legend.orientation == "h":  # rows under the plot: the room kept for them moves to the bottom
            bottom, height = max(40, bottom - _BELOW_ROOM), height - min(_BELOW_ROOM, bottom - 40)
        updates.update({"legend.orientation": "h", "legend.x": 0, "legend.xref": "container", "legend.xanchor": "left",
                        "legend.yref": "container", "legend.y": 0, "legend.yanchor": "bottom", "legend.maxheight": 4000,
                        "margin.r": 20, "margin.b": bottom, "height": height})
    sliders = fig.layout.sliders or ()
    if sliders and fig.layout.xaxis.title.text:  # the current value sits under the middle of the x axis
        for i, slider in enumerate(sliders):
            updates[f"sliders[{i}].pad.t"] = (slider.pad.t if slider.pad.t is not None else 20) + _SLIDER_DROP
        updates["margin.b"] = updates.get("margin.b", bottom) + _SLIDER_DROP
        updates["height"] = updates.get("height", height) + _SLIDER_DROP
    for i, slider in enumerate(sliders):
        labels = [str(s.label) for s in slider.steps]
        if sum(len(lab) * _CHAR_PX + 12 for lab in labels) > _PHONE_WIDTH - 110:
            updates[f"sliders[{i}].font.color"] = "rgba(0,0,0,0)"
            updates[f"sliders[{i}].currentvalue.font.color"] = "#444"  # it would inherit the transparent colour
            # the padding kept the end labels inside the figure; hidden, it only shortened the rail (to 48 px)
            updates[f"sliders[{i}].pad.l"] = updates[f"sliders[{i}].pad.r"] = _SLIDER_END_PX
    return updates


def phone_script(updates: dict[str, Any]) -> str:
    """The script (for plotly's ``post_script``, ``{plot_id}`` filled in by plotly) that applies ``updates``
    once when the figure is drawn narrower than :data:`PHONE_PX` and, when they move the legend, grows the
    figure by the height of the legend's rows as drawn; an empty string for no updates."""
    if not updates:
        return ""
    grow = ""
    if updates.get("legend.yref") == "container":
        b, h = updates["margin.b"], updates["height"]
        grow = (".then(function(){var bg=gd.querySelector('.legend > .bg');"
                "var r=bg?Math.ceil(bg.getBoundingClientRect().height)+" + str(LEGEND_GAP_PX) + ":0;"
                f"return Plotly.relayout(gd,{{'margin.b':{b}+r,'height':{h}+r}});}})")
    return ("(function(){var gd=document.getElementById('{plot_id}');"
            f"if(gd&&gd.offsetWidth<{PHONE_PX}){{Plotly.relayout(gd,{json.dumps(updates)}){grow}"
            ".then(function(){var p=gd.parentElement;if(p&&p.style.height)"
            "p.style.height=gd._fullLayout.height+'px';});}})();")


# ---------------------------------------------------------------------- the module's own part (its docstring above)

BOOK_RENDERER = "cnet_book"
"""The name under which :func:`book_renderer` is registered with plotly."""


def book_renderer():
    """A ``text/html`` renderer that expects plotly.js already on the page (see module doc).

    Built on plotly's ``MimetypeRenderer``, whose interface is the same in plotly 5 and 6
    (``HtmlRenderer``'s constructor is not: ``include_plotlyjs`` only exists from 6.1 on).
    """
    from plotly.io._base_renderers import MimetypeRenderer

    class BookHtmlRenderer(MimetypeRenderer):
        def activate(self):  # plotly.js is displayed once by setup(), not per figure
            pass

        def to_mimebundle(self, fig_dict):
            return {"text/html": figure_html(fig_dict)}

    return BookHtmlRenderer()


MODEBAR_PX = 38
"""Height of plotly's toolbar (the modebar) at the top right of every figure, in pixels."""


TITLE_CHARS = 44
"""A figure title longer than this is broken into lines (:func:`wrap_title`): at the book's font a line
of this length fits a phone's screen (400 px)."""
TITLE_LINE_PX = 20
"""The height of one more line of a wrapped title (at :data:`TITLE_FONT_PX`)."""
TITLE_FONT_PX = 15
TITLE_LINES_RISE_PX = 11
"""How much higher plotly.js sets the top of a title of several lines than that of a one-line title at the same
padding (:data:`TITLE_FONT_PX`; measured in Chromium, plotly.js 4.1: 35 px below the top for one line, 24 px for two
to five lines, at a padding of 38 px)."""


_GLUE = ("=", "±", "≈", "×", "<", ">", "≤", "≥")
"""A title never breaks next to one of these: ``N_t = 4`` and ``0.72 ± 0.03`` stay on one line."""
_TAG = re.compile(r"^<(sup|sub|b|i|em)>(.*)</\1>$")


_PHRASE_END = (",", ";", ":", "→")
"""A break after a piece ending in one of these ends a phrase: the place a title breaks first."""


_NUMBER = re.compile(r"^\(?[−+-]?[0-9.]")


def _pieces(line: str) -> list[str]:
    """``line``'s words, each word joined to its neighbours where a title must not break: around the signs of
    :data:`_GLUE`, before a number (``is 9.49e-05``) and after it (``128 images``) unless a phrase or a parenthesis
    starts there."""
    words = line.split()
    out: list[str] = []
    for word in words:
        last = out[-1].split(" ")[-1] if out else ""
        glue = out and (last in _GLUE or word in _GLUE or _NUMBER.match(word)
                        or (_NUMBER.match(last) and not last.endswith(_PHRASE_END) and not word.startswith("(")))
        if glue:
            out[-1] += " " + word
        else:
            out.append(word)
    return out


def _wrap_line(line: str, width: int) -> list[str]:
    """``line`` in lines of at most ``width`` characters, broken only between :func:`_pieces`: the fewest lines,
    counting a break inside a phrase as one more (a line more is as dear as a break inside a phrase), then the lines'
    lengths as even as they can be."""
    tag = _TAG.match(line)
    if tag:  # a line set in <sup>…</sup> is broken inside the tag, each part set in it again
        return [f"<{tag.group(1)}>{part}</{tag.group(1)}>" for part in _wrap_line(tag.group(2), width)]
    if len(line) <= width or "<" in line.replace("< ", "").replace("<=", ""):
        return [line]
    pieces = _pieces(line)
    n = len(pieces)
    best: list = [None] * (n + 1)  # best[j]: (cost, raggedness, start of its last line) of pieces[:j]
    best[0] = (0, 0, 0)
    for j in range(1, n + 1):
        for i in range(j - 1, -1, -1):
            length = len(" ".join(pieces[i:j]))
            if length > width and i < j - 1:
                break  # a piece longer than a line stands alone on its line
            inside = 1 if i > 0 and not pieces[i - 1].endswith(_PHRASE_END) else 0
            slack = 0 if j == n else max(width - length, 0) ** 2
            cand = (best[i][0] + 1 + inside, best[i][1] + slack, i)
            if best[j] is None or cand[:2] < best[j][:2]:
                best[j] = cand
    lines, j = [], n
    while j > 0:
        i = best[j][2]
        lines.append(" ".join(pieces[i:j]))
        j = i
    return lines[::-1]


def wrap_title(text: str, width: int = TITLE_CHARS) -> str:
    """``text`` broken with ``<br>`` into lines of at most ``width`` characters where it can be (:func:`_wrap_line`):
    at the ends of phrases (after ``,``, ``;``, ``:``) rather than inside one, never next to ``=``, ``±`` and the like
    nor before a number (``error at t = 2 is 9.49e-05`` never ends a line with ``is``).  The author's own
    ``<br>`` stay; a line of the author's longer than ``width`` is broken the same way, a line set in ``<sup>`` inside
    it."""
    if not text or len(text) <= width:
        return text
    return "<br>".join(part for line in text.split("<br>") for part in _wrap_line(line, width))


def below_modebar(fig, grow: bool = False):
    """A copy of ``fig`` (a figure or its dict) whose title starts below plotly's toolbar, broken into
    lines that fit a phone (:func:`wrap_title`).

    The toolbar sits over the top right of the figure; a long title at the top left ran under it
    on the book's narrow text column, and ran off a phone's screen.  The title is placed
    :data:`MODEBAR_PX` below the top edge and the top margin grows by as much, and by
    :data:`TITLE_LINE_PX` for each line the title gains, so that menus above the plot move down with it; with
    ``grow`` the figure grows by as much too, so that its plot keeps its height (a live app's answer, whose title
    says numbers of any length).  A figure placed so already is returned as it is (a copy): a live app places its
    answers itself, for Colab's renderer too, and the book's renderer places every figure."""
    import plotly.graph_objects as go

    out = go.Figure(fig)
    placed = out.layout.title.yref == "container" and out.layout.title.pad.t is not None
    if out.layout.title.text and not placed:  # a figure placed already (a live app's answer) is kept as it is
        top = out.layout.margin.t
        if top is None:
            top = out.layout.template.layout.margin.t if out.layout.template.layout.margin.t is not None else 100
        text = wrap_title(out.layout.title.text)
        extra = text.count("<br>") * TITLE_LINE_PX
        # plotly.js (4.1) sets a title of several lines TITLE_LINES_RISE_PX higher than one of one line: pad it down
        # by as much, so that every title starts where a one-line title does, clear of the toolbar (measured in
        # Chromium: padded by the extra lines, as before, a title of five lines ran 21 px into the plot)
        pad = MODEBAR_PX + (TITLE_LINES_RISE_PX if extra else 0)
        out.update_layout(title=dict(text=text, y=1.0, yref="container", yanchor="top", pad=dict(t=pad),
                                     font=dict(size=TITLE_FONT_PX)),
                          margin=dict(t=top + MODEBAR_PX + extra))
        if grow:
            out.update_layout(height=(out.layout.height or 450) + MODEBAR_PX + extra)
    return out


TEMPLATE_LAYOUT = ("autotypenumbers", "colorway", "font", "hovermode", "hoverlabel", "paper_bgcolor", "plot_bgcolor",
                   "xaxis", "yaxis", "shapedefaults", "annotationdefaults", "title", "coloraxis")
"""What of a template's layout a book figure uses (plotly_white's polar, ternary, 3-D scene, map and colour-scale
defaults are for traces the book never draws)."""
TEMPLATE_DATA = ("scatter", "bar")
"""The trace types whose template defaults a book figure keeps (the others are never drawn, or set their own colours)."""
FLOAT32_RANGE = (1e-30, 1e30)
"""Numbers of a trace are written as 32-bit floats (7 significant digits, half the bytes) when every nonzero one lies
in this range (a float32 would turn a smaller one into 0, which a log axis cannot draw)."""


_DTYPES = {"f8": "<f8", "f4": "<f4", "i1": "<i1", "u1": "<u1", "i2": "<i2", "u2": "<u2", "i4": "<i4", "u4": "<u4"}


def _decoded(values):
    """A typed array as plotly writes it (``{"dtype": "f8", "bdata": ...}``: what a notebook's renderer is handed) as
    a numpy array; anything else unchanged."""
    import base64

    import numpy as np

    if isinstance(values, dict) and "bdata" in values and values.get("dtype") in _DTYPES:
        arr = np.frombuffer(base64.b64decode(values["bdata"]), dtype=_DTYPES[values["dtype"]])
        shape = values.get("shape")
        if shape:
            arr = arr.reshape([int(n) for n in str(shape).split(",")] if isinstance(shape, str) else shape)
        return arr
    return values


def _float32(values):
    """``values`` as a float32 array when it is a long enough run of real numbers that float32 holds (see
    :data:`FLOAT32_RANGE`), else unchanged."""
    import numpy as np

    if isinstance(values, (str, bytes, dict)) or values is None:
        return values
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        return values
    if arr.size < 16 or arr.dtype.kind not in "fi" or (arr.dtype.kind == "i" and arr.dtype.itemsize <= 4):
        return values
    if arr.dtype.kind == "i":
        return arr.astype(np.int32) if np.abs(arr).max() < 2 ** 31 else values
    size = np.abs(arr[np.isfinite(arr)])
    size = size[size > 0]
    if size.size and (size.min() < FLOAT32_RANGE[0] or size.max() > FLOAT32_RANGE[1]):
        return values
    return arr.astype(np.float32)


MAX_LINE_POINTS = 200
"""A line (a trace drawn without markers) keeps at most about this many points: a phone's figure is 340 px wide, a
laptop's 700 px, and the book's long lines are smooth (forty points a period of the pendulum over [0, 10]) (a pendulum's rollout over [0, 10] had 1,001 points, 85 such traces
made one figure 487 KB)."""


def _set(trace, name: str, value) -> None:
    """``trace[name] = value``, with value's own dtype (plotly casts an array assigned over another to the old one's
    dtype: a float32 x over a float64 one stayed float64)."""
    trace[name] = None
    trace[name] = value


def _thin(trace) -> None:
    """A line's points thinned to about :data:`MAX_LINE_POINTS`, every k-th kept with the last (markers, each a data
    point, are left alone), and an evenly spaced x written as ``x0`` and ``dx`` instead of an array."""
    import numpy as np

    if getattr(trace, "type", None) != "scatter" or trace.x is None or trace.y is None or "markers" in (trace.mode or ""):
        return
    try:
        x, y = np.asarray(trace.x, dtype=float), np.asarray(trace.y)
    except (TypeError, ValueError):
        return
    if x.ndim != 1 or len(x) != len(y) or len(x) < 3:
        return
    n = len(x)
    step = 1
    if n > MAX_LINE_POINTS:
        least = -(-(n - 1) // MAX_LINE_POINTS)  # a step that lands on the last point keeps x evenly spaced, if near
        step = next((k for k in range(least, 3 * least + 1) if (n - 1) % k == 0), least)
    if step > 1:
        keep = np.unique(np.append(np.arange(0, n, step), n - 1))
        x, y = x[keep], y[keep]
        for name in ("customdata", "text", "hovertext"):
            value = getattr(trace, name, None)
            if value is not None and not isinstance(value, str) and len(value) == n:
                setattr(trace, name, [value[i] for i in keep])
        _set(trace, "y", y)
    gaps = np.diff(x)  # even to float32's precision (a grid stored as float32 is even to about 1e-7 of its span)
    if len(gaps) and np.all(np.isfinite(gaps)) and gaps[0] > 0 and np.allclose(gaps, gaps[0], rtol=0,
                                                                              atol=1e-6 * np.max(np.abs(x))):
        trace.x, trace.x0, trace.dx = None, float(x[0]), float(gaps[0])
    elif step > 1:
        _set(trace, "x", x)


def lean(fig):
    """``fig`` (a figure) written in fewer bytes and drawn alike: long lines thinned to what a screen shows and an
    evenly spaced x as its start and step (:func:`_thin`), its numbers as 32-bit floats where they fit (:func:`_float32`;
    the page's figures were most of its HTML) and its template cut to what the book's figures use
    (:data:`TEMPLATE_LAYOUT`, :data:`TEMPLATE_DATA`; plotly_white's whole template was 7 KB in every figure)."""
    import plotly.graph_objects as go

    for trace in fig.data:
        for name in ("x", "y", "z"):
            if name in trace and isinstance(trace[name], dict):
                _set(trace, name, _decoded(trace[name]))
        _thin(trace)
        for name in ("x", "y", "z"):
            if name in trace and trace[name] is not None:
                _set(trace, name, _float32(trace[name]))
    template = fig.layout.template.to_plotly_json() if fig.layout.template else {}
    if template:
        kept = {"layout": {k: v for k, v in (template.get("layout") or {}).items() if k in TEMPLATE_LAYOUT},
                "data": {k: v for k, v in (template.get("data") or {}).items() if k in TEMPLATE_DATA}}
        fig.layout.template = go.layout.Template(kept)
    return fig


def figure_html(fig, include_plotlyjs: Any = False) -> str:
    """The HTML ``<div>`` of a figure, for pages that already load plotly.js, its title clear of the
    toolbar (:func:`below_modebar`).

    No MathJax is requested (the book's pages and Jupyter load their own), so figure texts
    should use Unicode (Δt, ε, θ) rather than ``$...$``.  Drawn narrower than a phone's page, the figure
    takes its phone layout (:mod:`cnet_lib.draw.html_figures`: the legend below, crowded slider labels
    hidden).
    """
    import plotly.io as pio

    fig = lean(below_modebar(fig))
    return pio.to_html(
        fig,
        post_script=phone_script(phone_updates(fig)) or None,
        include_plotlyjs=include_plotlyjs,
        include_mathjax=False,
        full_html=False,
        default_width="100%",
        default_height=480,
        validate=False,
        config={"responsive": True, "displaylogo": False},
    )


PLOTLYJS_MARKER = "data-cnet-plotlyjs"
"""Marks the inline plotly.js of a setup cell: the book's Sphinx extension ``book/_ext/plotly_asset.py``
removes these scripts and loads one shared ``_static/plotly-<version>.min.js`` instead."""


def plotlyjs_html() -> str:
    """plotly.js (the copy shipped with the installed plotly), as one inline ``<script>``, marked
    with :data:`PLOTLYJS_MARKER` so that the built book can replace it by a shared file."""
    from plotly.offline import get_plotlyjs

    tag = f'<script type="text/javascript" {PLOTLYJS_MARKER}="1">'
    return (
        f"{tag}window.PlotlyConfig = {{MathJaxConfig: 'local'}};</script>\n"
        f"{tag}{get_plotlyjs()}</script>"
    )
