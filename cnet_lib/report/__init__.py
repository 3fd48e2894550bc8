"""Reporting, the layer between the studies and the drawing: the studies' numbers as tables and sentences.

One naming rule: a ``*_table`` function returns a table, a ``word_*`` function returns sentences, both as a
:class:`~cnet_lib.runtime.rich_text.Rich` (the few helpers they share, a phrase or a column, are named for what
they are) (plain text when printed, a table or paragraphs that wrap to the page
when displayed in a notebook or the book); nothing here measures anything, and the studies return numbers.  One
module per part of the image study, named like the study's own parts (``<study>_report``): the trained runs
(:mod:`.run_report`), θ(t) and the graphs of one model (:mod:`.theta_report`), the sweeps (:mod:`.sweep_report`),
the robustness study (:mod:`.robustness_report`), claims over
training seeds (:mod:`.seed_report`), refinement's training time (:mod:`.refinement_report`) and integrator x refinement
(:mod:`.factorial_report`); and the
pendulum study's: the two pendulum chapters' tables (:mod:`.pendulum_report`), what they say about their numbers
with the thresholds they judge by (:mod:`.pendulum_claims_report`).  (The adaptive steps' are
:mod:`cnet_lib.studies.adaptive`'s.)

Every public name of these modules is re-exported here, by name, so a chapter writes ``report.runs_table(runs)``.
"""
from . import (factorial_report, pendulum_claims_report, pendulum_report, refinement_report,
               robustness_report, run_report, seed_report, sweep_report, theta_report)
from .run_report import configs_table, runs_table, histories_table, refined_column, as_trained_note
from .theta_report import (change_from_initial_table, change_per_epoch_table, word_resnet_manifestation,
                           word_refinement_check, manifestation_reads_table, stage_table, feature_shapes_table,
                           bn_statistics_table, skip_gains_table)
from .sweep_report import sweep_table, sweeps_table, sweep_summary_table, table1_table, word_sweeps
from .robustness_report import (word_verdict, outcome_phrase, floor_sentences, HURTS, STUDY_HOW, FOOTING, drops_table,
                                word_methods, quantization_error_table, size_table, DRAWS_NOTE, draws_cell)
from .seed_report import (contrast_over_seeds_table, word_contrast_over_seeds, robustness_over_seeds_table,
                          word_robustness_over_seeds, spread_cell, seeds_phrase)
from .refinement_report import word_speedup, refinement_cost_table
from .factorial_report import factorial_table, word_factorial
from .pendulum_report import (swing_table, rollout_table, local_error_table, convergence_table, slopes_table,
                              halving_table, setup_table, backend_table, training_table, dip_table, rate_distance_table,
                              odenet_convergence_table, error_floor_table, interchange_table, control_table,
                              energy_gained_table, flow_period_table)
from .pendulum_claims_report import (SAME_FIT, FALLS_APART, STEADY, SEVERAL, FLAT, SAME_FLOOR, ORDERS, BREAKS,
                                     SMALL_COST, MANY_TIMES, SAME_GAIN, ORDER_OFF, ORDER_ONE, times, span, word_orders,
                                     word_long_window, word_fit, word_dip, word_rate_distances, word_odenet_curves,
                                     word_error_floor, word_interchange, word_control, word_energy)

MODULES = (run_report, theta_report, sweep_report, robustness_report, seed_report, refinement_report,
           factorial_report, pendulum_report, pendulum_claims_report)
"""The modules whose public names (``__all__``) this package re-exports."""

__all__ = [name for module in MODULES for name in module.__all__]
