"""Sphinx extension: plotly.js as one shared, cached file instead of a copy inlined in every page.

In Jupyter, a chapter's setup cell puts plotly.js on the page once, inline (``cnet_lib`` marks
those scripts with ``data-cnet-plotlyjs``), so that its figures draw offline.  In the built book
that inline copy would make every chapter page about 5 MB.  This extension removes the marked
scripts from each page and, on pages that draw plotly figures, loads ``_static/plotly-<version>.min.js``
instead (the partial bundle vendored beside this file, which draws every figure of the book, or
the installed plotly package's full bundle; so the book stays offline).  The browser then downloads plotly.js once
for the whole book.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

MARKER = "data-cnet-plotlyjs"
_INLINE = re.compile(r'<script type="text/javascript" ' + MARKER + r'="1">.*?</script>\s*', re.S)


VENDOR = Path(__file__).with_name("vendor")
"""plotly.js as the book's static figures need it (MIT licence beside it): its core, which draws scatter traces and
every layout component (sliders, menus, legends, annotations, shapes), with the bar and heatmap traces, the only
other trace types the book's pages draw, in 1.17 MB, against 1.5 MB for plotly's *cartesian* bundle and 4.8 MB for
the full one (issue 44: a first visit of a chapter weighed 3.6 MB, 1.5 MB of it plotly.js).  It must be the version
of plotly.js that the installed plotly package bundles (the figures' JSON is written for that version):
``tests/test_book_build.py`` checks it, and a build with another plotly serves the full bundle.  To make it for
another version (Node.js and npm, from the npm registry; nothing of it is needed to build the book)::

    npm install plotly.js@<version> esbuild
    npx esbuild book/_ext/vendor/plotly-book-entry.js --bundle --minify --format=iife --global-name=Plotly \\
        --define:global=window --define:process.env.NODE_ENV='"production"' --outfile=plotly-book.min.js

then put the header of the file beside it, with the new version, above the output, as
``book/_ext/vendor/plotly-book-<version>.min.js``.  (The live apps' figures, drawn in Jupyter or Colab by plotly's own
renderer, may use other trace types: ``cnet_lib.draw.widgets`` draws its images with ``go.Image``.)"""
BUNDLE = "plotly-book-{version}.min.js"


def _plotly_file():
    """``(source, name)`` of the plotly.js the pages load: the vendored bundle of the installed plotly's plotly.js
    version when there is one, else the installed package's full bundle."""
    import plotly
    from plotly.offline import get_plotlyjs_version

    version = get_plotlyjs_version()
    partial = VENDOR / BUNDLE.format(version=version)
    if partial.is_file():
        return partial, partial.name
    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js", f"plotly-{version}.min.js"


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
