"""A first visit of every chapter page is light: at most 2 MB as served, 1 MB gzip-compressed (issue 44).

The weights are measured in headless Chromium on the published book by ``benchmarks/bench_page_weight.py``, which
writes ``benchmarks/results/page_weight.json`` (a fresh profile per page, every figure drawn and formula typeset);
this test holds its latest build to the limits.  After a change that adds to a page (a figure, a library on every
page), build the book (``bash scripts/book.sh``) and measure it again.  The smoke build's browser test holds what can
be checked on any build: the shared plotly.js bundle, icon scripts and MathJax typeset when the book is built
(``tests/test_book_build.py``).
"""
from __future__ import annotations

import json
from pathlib import Path

from book_text import chapter_pages
from cnet_lib.book.toc import toc_files

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "benchmarks" / "results" / "page_weight.json"
MAX_BYTES = 2_000_000
MAX_GZIP_BYTES = 1_000_000


def _latest() -> dict:
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    return record["builds"][record["latest"]]


def test_the_latest_build_measured_every_page():
    assert set(_latest()["pages"]) == set(toc_files(ROOT)), "measure the book again: its pages changed"


def test_a_first_visit_of_every_chapter_page_is_at_most_2_mb_and_1_mb_gzipped():
    pages = _latest()["pages"]
    heavy = {p: f"{pages[p]['bytes'] / 1e6:.2f} MB" for p in chapter_pages(ROOT) if pages[p]["bytes"] > MAX_BYTES}
    assert not heavy, f"chapter pages over {MAX_BYTES / 1e6:g} MB on a first visit: {heavy}"
    heavy = {p: f"{pages[p]['gzip_bytes'] / 1e6:.2f} MB" for p in chapter_pages(ROOT)
             if pages[p]["gzip_bytes"] > MAX_GZIP_BYTES}
    assert not heavy, f"chapter pages over {MAX_GZIP_BYTES / 1e6:g} MB gzipped on a first visit: {heavy}"


def test_no_page_loads_the_search_index_icon_fonts_or_mathjax():
    """What issue 44 found on every page: the search index (100 KB), Font Awesome's webfonts (274 KB) although the
    icons are inline SVG, and MathJax's scripts (680 KB where there was math)."""
    for page, r in _latest()["pages"].items():
        loaded = [path for path, _ in r["largest"]]
        assert not any(p.endswith("searchindex.js") or "/webfonts/" in p or p.endswith((".woff2",)) for p in loaded), page
        assert not any("/mathjax/" in p and p.endswith(".js") for p in loaded), page
