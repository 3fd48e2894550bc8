"""Text with two faces: plain text for command lines and ``print``, HTML for notebooks and the book.

A table or a verdict printed as fixed-width text runs off a narrow page: a phone, or the book's text
column, shows it only by scrolling sideways inside a code box.  So every table and every worded result
of the library is a :class:`Rich`: a ``str`` (its plain-text face, unchanged for the command lines, for
``print`` and for tests that read text) that also carries an HTML face, which Jupyter, Colab and the
built book show when the object is *displayed* (``display(table)`` or a cell's last value; IPython calls
:meth:`Rich._repr_html_`).  In the HTML face

* a table is an HTML ``<table>`` whose cells wrap at spaces only (no word ever breaks in the middle; numbers
  never wrap); a table too wide for a phone (:data:`STACK_CHARS`) scrolls sideways in its own box below
  :data:`NARROW_PX` of screen width, its first column pinned and its text cells wrapping at spaces (CSS only: no
  script); the columns a table exists for (``key``, marked ``cnet-key``) come right after the first, so that a phone
  shows them without a swipe; a table of sentences (``cards``) becomes a block per row there instead, each cell
  under its column's name;
* sentences are paragraphs (``<p>``), which wrap to the page.

No display library is imported here: IPython finds ``_repr_html_`` by itself.
"""
from __future__ import annotations

import html
import re
import textwrap
from typing import Callable, Iterable, Mapping, Optional, Sequence, Union

__all__ = ["Rich", "STACK_CHARS", "NARROW_PX", "STYLE", "numeric_columns", "rich_table", "paragraphs", "heading", "join_rich",
           "as_rich", "gathered_facts"]

STACK_CHARS = 44
"""A table whose widest row (cells plus two characters between columns) is longer than this many
characters is *wide*: on a narrow screen it scrolls sideways in its own box, its first column pinned."""

NARROW_PX = 640
"""Below this width of the screen (CSS pixels), wide tables scroll in their own box."""

STYLE = (
    "<style>"
    ".cnet-rich table.cnet-table{border-collapse:collapse;margin:.3em 0 .6em 0;font-size:.88em;max-width:100%}"
    ".cnet-rich table.cnet-table caption{caption-side:top;text-align:left;font-weight:600;padding:.2em 0}"
    # a word never breaks in the middle ("sche|me", "rk4_c|lassic"): cells wrap at spaces only
    ".cnet-rich table.cnet-table th,.cnet-rich table.cnet-table td{padding:.15em .45em;"
    "border-bottom:1px solid rgba(128,128,128,.35);vertical-align:top;text-align:left;overflow-wrap:normal;"
    "word-break:normal;hyphens:manual}"
    ".cnet-rich table.cnet-table th{font-weight:600}"
    ".cnet-rich table.cnet-table .cnet-num{text-align:right;font-variant-numeric:tabular-nums}"
    ".cnet-rich table.cnet-table td.cnet-num{white-space:nowrap}"
    ".cnet-rich p{margin:.25em 0 .5em 0;max-width:100%;overflow-wrap:break-word}"
    ".cnet-rich p.cnet-note{font-size:.9em;opacity:.85}"
    ".cnet-rich p.cnet-conclusion{padding:.3em .6em;border-left:3px solid #4a7ab5}"
    ".cnet-rich .cnet-scroll{max-width:100%}"
    f"@media (max-width:{NARROW_PX}px){{"
    ".cnet-rich .cnet-scroll{overflow-x:auto}"
    ".cnet-rich table.cnet-wide{font-size:.8em;max-width:none}"
    # a text cell wraps at spaces (a sentence on one line made a column 2,000 px wide), no narrower than 6em
    ".cnet-rich table.cnet-wide th{white-space:normal}"
    ".cnet-rich table.cnet-wide td:not(.cnet-num){white-space:normal;min-width:6em}"
    ".cnet-rich table.cnet-wide tr>:first-child{position:sticky;left:0;background:var(--pst-color-background,#fff);"
    "white-space:normal;min-width:7em;max-width:11em}"
    ".cnet-rich table.cnet-cards,.cnet-rich table.cnet-cards tbody,.cnet-rich table.cnet-cards tr,"
    ".cnet-rich table.cnet-cards td{display:block;width:auto;max-width:none;white-space:normal;text-align:left}"
    ".cnet-rich table.cnet-cards thead{display:none}"
    ".cnet-rich table.cnet-cards tr{padding:.35em 0;border-bottom:1px solid rgba(128,128,128,.35)}"
    ".cnet-rich table.cnet-cards tr>td,.cnet-rich table.cnet-cards tr>:first-child{border:0;padding:.05em 0;"
    "position:static;min-width:0;max-width:none}"
    ".cnet-rich table.cnet-cards td:first-child{font-weight:600}"
    ".cnet-rich table.cnet-cards td[data-label]:not(:first-child)::before{content:attr(data-label) \": \";"
    "font-weight:600}"
    "}</style>"
)
"""The CSS of the HTML face, carried by every :class:`Rich` so that Jupyter and Colab need nothing else."""


class Rich(str):
    """A ``str`` (the plain-text face) with an HTML face: ``print(r)`` prints the text, ``display(r)`` (or a
    cell ending with ``r``) shows :attr:`html` in Jupyter, Colab and the built book.

    Operations of ``str`` (``+``, ``join``, slicing) give plain ``str``: combine faces with
    :func:`join_rich`."""

    def __new__(cls, text: str, html_body: str):
        obj = super().__new__(cls, text)
        obj.html_body = html_body
        return obj

    def __reduce__(self):
        return (Rich, (str(self), self.html_body))

    @property
    def text(self) -> str:
        """The plain-text face, as a plain ``str``."""
        return str.__str__(self)

    @property
    def html(self) -> str:
        """The HTML face, self-contained (its CSS included): what notebooks show."""
        return f'{STYLE}<div class="cnet-rich">{self.html_body}</div>'

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:  # IPython's text/plain view and the REPL show the text, not a quoted string
        return self.text

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.text)


def _esc(text: str) -> str:
    return html.escape(str(text), quote=True)


def as_rich(part: Union[str, "Rich"]) -> Rich:
    """``part`` itself when it is a :class:`Rich`; a plain string becomes paragraphs, one per line."""
    if isinstance(part, Rich):
        return part
    lines = [ln for ln in str(part).split("\n")]
    body = "".join(f"<p>{_esc(ln)}</p>" for ln in lines if ln.strip())
    return Rich(str(part), body)


_NUMBER = re.compile(r"^[\[(]?[+\-−]?[\d.,]+(e[+\-]?\d+)?(%|×|x| s)?(, [+\-−]?[\d.,]+(e[+\-]?\d+)?)?[\])]?$")
_EMPTY = ("", "-", "—")


def numeric_columns(rows: Sequence[Sequence[str]]) -> list[bool]:
    """For each column, whether every cell of it is a number (``0.725``, ``+1.4``, ``3.46x``, ``53%``,
    ``1.3e-05``, ``[-0.43, +1.43]``, ``469,904``) or empty (``-``, ``—``), and at least one is a number."""
    n = max((len(r) for r in rows), default=0)
    out = []
    for i in range(n):
        cells = [str(r[i]).strip() for r in rows if i < len(r)]
        full = [c for c in cells if c not in _EMPTY]
        out.append(bool(full) and all(_NUMBER.match(c) for c in full))
    return out


def rich_table(header: Sequence[str], rows: Sequence[Sequence[str]], text: str, *,
               numeric: Optional[Sequence[bool]] = None, note: Optional[str] = None,
               caption: Optional[str] = None, key: Sequence[str] = (), cards: bool = False) -> Rich:
    """A table whose plain-text face is ``text`` (already laid out, see
    :func:`cnet_lib.runtime.rows.format_table`) and whose HTML face is a ``<table>`` of ``header`` and
    ``rows`` (cells as strings): numeric columns (``numeric``, by default :func:`numeric_columns`)
    right-aligned and never broken, text columns left-aligned and wrapping at spaces, ``note`` a small paragraph
    under it, ``caption`` a caption above it.  A table whose widest row is longer than
    :data:`STACK_CHARS` characters scrolls in its own box on a narrow screen; ``key`` names the columns the table
    exists for (their cells are marked ``cnet-key``; the caller puts them first, a phone shows them without a swipe);
    ``cards``: on a narrow screen each row is a block, each cell on a line of its own under its column's name (for
    tables of sentences)."""
    numeric = list(numeric_columns(rows) if numeric is None else numeric)
    numeric += [False] * (len(header) - len(numeric))
    unknown = set(key) - set(header)
    if unknown:
        raise ValueError(f"key names columns {sorted(unknown)} that the table does not have ({list(header)})")
    width = max([sum(len(c) + 2 for c in row) for row in [list(header), *map(list, rows)]] or [0])
    cls = "cnet-table cnet-wide" if width > STACK_CHARS else "cnet-table"
    if cards:
        cls += " cnet-cards"

    def cell(tag: str, value: str, i: int) -> str:
        classes = " ".join(c for c, on in (("cnet-num", numeric[i]), ("cnet-key", header[i] in key)) if on)
        attr = f' class="{classes}"' if classes else ""
        label = f' data-label="{_esc(header[i])}"' if tag == "td" and header[i].strip() else ""
        return f"<{tag}{attr}{label}>{_esc(value)}</{tag}>"

    head = "<thead><tr>" + "".join(cell("th", h, i) for i, h in enumerate(header)) + "</tr></thead>"
    body = "<tbody>" + "".join("<tr>" + "".join(cell("td", v, i) for i, v in enumerate(row)) + "</tr>"
                               for row in rows) + "</tbody>"
    cap = f"<caption>{_esc(caption)}</caption>" if caption else ""
    foot = f'<p class="cnet-note">{_esc(note)}</p>' if note else ""
    return Rich(text, f'<div class="cnet-scroll"><table class="{cls}">{cap}{head}{body}</table></div>{foot}')


def paragraphs(sentences: Iterable[str], width: Optional[int] = None, conclusion_prefix: str = "VERDICT") -> Rich:
    """Sentences as paragraphs: the text face one sentence per line (wrapped to ``width`` characters, the
    continuation lines indented by two spaces, when ``width`` is given), the HTML face one ``<p>`` per
    sentence; a sentence starting with ``conclusion_prefix`` is set apart as the conclusion."""
    sentences = [s for s in sentences if s]
    if width:
        text = "\n".join(textwrap.fill(s, width, subsequent_indent="  ") for s in sentences)
    else:
        text = "\n".join(sentences)
    body = []
    for s in sentences:
        if conclusion_prefix and s.startswith(conclusion_prefix):
            head, _, rest = s.partition(":")
            body.append(f'<p class="cnet-conclusion"><strong>{_esc(head)}:</strong>{_esc(rest)}</p>')
        else:
            body.append(f"<p>{_esc(s)}</p>")
    return Rich(text, "".join(body))


def heading(text: str) -> Rich:
    """A short line above a table (a model's name, say): bold in HTML."""
    return Rich(text, f"<p><strong>{_esc(text)}</strong></p>")


def join_rich(parts: Iterable[Union[str, Rich]], sep: str = "\n") -> Rich:
    """Parts one after the other: texts joined with ``sep``, HTML faces concatenated (a plain string
    becomes paragraphs, :func:`as_rich`); empty parts are left out."""
    parts = [as_rich(p) for p in parts if p]
    return Rich(sep.join(p.text for p in parts), "".join(p.html_body for p in parts))


def gathered_facts(groups: Sequence[tuple[tuple[str, ...], Callable[..., dict]]], results: Mapping) -> dict:
    """The numbers a chapter's prose quotes, ``{name: text}``, from the ``results`` its cells computed (by keyword):
    ``groups`` pairs the keywords each group of numbers needs with the function that writes them; a group runs when
    its keywords are given, all of them together.  An unknown keyword, or a group given in part, raises TypeError
    saying which (a study's ``facts(**results)`` is this over its own groups)."""
    known = {k for keys, _ in groups for k in keys}
    unknown = sorted(set(results) - known)
    if unknown:
        raise TypeError(f"facts() got {unknown}: it knows {sorted(known)}")
    out: dict = {}
    for keys, make in groups:
        given = [k for k in keys if k in results]
        if given and len(given) < len(keys):
            raise TypeError(f"facts() needs {' and '.join(keys)} together, got only {', '.join(given)}")
        if given:
            out.update(make(*(results[k] for k in keys)))
    return out
