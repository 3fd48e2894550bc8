"""Sphinx extension: the book's figures and formulas on a phone (``phone.js`` beside this file, on every page with a
figure or a formula).

What plotly and MathJax leave to a page, at 390 px:

* **a figure's box follows its height**: plotly's HTML gives a figure's box a fixed height; the phone layout of a
  figure (:mod:`cnet_lib.draw.phone_layout`) makes it taller, to put its legend below the plot, and the legend ran
  past the box over the text that follows;
* **slider steps a finger can choose**: a slider whose steps lie closer than 24 px gets a menu of its steps beside
  it, and follows it both ways;
* **sliders under touch**: plotly's sliders read the pointer of mouse events only (a drag with a finger did not
  move them); a touch on a slider is passed on as the mouse events plotly reads;
* **formulas fit the text column**: MathJax 3 does not break display formulas, and one wider than a phone's column
  was cut off; it is scaled down to fit (the long ones are also broken into lines in the chapters' source).

The browser test (``tests/book_browser.py``) checks each of these at 390 px and at 1280 px.
"""
from __future__ import annotations

import shutil
from pathlib import Path

JS = Path(__file__).with_suffix(".js")


def _copy(app):
    if app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(JS, static / JS.name)


def _page(app, pagename, templatename, context, doctree):
    from sphinx.builders.html._assets import _JavaScript

    context["script_files"] = list(context.get("script_files", [])) + [_JavaScript(f"_static/{JS.name}", priority=900)]


def setup(app):
    app.connect("builder-inited", _copy)
    app.connect("html-page-context", _page, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
