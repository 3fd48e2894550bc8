"""Sphinx extension: the book's formulas typeset once, when the book is built, instead of in every reader's browser.

MathJax in the browser cost a first visit of a page with a formula about 820 KB (its core, the TeX input, the CHTML
output and its font data) before the formula appeared.  After the build this extension collects every formula of
every page (Sphinx writes them as ``\\(...\\)`` and ``\\[...\\]`` in elements of class ``math``), has MathJax itself
typeset them with Node.js (``static_math.js`` beside this file, the MathJax that ``sphinx-mathjax-offline`` ships:
the same CHTML, with the assistive MathML that screen readers read), writes them into the pages, and writes the
stylesheet of the characters used once (``_static/math.css``); the pages then load no MathJax script, only that
stylesheet and the MathJax fonts their formulas use.

Without Node.js (``node`` on the PATH) or when it fails, the pages keep MathJax in the browser, as before, and the
build says so.
"""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from sphinx.util import logging

LOG = logging.getLogger(__name__)
SCRIPT = Path(__file__).with_suffix(".js")
CSS = "math.css"
FONTS = "mathjax/output/chtml/fonts/woff-v2"
"""The MathJax fonts, relative to ``_static`` (where :data:`CSS` is)."""
SCALE = 1.25
"""The formulas' size against the text's: what MathJax in the browser chose to match the x-height of the theme's font
(about 0.53 em against MathJax's 0.44 em), which a build cannot measure."""

MATH = re.compile(r'(<(span|div) class="math notranslate nohighlight">)\s*(\\\(|\\\[)(.*?)(\\\)|\\\])\s*(</\2>)', re.S)
MATHJAX_SCRIPTS = re.compile(r'\s*<script>window\.MathJax = .*?</script>|\s*<script defer="defer" src="[^"]*_static/mathjax/'
                             r'startup\.js[^"]*"></script>', re.S)


def _mathjax_dir():
    try:
        import importlib.util

        spec = importlib.util.find_spec("sphinx-mathjax-offline")
        root = Path(spec.origin).parent if spec and spec.origin else None
    except (ImportError, ValueError):
        root = None
    if root is None:
        import sphinx

        root = Path(sphinx.__file__).parents[1] / "sphinx-mathjax-offline"
    folder = root / "static" / "mathjax"
    return folder if (folder / "node-main.js").is_file() else None


def typeset(items: list, mathjax: Path, font_url: str = FONTS, timeout: int = 300) -> tuple[list, str]:
    """``(html of each (tex, display) item, the stylesheet)``, typeset by MathJax in Node.js; raises
    ``RuntimeError`` saying why it could not."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("no Node.js (node) on the PATH")
    with tempfile.TemporaryDirectory(prefix="static-math-") as tmp:
        src, out = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps({"fontURL": font_url, "scale": SCALE, "items": items}), encoding="utf-8")
        proc = subprocess.run([node, str(SCRIPT), str(mathjax), str(src), str(out)], capture_output=True, text=True,
                              timeout=timeout)
        if proc.returncode != 0 or not out.is_file():
            raise RuntimeError(f"node exited with {proc.returncode}: {proc.stderr.strip()[-500:]}")
        done = json.loads(out.read_text(encoding="utf-8"))
    if len(done["html"]) != len(items):
        raise RuntimeError(f"{len(done['html'])} formulas typeset of {len(items)}")
    return done["html"], done["css"]


def _finished(app, exc):
    if exc is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    pages = {p: p.read_text(encoding="utf-8") for p in out.rglob("*.html")}
    found = {p: list(MATH.finditer(t)) for p, t in pages.items()}
    items = sorted({(html.unescape(m.group(4)).strip(), m.group(3) == "\\[") for ms in found.values() for m in ms})
    if not items:
        return
    mathjax = _mathjax_dir()
    try:
        if mathjax is None:
            raise RuntimeError("sphinx-mathjax-offline's MathJax (with node-main.js) is not installed")
        typeset_html, css = typeset([list(i) for i in items], mathjax)
    except (RuntimeError, OSError, subprocess.SubprocessError, ValueError) as err:
        LOG.info(f"formulas left to MathJax in the browser: {err}")
        return
    done = dict(zip(items, typeset_html))
    (out / "_static" / CSS).write_text(css, encoding="utf-8")
    for page, matches in found.items():
        if not matches:
            continue
        text = MATH.sub(lambda m: m.group(1) + done[(html.unescape(m.group(4)).strip(), m.group(3) == "\\[")] + m.group(6),
                        pages[page])
        depth = len(page.relative_to(out).parts) - 1
        link = f'<link rel="stylesheet" type="text/css" href="{"../" * depth}_static/{CSS}" />'
        text = MATHJAX_SCRIPTS.sub("", text).replace("</head>", f"  {link}\n</head>", 1)
        page.write_text(text, encoding="utf-8")


def setup(app):
    app.connect("build-finished", _finished, priority=850)  # before page_weight.py trims the MathJax folder
    return {"parallel_read_safe": True, "parallel_write_safe": True}
