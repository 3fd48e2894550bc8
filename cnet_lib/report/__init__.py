"""Reporting, the layer between the studies and the drawing: the studies' numbers as tables and sentences.

One naming rule: a ``*_table`` function returns a table, a ``word_*`` function returns sentences, both as a
:class:`~cnet_lib.runtime.rich_text.Rich` (the few helpers they share, a phrase or a column, are named for what
they are) (plain text when printed, a table or paragraphs that wrap to the page
when displayed in a notebook or the book); nothing here measures anything, and the studies return numbers.  One
module per part of the image study, named like the study's own parts (``<study>_report``): the sweeps
(:mod:`.sweep_report`), the adaptive steps (:mod:`.adaptive_report`), the manifestation contrast over training seeds
(:mod:`.seed_report`) and integrator x refinement (:mod:`.factorial_report`); and the pendulum's adaptive steps
(:mod:`.pendulum_flows_report`).  (The tables and sentences of the pendulum chapters, *ContinuousNet*, *Refinement
training* and *Robustness* are their studies', :mod:`cnet_lib.studies`; the runs table is
:func:`cnet_lib.book.runs_table`.)

Every public name of these modules is re-exported here, by name, so a chapter writes ``report.word_sweeps(verdict)``.
"""
from . import adaptive_report, factorial_report, pendulum_flows_report, seed_report, sweep_report
from .sweep_report import sweep_table, sweeps_table, sweep_summary_table, table1_table, word_sweeps
from .adaptive_report import adaptive_table, equal_cost_table, word_adaptive
from .seed_report import contrast_over_seeds_table, word_contrast_over_seeds
from .factorial_report import factorial_table, word_factorial
from .pendulum_flows_report import flow_table, torchdiffeq_table, word_torchdiffeq, word_flows

MODULES = (sweep_report, adaptive_report, seed_report, factorial_report, pendulum_flows_report)
"""The modules whose public names (``__all__``) this package re-exports."""

__all__ = [name for module in MODULES for name in module.__all__]
