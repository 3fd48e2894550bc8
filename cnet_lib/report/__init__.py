"""Reporting, the layer between the studies and the drawing: the studies' numbers as tables and sentences.

One naming rule: a ``*_table`` function returns a table, a ``word_*`` function returns sentences, both as a
:class:`~cnet_lib.runtime.rich_text.Rich` (the few helpers they share, a phrase or a column, are named for what
they are) (plain text when printed, a table or paragraphs that wrap to the page
when displayed in a notebook or the book); nothing here measures anything, and the studies return numbers.  One
module per part of the image study, named like the study's own parts (``<study>_report``): the trained runs
(:mod:`.run_report`), θ(t) and the graphs of one model (:mod:`.theta_report`), the sweeps (:mod:`.sweep_report`),
the adaptive steps (:mod:`.adaptive_report`), the manifestation contrast over
training seeds (:mod:`.seed_report`), refinement's training time (:mod:`.refinement_report`) and integrator x refinement
(:mod:`.factorial_report`); and the
pendulum's adaptive steps (:mod:`.pendulum_flows_report`).  (The pendulum chapters' tables and sentences are the
pendulum study's, :mod:`cnet_lib.studies.pendulum`.)

Every public name of these modules is re-exported here, by name, so a chapter writes ``report.runs_table(runs)``.
"""
from . import (adaptive_report, factorial_report, pendulum_flows_report, refinement_report,
               run_report, seed_report, sweep_report, theta_report)
from .run_report import configs_table, runs_table, histories_table, refined_column
from .theta_report import (change_from_initial_table, change_per_epoch_table, word_resnet_manifestation,
                           word_refinement_check, manifestation_reads_table, stage_table, feature_shapes_table,
                           bn_statistics_table, skip_gains_table)
from .sweep_report import sweep_table, sweeps_table, sweep_summary_table, table1_table, word_sweeps
from .adaptive_report import adaptive_table, equal_cost_table, word_adaptive
from .seed_report import contrast_over_seeds_table, word_contrast_over_seeds
from .refinement_report import word_speedup, refinement_cost_table
from .factorial_report import factorial_table, word_factorial
from .pendulum_flows_report import flow_table, torchdiffeq_table, word_torchdiffeq, word_flows

MODULES = (run_report, theta_report, sweep_report, adaptive_report, seed_report, refinement_report,
           factorial_report, pendulum_flows_report)
"""The modules whose public names (``__all__``) this package re-exports."""

__all__ = [name for module in MODULES for name in module.__all__]
