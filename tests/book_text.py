"""What the built book's chapters say, read as a student reads them once: a result is stated where it is
announced, and no word of the machinery that builds the book stands in the prose.

Used by ``tests/test_book_build.py`` on the built smoke book (the prose is the same in every preset), and runnable
on any built book to list what it finds (``python tests/book_text.py _build/gpu/_build/html``).

The text read is each page's article, less its code (the cells' input); the printed and displayed outputs are read
with the prose.  It is cut into blocks (paragraphs, list items, table cells, captions, outputs), and each block is
checked on its own:

* **deferrals** (:data:`DEFERRALS`): a phrase that sends the reader elsewhere for a result ("is answered above",
  "the sentence under the table compares it with the ideal", "the size table says what it saves") in a block with no
  number in it (:data:`NUMBER`): the number belongs in the same paragraph;
* **machinery** (:data:`MACHINERY`, by kind): environment variables, file paths, commit hashes, hashes as keys,
  the library's module paths and internal module names (:func:`module_names`), benchmark scripts, and how the
  machines were obtained.  Chapter pages (the introduction and the notebooks) carry none; the reference pages, which
  a reader follows a link to for exactly these, only carry no commit hash and no word of how the machines were obtained
  (:data:`REFERENCE_KINDS`).

The lists are plain regular expressions, one per phrase family: to catch a new phrase add a pattern to its list
(and a line to ``tests/test_book_text.py``, which shows each one catching its example); to allow a command line
the reader types, add it to :data:`ALLOWED`.
"""
from __future__ import annotations

import re
import sys
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_VERB = r"(?:says?|said|compares?|gives?|shows?|tells?|states?|lists?|answers?|reports?)"
_THING = r"(?:sentences?|lines?|tables?|figures?|plots?|verdicts?|outputs?|cells?|numbers?|words?|panels?|charts?)"
DEFERRALS: list[str] = [
    r"\bis answered (?:above|below|there|in the \w+)",
    rf"\bthe {_THING} (?:under|below|above|beside|after|next to) (?:it|them|the {_THING})\b[^.]{{0,40}}?\b{_VERB}\b",
    rf"\b(?:the|this|that) [\w-]+ {_THING} {_VERB} (?:what|which|whether|by how much|the same)\b",
    rf"\b{_THING} (?:below|above) {_VERB}\b",
    rf"\bsee the {_THING} (?:below|above)\b",
    r"\bas (?:shown|said|measured|computed|reported|stated) (?:above|below)\b",
    r"\b(?:shown|given|stated|reported|printed|quoted) (?:above|below)\b",
    r"\bsays? what it saves\b",
]
"""Phrases that defer a result to something else on the page; one pattern per family, lowercase text."""

NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])|\d+(?:\.\d+)?\s?(?:%|×)")
"""A number a reader can read as a result: digits standing alone (``1.45``, ``82.3``, ``2,501``), or followed by
``%`` or ``×``; not digits inside a name (``RK4``, ``H100``, ``rk4_38``)."""

_HEX = r"(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)"  # hex digits with a letter and a digit: a hash, not a number
_EXT = r"(?:py|json|ipynb|md|sh|yml|yaml|pt|txt|csv|log)"
MACHINERY: dict[str, list[str]] = {
    "environment variable": [r"\bCNET_[A-Z][A-Z_]+\b", r"\b(?:CUDA_VISIBLE_DEVICES|OMP_NUM_THREADS|PYTHONPATH)\b"],
    "file path": [r"(?<![\w/])~/[\w.\-/]*\w", rf"(?<![\w/.])(?:[\w.-]+/)+[\w.-]+\.{_EXT}\b",
                  r"(?<![\w/.])\.\./[\w.\-/]*\w", r"(?<![\w~*./])/[A-Za-z_][\w.-]*(?:/[\w.-]+)+"],
    "commit hash": [rf"(?<![.\d])\b{_HEX}[0-9a-f]{{7,40}}\b(?![-+])"],
    "hash": [r"\bkeyed by (?:a|its|the) hash\b", r"\ba hash of\b", r"\bsha-?256\b"],
    "module name": [r"\bcnet_lib(?:\.\w+)+", r"(?<![\w.])(?:MODULE)\.\w+", r"(?<![\w.])(?:MODULE)\b"],
    "benchmark script": [r"\bbench_\w+(?:\.py)?\b", r"\bbenchmarks/", r"\bscripts/\w+"],
    "how the machines were obtained": [r"\blent to (?:this|the) project\b", r"\bfirecracker\b",
                                       r"\bthe project's (?:own )?(?:\d-core |GPU |CPU )?machines?\b",
                                       r"\bmachines? (?:we|it) (?:were|was) (?:lent|given|handed)\b"],
}
"""The machinery a chapter's prose has no use for, by kind; ``MODULE`` stands for the library's internal module names
(:func:`module_names`).  Matched case-insensitively, except the environment variables."""

REFERENCE_KINDS = ("commit hash", "how the machines were obtained")
"""What the reference pages (the pages a chapter links to for the machinery) may not carry either."""

ALLOWED: list[str] = [r"%env CNET_PRESET=\w+"]
"""Commands the reader types, which a page may show although they name machinery: the preset switch."""

BLOCKS = "p, li, dt, dd, th, td, figcaption, caption, .cell_output .output, .admonition-title"


@lru_cache(maxsize=None)
def module_names() -> tuple[str, ...]:
    """The library's module names that a reader never calls: every ``cnet_lib`` module whose name has an underscore
    (``run_loading``, ``theta_record``), less the functions and classes of that name the packages export
    (a chapter calls ``images.trained_runs``, which is no module)."""
    import importlib
    import inspect

    pkg = ROOT / "cnet_lib"
    stems = {p.stem for p in pkg.rglob("*.py") if "_" in p.stem.strip("_")}
    exported = set()
    for init in pkg.rglob("__init__.py"):
        package = importlib.import_module(".".join(init.relative_to(ROOT).parent.parts))
        exported |= {n for n in getattr(package, "__all__", ()) if not inspect.ismodule(getattr(package, n, None))}
    return tuple(sorted(stems - exported))


@lru_cache(maxsize=None)
def _compiled():
    mods = "|".join(map(re.escape, module_names())) or "(?!)"
    machinery = {kind: [re.compile(p.replace("MODULE", mods), 0 if kind == "environment variable" else re.I)
                        for p in pats] for kind, pats in MACHINERY.items()}
    return [re.compile(p, re.I) for p in DEFERRALS], machinery, [re.compile(p) for p in ALLOWED]


def blocks(html: str) -> list[str]:
    """The text of a built page's article, block by block (the code cells' input left out), whitespace collapsed."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    article = soup.select_one("article") or soup
    for drop in article.select(".cell_input, script, style, .headerlink, .toggle-hidden, div.highlight"):
        if not drop.find_parent(class_="cell_output"):
            drop.decompose()
    out = []
    for el in article.select(BLOCKS):
        if el.find_parent(["p", "li", "td", "th", "dd"]) is not None and el.name not in ("td", "th"):
            continue  # a block inside another is read with it
        text = " ".join(el.get_text(" ").split())
        if text:
            out.append(text)
    return out


def deferrals(block: str) -> list[str]:
    """The deferral phrases of ``block`` when it states no number; else nothing."""
    if NUMBER.search(block):
        return []
    pats = _compiled()[0]
    return [m.group(0) for p in pats for m in p.finditer(block)]


def machinery(block: str, kinds=None) -> list[tuple[str, str]]:
    """``[(kind, words)]``: the machinery named in ``block`` (of ``kinds``, default all), the commands of
    :data:`ALLOWED` left out."""
    _, pats, allowed = _compiled()
    for a in allowed:
        block = a.sub(" ", block)
    found = []
    for kind, kind_pats in pats.items():
        if kinds is not None and kind not in kinds:
            continue
        for p in kind_pats:
            found += [(kind, m.group(0)) for m in p.finditer(block)]
    return found


def page_problems(html: str, chapter: bool) -> list[str]:
    """What a reader should not meet on a built page: deferrals and machinery on a chapter page (``chapter``),
    hashes and how the machines were obtained on a reference page."""
    problems = []
    for block in blocks(html):
        where = block if len(block) <= 160 else block[:157] + "..."
        if chapter:
            problems += [f"a deferral with no number: {d!r} in {where!r}" for d in deferrals(block)]
        for kind, words in machinery(block, None if chapter else REFERENCE_KINDS):
            problems.append(f"{kind}: {words!r} in {where!r}")
    return problems


def chapter_pages(root: Path = ROOT) -> list[str]:
    """The pages a student reads as chapters: the introduction and every notebook of ``_toc.yml``."""
    from cnet_lib.book.project import toc_notebooks

    return ["book/intro"] + [f"book/{nb.stem}" for nb in toc_notebooks(root)]


def main(argv=None) -> int:
    """``python tests/book_text.py HTML_DIR``: every problem of every page of a built book; exit 1 on one."""
    sys.path.insert(0, str(ROOT))
    from cnet_lib.book.project import toc_files

    html = Path((argv or sys.argv[1:])[0])
    chapters = set(chapter_pages())
    bad = 0
    for page in toc_files(ROOT):
        found = page_problems((html / f"{page}.html").read_text(encoding="utf-8"), page in chapters)
        bad += bool(found)
        print(f"{page}: {'ok' if not found else ''}" + "".join(f"\n  - {p}" for p in found))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
