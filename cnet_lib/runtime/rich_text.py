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

Also here (sections below): rows of results as plain dicts, found, selected and printed as tables (:func:`find_row`,
:func:`format_table`); the book's words and colours for schemes, runs and bases (:data:`SCHEME_LABELS`,
:func:`run_label`); numbers in prose with a real minus sign (:func:`minus_sign`).
"""
from __future__ import annotations

import html
import math
import re
import textwrap
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

__all__ = ["Rich", "STACK_CHARS", "NARROW_PX", "STYLE", "numeric_columns", "rich_table", "paragraphs", "heading",
           "join_rich", "as_rich", "gathered_facts", "matches", "select_rows", "find_row", "Column", "format_table",
           "uniform", "by_column_table", "spread_cell", "seeds_phrase", "times", "minus_sign", "sci", "p_value", "SCHEME_LABELS", "SCHEME_COLORS",
           "RUN_LABELS", "RUN_COLORS", "BASIS_LABELS", "SERIES_COLORS", "scheme_label", "scheme_color", "run_label",
           "run_color", "run_dash", "run_pattern", "basis_label"]


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
    :func:`cnet_lib.runtime.rich_text.format_table`) and whose HTML face is a ``<table>`` of ``header`` and
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


# Rows of results as plain dicts: find them, and print them as text tables.
#
# Every study returns its results as lists of dicts (one row per measurement), so that a reader can
# filter them with a comprehension or hand them to pandas.  :func:`find_row` and :func:`select_rows`
# are the one way the library queries such rows (floats match within rounding); :func:`format_table`
# is the one way it prints them: a :class:`~cnet_lib.runtime.rich_text.Rich`, plain text when printed and
# an HTML table that wraps to the page when displayed in a notebook or the book.  Over training seeds a cell shows
# ``mean [min, max]`` (:func:`spread_cell`) and a note says how many seeds stand behind it (:func:`seeds_phrase`).

def matches(row: Mapping, **match) -> bool:
    """Whether ``row[key] == value`` for every ``key=value`` (floats within 1e-9 relative)."""
    for key, value in match.items():
        got = row.get(key)
        if isinstance(value, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
            if not math.isclose(got, value, rel_tol=1e-9, abs_tol=1e-12):
                return False
        elif got != value:
            return False
    return True


def select_rows(rows: Iterable[Mapping], **match) -> list:
    """Every row that :func:`matches` ``match``, in order."""
    return [r for r in rows if matches(r, **match)]


def find_row(rows: Iterable[Mapping], default: Any = KeyError, **match):
    """The first row that :func:`matches` ``match``; without one, ``default`` if given, else a
    KeyError naming what was looked for."""
    for r in rows:
        if matches(r, **match):
            return r
    if default is KeyError:
        raise KeyError(f"no row with {match}")
    return default


Column = tuple  # (header, key or function of the row, format spec like "{:.4f}")


def format_table(rows: Sequence[Mapping], columns: Sequence[Column], *, left: int = 1,
                 note: Optional[str] = None, caption: Optional[str] = None, key: Sequence[str] = (),
                 cards: bool = False) -> Rich:
    """A table: one row per row, one column per ``(header, key, format)``, where ``key`` is a dict key
    or a function of the row; a missing value is ``-``.  As text (``print``, ``str``): the first ``left``
    columns left-aligned, the others right-aligned, ``note`` on a last line, ``caption`` on a first one.
    As HTML (a notebook's display, :class:`~cnet_lib.runtime.rich_text.Rich`): the same cells in a
    ``<table>`` whose right-aligned columns never break, ``note`` under it; ``key`` (headers) and ``cards`` as
    :func:`~cnet_lib.runtime.rich_text.rich_table` takes them (the columns a phone must show without a swipe;
    a block per row on a phone)."""
    def cell(row, key: Union[str, Callable], fmt: str) -> str:
        value = key(row) if callable(key) else row.get(key)
        if value is None:
            return "-"
        try:
            return fmt.format(value)
        except (ValueError, TypeError):
            return str(value)

    cells = [[h for h, _, _ in columns]] + [[cell(r, k, f) for _, k, f in columns] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = ["  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths)))
             for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if note:
        lines.append(note)
    if caption:
        lines.insert(0, caption)
    return rich_table(cells[0], cells[1:], "\n".join(lines), note=note, caption=caption, key=key, cards=cards)


def uniform(values: Iterable) -> Any:
    """One value when all are equal (one per block, say), else the list."""
    values = list(values)
    return values[0] if values and all(v == values[0] for v in values) else values


def by_column_table(fields: Mapping[str, Mapping[str, Any]]) -> Rich:
    """A table with one column per item (a trained run, say): ``fields[label][what]`` becomes the cell of row
    ``what`` under column ``label``; the rows in the order they first appear."""
    labels = list(fields)
    whats = list(dict.fromkeys(w for f in fields.values() for w in f))
    rows = [{"what": w, **{lab: fields[lab].get(w) for lab in labels}} for w in whats]
    columns = [("", "what", "{}")] + [(lab, (lambda r, lab=lab: r[lab]), "{}") for lab in labels]
    return format_table(rows, columns, left=len(columns))


def minus_sign(text: str) -> str:
    """Numbers as prose prints them: ``text`` with a real minus sign (U+2212) before each digit a hyphen stood before
    (a hyphen inside a word, as in "8-16-32" or "held-out", stays)."""
    return re.sub(r"(?<![\w-])-(?=\d)", "\u2212", text)


_SUPERSCRIPTS = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def sci(value: float, digits: Optional[int] = 1) -> str:
    """A number as prose prints one far from 1: ``3.4 × 10⁻⁵`` for 3.4e-05 (``digits`` after the point; ``None``: as
    few as give ``value`` back, for a setting such as a tolerance), the mantissa alone when the power is 10⁰, the power
    alone when the mantissa is 1 (``10⁻⁵``), ``0`` for zero; a negative number with a real minus sign.  Tables keep
    ``3.4e-05``."""
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return str(value)
    if digits is None:
        digits = next((d for d in range(16) if float(f"{value:.{d}e}") == value), 16)
    mantissa, power = f"{value:.{digits}e}".split("e")
    power = int(power)
    if power == 0:
        return minus_sign(mantissa)
    ten = "10" + str(power).translate(_SUPERSCRIPTS)
    return ten if mantissa == "1" else f"{minus_sign(mantissa)}\u00a0×\u00a0{ten}"  # no line break inside


def p_value(p: float, name: Optional[str] = "p") -> str:
    """A p-value as prose states it: ``p = 0.032`` (two significant digits), ``p < 0.001`` below 0.001 (never a
    computer's ``6.4e-05``); ``name`` names the test, e.g. ``"Holm p"``; ``None``: a table's cell, ``0.032`` or
    ``< 0.001``."""
    if p < 0.001:
        return "< 0.001" if name is None else f"{name} < 0.001"
    return f"{p:.2g}" if name is None else f"{name} = {p:.2g}"


def _number(fmt: str, v: float) -> str:
    """``fmt.format(v)``, without the minus sign of a value that rounds to zero (``-0.0``)."""
    text = fmt.format(v)
    return text[1:] if re.fullmatch(r"-0(\.0*)?", text) else text


def spread_cell(s: Mapping, fmt: str = "{:.1f}") -> Optional[str]:
    """A cell of a value over training seeds (``s``: ``{"n", "mean", "min", "max"}``,
    :func:`cnet_lib.studies.stats.spread`): ``mean [min, max]``; the value alone for one seed; ``None``
    (a dash) for none."""
    if not s or not s["n"]:
        return None
    if s["n"] == 1:
        return _number(fmt, s["mean"])
    return f"{_number(fmt, s['mean'])} [{_number(fmt, s['min'])}, {_number(fmt, s['max'])}]"


def seeds_phrase(seeds: Sequence[int]) -> str:
    """How many training seeds stand behind a table: ``3 training seeds per method (seeds 0, 1, 2)``."""
    k = len(seeds)
    return f"{k} training seed{'s' if k != 1 else ''} per method (seed{'s' if k != 1 else ''} " \
           f"{', '.join(map(str, seeds))})"


def times(x: float) -> str:
    """A ratio as a sentence says it: two decimals below 10 (``0.81``), one below 100 (``20.3``), three significant
    digits with thousands separators above (``1,540``, ``80,500``): no false precision, no ``80466``."""
    if not math.isfinite(x):
        return "infinitely many"
    if abs(x) < 10:
        return f"{x:.2f}"
    if abs(x) < 100:
        return f"{x:.1f}"
    digits = int(math.floor(math.log10(abs(x)))) - 2
    return f"{round(x, -digits):,.0f}"


# The book's words and colours for schemes, runs and bases: one place, used by every chapter.
#
# Every figure and every sentence that names a scheme, a trained run or a basis takes its label
# from here, and every figure draws a scheme in its one colour (:data:`SCHEME_COLORS`), so Euler
# is the same blue on the pendulum pages and on the image pages.

SCHEME_LABELS = {
    "euler": "Euler",
    "midpoint": "Midpoint",
    "heun": "Heun",
    "ralston": "Ralston",
    "rk3": "RK3",
    "rk4_classic": "RK4 (classic)",
    "rk4_38": "RK4 (3/8 rule)",
}
SCHEME_COLORS = {
    "euler": "#1f77b4",  # blue
    "midpoint": "#2ca02c",  # green
    "heun": "#8c564b",
    "ralston": "#e377c2",
    "rk3": "#bcbd22",
    "rk4_classic": "#d62728",  # red
    "rk4_38": "#9467bd",  # purple
    "exact": "#222222",  # the exact solution
}
RUN_LABELS = {"rk4_refined": "RK4-trained (refined)", "euler_fixed": "Euler-trained (fixed depth)",
              "rk4_fixed": "RK4-trained (fixed depth)", "euler_refined": "Euler-trained (refined)"}
RUN_COLORS = {"rk4_refined": SCHEME_COLORS["rk4_classic"], "euler_fixed": SCHEME_COLORS["euler"],
              "rk4_fixed": "#ff9896", "euler_refined": "#aec7e8"}  # the control runs: their scheme's colour, lighter
BASIS_LABELS = {"piecewise_constant": "piecewise constant", "piecewise_linear": "piecewise linear (hats)",
                "legendre": "Legendre polynomials"}
SERIES_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
"""Colours for series that are not schemes (the entries of θ, several weights)."""


def scheme_label(scheme: str) -> str:
    """``"rk4_classic"`` -> ``"RK4 (classic)"`` (unknown names as they are)."""
    return SCHEME_LABELS.get(scheme, scheme)


def scheme_color(scheme: str) -> str:
    return SCHEME_COLORS.get(scheme, "#7f7f7f")


def run_label(run: str) -> str:
    """``"rk4_refined"`` -> ``"RK4-trained (refined)"``; ``"euler_fixed on rk4_classic"`` -> the run's label,
    run with that scheme."""
    if " on " in run:
        name, scheme = run.split(" on ", 1)
        return f"{run_label(name)}, run with {scheme_label(scheme)}"
    return RUN_LABELS.get(run, run)


def run_color(run: str) -> str:
    """A run's colour; ``"<run> on <scheme>"`` (the run's model on another graph) keeps its run's
    colour and is told apart by :func:`run_dash` (a scheme's colour would say it is another model)."""
    return RUN_COLORS.get(run.split(" on ", 1)[0], "#7f7f7f")


def run_dash(run: str) -> Optional[str]:
    """``"dash"`` for a run's model on another graph (``"<run> on <scheme>"``), else None (solid)."""
    return "dash" if " on " in run else None


def run_pattern(run: str) -> str:
    """The bar pattern that goes with :func:`run_dash`: hatched for another graph, else none."""
    return "/" if " on " in run else ""


def basis_label(basis: str) -> str:
    return BASIS_LABELS.get(basis, basis)
