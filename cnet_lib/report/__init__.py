"""Reporting, the layer between the studies and the drawing: the studies' numbers as tables and sentences.

One naming rule: a ``*_table`` function returns a table, a ``word_*`` function returns sentences, both as a
:class:`~cnet_lib.runtime.rich_text.Rich` (the few helpers they share, a phrase or a column, are named for what
they are) (plain text when printed, a table or paragraphs that wrap to the page
when displayed in a notebook or the book); nothing here measures anything, and the studies return numbers.  One
module per part of the image study, named like the study's own parts (``<study>_report``): the adaptive steps
(:mod:`.adaptive_report`) and the pendulum's adaptive steps (:mod:`.pendulum_flows_report`).  (The other chapters'
tables and sentences are their studies', :mod:`cnet_lib.studies`; the runs table is
:func:`cnet_lib.book.runs_table`.)

Every public name of these modules is re-exported here, by name, so a chapter writes ``report.word_sweeps(verdict)``.
"""
from . import adaptive_report, pendulum_flows_report
from .adaptive_report import adaptive_table, equal_cost_table, word_adaptive
from .pendulum_flows_report import flow_table, torchdiffeq_table, word_torchdiffeq, word_flows

MODULES = (adaptive_report, pendulum_flows_report)
"""The modules whose public names (``__all__``) this package re-exports."""

__all__ = [name for module in MODULES for name in module.__all__]
