"""Sphinx extension: plotly.js as one shared, cached file instead of a copy inlined in every page.

In Jupyter, a chapter's setup cell puts plotly.js on the page once, inline (``cnet_lib`` marks
those scripts with ``data-cnet-plotlyjs``), so that its figures draw offline.  In the built book
that inline copy would make every chapter page about 5 MB.  This extension removes the marked
scripts from each page and, on pages that draw plotly figures, loads ``_static/plotly-<version>.min.js``
instead (copied from the installed plotly package, so the book stays offline).  The browser then
downloads plotly.js once for the whole book.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

MARKER = "data-cnet-plotlyjs"
_INLINE = re.compile(r'<script type="text/javascript" ' + MARKER + r'="1">.*?</script>\s*', re.S)


def _plotly_file():
    import plotly
    from plotly.offline import get_plotlyjs_version

    src = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    return src, f"plotly-{get_plotlyjs_version()}.min.js"


def _copy(app):
    if app.builder.format != "html":
        return
    src, name = _plotly_file()
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    if not (static / name).is_file():
        shutil.copyfile(src, static / name)


def _page(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if not body:
        return
    if MARKER in body:
        context["body"] = body = _INLINE.sub("", body)
    if "plotly-graph-div" not in body:
        return
    from sphinx.builders.html._assets import _JavaScript

    name = _plotly_file()[1]
    context["script_files"] = list(context.get("script_files", [])) + [
        _JavaScript("", body="window.PlotlyConfig = {MathJaxConfig: 'local'};", priority=900),
        _JavaScript(f"_static/{name}", priority=900),
    ]


def setup(app):
    app.connect("builder-inited", _copy)
    app.connect("html-page-context", _page, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
