"""Sphinx extension: the book's outputs wrap to the page (``output_style.css`` beside this file).

In Jupyter and Colab a long printed line wraps; in the built book a ``<pre>`` output scrolled sideways
inside its code box instead, which hid the end of every long sentence.  The stylesheet makes printed
output wrap, lets display math wider than a phone scroll inside its own box, keeps figures within
the text column, and on a phone sets margin notes between the paragraphs instead of beside a code cell.  Tables and verdicts are HTML (:mod:`cnet_lib.runtime.rich_text`) and carry their own
style, so that Jupyter and Colab show them the same way.
"""
from __future__ import annotations

import shutil
from pathlib import Path

CSS = Path(__file__).with_suffix(".css")


def _copy(app):
    if app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CSS, static / CSS.name)


def setup(app):
    app.connect("builder-inited", _copy)
    app.add_css_file(CSS.name)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
