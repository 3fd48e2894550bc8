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
"""
from __future__ import annotations

from typing import Any

__all__ = ["BOOK_RENDERER", "MODEBAR_PX", "PLOTLYJS_MARKER", "book_renderer", "below_modebar", "figure_html",
           "plotlyjs_html"]

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


MODEBAR_PX = 32
"""Height of plotly's toolbar (the modebar) at the top right of every figure, in pixels."""


def below_modebar(fig):
    """A copy of ``fig`` (a figure or its dict) whose title starts below plotly's toolbar.

    The toolbar sits over the top right of the figure; a long title at the top left ran under it
    on the book's narrow text column.  The title is placed :data:`MODEBAR_PX` below the top edge
    and the top margin grows by as much, so that menus above the plot move down with it."""
    import plotly.graph_objects as go

    out = go.Figure(fig)
    if out.layout.title.text:
        top = out.layout.margin.t
        if top is None:
            top = out.layout.template.layout.margin.t if out.layout.template.layout.margin.t is not None else 100
        out.update_layout(title=dict(y=1.0, yref="container", yanchor="top", pad=dict(t=MODEBAR_PX)),
                          margin=dict(t=top + MODEBAR_PX))
    return out


def figure_html(fig, include_plotlyjs: Any = False) -> str:
    """The HTML ``<div>`` of a figure, for pages that already load plotly.js, its title clear of the
    toolbar (:func:`below_modebar`).

    No MathJax is requested (the book's pages and Jupyter load their own), so figure texts
    should use Unicode (Δt, ε, θ) rather than ``$...$``.
    """
    import plotly.io as pio

    return pio.to_html(
        below_modebar(fig),
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
