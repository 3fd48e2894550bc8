"""The rules of a stylesheet that can match nothing on a built site, found and dropped (for ``page_weight.py``).

The theme's stylesheets carried all of Bootstrap and every component of sphinx-design and myst-nb: 395 KB of
pydata-sphinx-theme.css on every page, three quarters of it for classes no page of the book uses.  A rule is kept when
one of its selectors could match: every class it names appears somewhere in the site's HTML or scripts (a script may
add a class later: its name is then a word of the script).  Classes inside ``:not(...)`` need not appear.  At-rules
that hold rules (``@media``, ``@supports``, ``@layer``, ``@container``) are filtered inside and dropped when emptied;
every other at-rule (``@font-face``, ``@keyframes``, ``@import``) and every rule without a class is kept as it is.
"""
from __future__ import annotations

import re
from pathlib import Path

NESTING = re.compile(r"@(media|supports|layer|container|document)\b")
CLASS = re.compile(r"\.(-?[_a-zA-Z][\w-]*)")
NOT = re.compile(r":not\([^()]*\)")
WORD = re.compile(r"[A-Za-z0-9_-]+")


def _skip_string(css: str, k: int) -> int:
    quote, k = css[k], k + 1
    while k < len(css) and css[k] != quote:
        k += 2 if css[k] == "\\" else 1
    return k + 1


def _block_end(css: str, k: int) -> int:
    """The index just past the ``}`` that closes the block whose ``{`` is at ``k``."""
    depth, k = 1, k + 1
    while k < len(css) and depth:
        c = css[k]
        if c in "\"'":
            k = _skip_string(css, k)
            continue
        depth += (c == "{") - (c == "}")
        k += 1
    return k


def parse(css: str, i: int = 0) -> tuple[list, int]:
    """``([(prelude, body)], end)``: the statements of ``css`` from ``i`` to the ``}`` that closes their block (or the
    end); ``body`` is ``None`` for ``@import ...;``, a list for a nesting at-rule, else the declarations' text."""
    out, n = [], len(css)
    while i < n:
        while i < n and css[i].isspace():
            i += 1
        if i >= n:
            break
        if css[i] == "}":
            return out, i + 1
        j, depth = i, 0
        while j < n:
            c = css[j]
            if c in "\"'":
                j = _skip_string(css, j)
                continue
            depth += (c == "(") - (c == ")")
            if depth == 0 and c == ";":
                out.append((css[i:j].strip(), None))
                j += 1
                break
            if depth == 0 and c == "{":
                prelude = css[i:j].strip()
                if NESTING.match(prelude):
                    inner, j = parse(css, j + 1)
                    out.append((prelude, inner))
                else:
                    end = _block_end(css, j)
                    out.append((prelude, css[j + 1:end - 1]))
                    j = end
                break
            j += 1
        else:
            out.append((css[i:].strip(), None))
        i = j
    return out, i


def selectors(prelude: str) -> list[str]:
    """A rule's selector list, split at its top-level commas."""
    parts, depth, cur = [], 0, []
    for c in prelude:
        depth += (c == "(") - (c == ")")
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def could_match(selector: str, words: set) -> bool:
    """Whether every class ``selector`` names (outside ``:not(...)``) is one of ``words``."""
    return all(c in words for c in CLASS.findall(NOT.sub("", selector)))


def _render(items: list, words: set) -> str:
    out = []
    for prelude, body in items:
        if isinstance(body, list):
            inner = _render(body, words)
            if inner:
                out.append(f"{prelude}{{{inner}}}")
        elif body is None:
            out.append(f"{prelude};")
        elif prelude.startswith("@"):
            out.append(f"{prelude}{{{body}}}")
        else:
            kept = [s for s in selectors(prelude) if could_match(s, words)]
            if kept:
                out.append(f"{','.join(kept)}{{{body}}}")
    return "".join(out)


def used_only(css: str, words: set) -> str:
    """``css`` less its comments and the rules no element can match (see the module doc)."""
    return _render(parse(re.sub(r"/\*.*?\*/", "", css, flags=re.S))[0], words)


def site_words(html_dir: Path) -> set:
    """Every word of the site's pages and scripts: the classes they use or may add."""
    words = set()
    for f in list(html_dir.rglob("*.html")) + list(html_dir.rglob("*.js")):
        words |= set(WORD.findall(f.read_text(encoding="utf-8", errors="ignore")))
    return words
