"""Sphinx extension: measured numbers read from ``benchmarks/results/*.json`` when the book is built.

* ``{measured}`file.json:path|format``` in a page's prose quotes one value of a results file
  (:func:`cnet_lib.book.measured_tables.quoted`), e.g. ``{measured}`bench_book-cpu.json:build_seconds|duration```;
* a ``{measured-table}`` directive with a name of :data:`cnet_lib.book.measured_tables.TABLES` shows that table
  (the same HTML a chapter displays: it wraps to the page and stacks on a phone).

So no measured number is typed into a page: it changes when its benchmark writes its file again, and a
page that names a file or an entry that does not exist fails the build (with ``-W``) and
``tests/test_measurements.py``.
"""
from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective, SphinxRole

from cnet_lib.book.measured_tables import TABLES, quoted


def _root(env) -> Path:
    return Path(env.srcdir)


class MeasuredRole(SphinxRole):
    def run(self):
        try:
            text = quoted(self.text, _root(self.env))
        except (OSError, KeyError, ValueError) as err:
            msg = self.inliner.reporter.error(f"{{measured}}`{self.text}`: {err}", line=self.lineno)
            return [self.inliner.problematic(self.rawtext, self.rawtext, msg)], [msg]
        return [nodes.Text(text)], []


class MeasuredTable(SphinxDirective):
    required_arguments = 1

    def run(self):
        name = self.arguments[0]
        if name not in TABLES:
            raise self.error(f"no measured table {name!r}; the tables are {', '.join(TABLES)}")
        try:
            table = TABLES[name](_root(self.env))
        except (OSError, KeyError, ValueError) as err:
            raise self.error(f"measured table {name!r}: {err}") from None
        return [nodes.raw("", table.html, format="html")]


def setup(app):
    app.add_role("measured", MeasuredRole())
    app.add_directive("measured-table", MeasuredTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
