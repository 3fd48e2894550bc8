"""Sphinx extension: author–year labels in the bibliography, matching the author–year citations.

With ``bibtex_reference_style: author_year`` a citation reads "Goyal et al., 2017", but pybtex's
default label style (alpha) labels the entry itself from the raw BibTeX names, which mangles accents
and braces: ``[GDollarG+17]`` for Goyal, Dollár, ..., ``[HNorsettW93]`` for Hairer, Nørsett and
Wanner.  This extension registers the pybtex formatting style ``author_year`` (pybtex's ``unsrt``
sorted by author and year) whose labels are the citations' text: the first author's last name
(accents rendered), "and" the second's for two authors, "et al." for more, and the year as given
(``2016a``).  ``_config.yml`` selects it with ``bibtex_default_style: author_year``.
"""
from __future__ import annotations

from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle

NAME = "author_year"


def _last_name(person) -> str:
    """The person's last name(s) as plain text, LaTeX accents and braces rendered (Doll{\\'a}r -> Dollár)."""
    return " ".join(Text.from_latex(part).render_as("text") for part in person.prelast_names + person.last_names)


def author_year_label(entry) -> str:
    """``Name, 2016``, ``Name and Other, 2017`` or ``Name et al., 2020`` for a pybtex entry."""
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    if not people:
        names = Text.from_latex(entry.fields.get("title", entry.key)).render_as("text")
    elif len(people) == 1:
        names = _last_name(people[0])
    elif len(people) == 2:
        names = f"{_last_name(people[0])} and {_last_name(people[1])}"
    else:
        names = f"{_last_name(people[0])} et al."
    return f"{names}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabels(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            yield author_year_label(entry)


class AuthorYearStyle(UnsrtStyle):
    default_label_style = NAME
    default_sorting_style = "author_year_title"


def setup(app):
    register_plugin("pybtex.style.labels", NAME, AuthorYearLabels)
    register_plugin("pybtex.style.formatting", NAME, AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
