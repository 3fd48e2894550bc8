"""The setup cell of every chapter: ``from cnet_lib.book import setup; ctx = setup()``.

:func:`setup` seeds the random generators, chooses how plotly figures are displayed, and
prints the run-size preset, the device and the torch version.  Importing this module changes
nothing; only calling :func:`setup` does.

Plotly and the static book
--------------------------
In a Jupyter kernel plotly (>= 6) displays a figure by default with the
``application/vnd.plotly.v1+json`` mime type only.  The book's HTML writer (myst-nb) cannot
render that mime type, so the figure would be *dropped* from the built page (myst-nb warns
``mystnb.unknown_mime_type``, and the book build, run with ``-W``, fails).  :func:`setup`
therefore makes the renderer ``"cnet_book"`` the default: each figure becomes ``text/html``
only (a ``<div>`` and the ``Plotly.newPlot`` call; no CDN, no MathJax download), and plotly.js
itself is displayed once, inline, in the setup cell's output.  The built pages thus work
offline, and so do Jupyter, JupyterLab and VS Code (which run the scripts of the outputs of a
notebook executed in the session).  On Google Colab plotly's own ``colab`` renderer is kept.
Both work with plotly 5 (Colab's preinstalled major) and plotly 6.
"""
from __future__ import annotations

import os
import random
import sys
from dataclasses import dataclass
from typing import Any, Optional

from ..runtime.device import default_device
from ..runtime.presets import preset_name
from ..runtime.progress import set_bar_factory
from .faults import show_faults_briefly
from .progress import notebook_bar
from .project import PACKAGE_NAME

__all__ = ["NotebookContext", "setup", "in_colab", "installed_build", "BOOK_RENDERER", "figure_html", "plotlyjs_html"]

BOOK_RENDERER = "cnet_book"
_DEFAULT_RENDERERS = BOOK_RENDERER


@dataclass(frozen=True)
class NotebookContext:
    """What :func:`setup` chose: ``ctx.preset``, ``ctx.device``, ``ctx.seed``, ..."""

    preset: str
    device: Any  # torch.device
    seed: int
    torch_version: str
    in_colab: bool
    plotly_renderer: str

    def __str__(self) -> str:
        return f"preset={self.preset} device={self.device} torch={self.torch_version}"


def in_colab() -> bool:
    """True inside a Google Colab runtime."""
    return "google.colab" in sys.modules


def _in_ipython() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def _book_renderer():
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


def _enable_colab_widgets() -> None:
    """Colab renders ipywidgets >= 8 only through its custom widget manager."""
    try:
        import ipywidgets
        from google.colab import output

        if int(ipywidgets.__version__.split(".")[0]) >= 8:
            output.enable_custom_widget_manager()
    except Exception:  # not fatal: the static figures still work
        pass


def _configure_plotly(renderer: Optional[str]) -> str:
    """Make ``renderer`` plotly's default (``"colab"`` on Colab, else the book's); returns it.

    The book's renderer is registered only when it is used, so Colab never depends on it.
    """
    import plotly.io as pio

    if renderer is None:
        renderer = "colab" if in_colab() else _DEFAULT_RENDERERS
    if BOOK_RENDERER in renderer.split("+") and BOOK_RENDERER not in pio.renderers:
        pio.renderers[BOOK_RENDERER] = _book_renderer()
    pio.renderers.default = renderer
    if BOOK_RENDERER in renderer.split("+") and _in_ipython():
        from IPython.display import HTML, display

        display(HTML(plotlyjs_html()))
    return renderer


def _seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def installed_build() -> str:
    """The installed cnet-lib: its version, plus ``@<commit>`` when pip installed it from a git commit."""
    import json
    from importlib import metadata


    try:
        dist = metadata.distribution(PACKAGE_NAME)
    except metadata.PackageNotFoundError:
        return "not installed"
    try:
        info = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        info = {}
    commit = (info.get("vcs_info") or {}).get("commit_id")
    return f"{dist.version}@{commit}" if commit else dist.version


def _version_warning(expected: str, got: str) -> str:
    return (
        f"WARNING: this copy of the chapter was made for cnet-lib {expected}, but {got} is installed: its "
        "checks may not be the ones your teacher prepared.\n"
        "  In Google Colab: Runtime > Disconnect and delete runtime, then run the cells again from the first one.\n"
        "  On your own machine: install the library the way the first cell of this notebook does (its %pip line)."
    )


def setup(seed: int = 0, renderer: Optional[str] = None, quiet: bool = False,
          expected_build: Optional[str] = None) -> NotebookContext:
    """Prepare a chapter: seed, plotly display, and print the preset and device; in IPython, the
    library's faults show as their one sentence (:mod:`cnet_lib.book.faults`).

    ``renderer`` overrides the plotly renderer string (default: ``"cnet_book"``, or ``"colab"``
    on Colab; a renderer without ``text/html`` output makes the book build fail).  The preset
    comes from ``$CNET_PRESET`` (see :mod:`cnet_lib.runtime.presets`), the device from ``$CNET_DEVICE``
    or CUDA availability (see :mod:`cnet_lib.runtime.device`).  ``expected_build`` (written into student
    copies, see :mod:`cnet_lib.book.student`) is the :func:`installed_build` the copy was made for;
    a different one prints a warning that says what to do.
    """
    import torch

    preset = preset_name()
    device = default_device()
    _seed_everything(seed)
    used = _configure_plotly(renderer)
    if _in_ipython():
        from IPython import get_ipython

        set_bar_factory(notebook_bar)  # progress bars of the studies: live in the notebook, a line in the book
        show_faults_briefly(get_ipython())  # a fault (out of memory, damaged file, ...) shows as its one sentence
    if in_colab():
        _enable_colab_widgets()
    ctx = NotebookContext(
        preset=preset,
        device=device,
        seed=seed,
        torch_version=torch.__version__,
        in_colab=in_colab(),
        plotly_renderer=used,
    )
    if not quiet:
        where = "Google Colab" if ctx.in_colab else "local"
        gpu = f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else ""
        print(f"preset: {preset}   (set CNET_PRESET=smoke|cpu|gpu|paper to change it)")
        print(f"device: {device}{gpu}   torch {torch.__version__}   [{where}]")
        if device.type == "cpu" and "CNET_PRESET" not in os.environ and ctx.in_colab:
            print("tip: Runtime > Change runtime type > GPU runs the 'gpu' preset")
    if expected_build is not None and installed_build() != expected_build:
        print(_version_warning(expected_build, installed_build()))
    return ctx
