"""Reading a text table of :func:`cnet_lib.runtime.rich_text.format_table` back, for tests that check the
printed numbers against the rows they come from."""
from __future__ import annotations

import re


def parse_table(text: str) -> tuple[list[str], list[list[str]]]:
    """``(header, rows)`` of the first table in ``text`` (the lines around its ``---`` rule); columns are
    separated by two or more spaces."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if re.fullmatch(r"-+( +-+)*", line))
    split = lambda line: re.split(r"\s{2,}", line.strip())  # noqa: E731
    header = split(lines[rule - 1])
    rows = []
    for line in lines[rule + 1:]:
        if not line.strip():
            break
        rows.append(split(line))
        assert len(rows[-1]) == len(header), (line, header)
    return header, rows


def by_first_column(text: str) -> dict[str, dict[str, str]]:
    """``{first cell: {header: cell}}`` for every row of the table in ``text``."""
    header, rows = parse_table(text)
    return {r[0]: dict(zip(header, r)) for r in rows}


def printed_as(cell: str, value: float) -> bool:
    """Whether ``cell`` (like ``1.06e-01``, ``-0.00``, ``+1.1%``, ``1.2×``) is ``value`` rounded to its digits."""
    text = cell.strip().rstrip("%×")
    number = float(text)
    mantissa, _, exponent = text.lower().partition("e")
    digits = len(mantissa.split(".")[1]) if "." in mantissa else 0
    unit = 10.0 ** (int(exponent or 0) - digits)
    return abs(number - value) <= 0.5 * unit * (1 + 1e-9) + 1e-15


def assert_printed(cell: str, value: float) -> bool:
    """Assert :func:`printed_as`; True, so that checks chain with ``and``."""
    assert printed_as(cell, value), f"printed {cell!r} for {value!r}"
    return True
