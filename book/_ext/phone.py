"""Sphinx extension: the book's navigation, figures and formulas on a phone (``phone.js`` beside this file, on every
page).

* **the chapter list and the page contents**: pydata-sphinx-theme 0.17.1 (and sphinx-book-theme 1.3.0's fix for wide
  screens) bind their handlers to the first ☰ and page-contents buttons of the page, the site header's, which the book
  theme hides; the buttons a reader sees, in the article's header, did nothing (on a phone the chapter list could not
  be opened; on a laptop the sidebar did not collapse).  A click or tap on a visible one is handed to the bound one; a
  page without contents hides the button of its contents.

What plotly and MathJax leave to a page, at 390 px:

* **a figure's box follows its height**: plotly's HTML gives a figure's box a fixed height; the phone layout of a
  figure (:mod:`cnet_lib.draw.html_figures`) makes it taller, to put its legend below the plot, and the legend ran
  past the box over the text that follows;
* **slider steps a finger can choose**: a slider whose steps lie closer than 24 px gets a menu of its steps beside
  it, and follows it both ways;
* **sliders under touch**: plotly's sliders read the pointer of mouse events only (a drag with a finger did not
  move them); a touch on a slider is passed on as the mouse events plotly reads;
* **formulas fit the text column**: MathJax 3 does not break display formulas, and one wider than a phone's column
  was cut off; it is scaled down to fit (the long ones are also broken into lines in the chapters' source); a formula
  in a line of text wider than its paragraph is scaled down to 70% at most, and scrolls in its own box beyond that;
* **category labels stay**: where a category axis's labels overlap, they take a smaller font, then stand upright
  (each names a bar: none is left out).

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
