"""Rows of results as plain dicts: find them, and print them as text tables.

Every study returns its results as lists of dicts (one row per measurement), so that a reader can
filter them with a comprehension or hand them to pandas.  :func:`find_row` and :func:`select_rows`
are the one way the library queries such rows (floats match within rounding); :func:`format_table`
is the one way it prints them: a :class:`~cnet_lib.runtime.rich_text.Rich`, plain text when printed and
an HTML table that wraps to the page when displayed in a notebook or the book.  Over training seeds a cell shows
``mean [min, max]`` (:func:`spread_cell`) and a note says how many seeds stand behind it (:func:`seeds_phrase`).
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from .rich_text import Rich, rich_table

__all__ = ["matches", "select_rows", "find_row", "Column", "format_table", "uniform", "by_column_table", "spread_cell",
           "seeds_phrase", "times"]


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
