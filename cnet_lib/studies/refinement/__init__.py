"""The study of the chapter *Refinement training*: what a refinement keeps, the two image models' training runs and
how their θ(t) moved epoch by epoch, and what refinement saves in training time, timed fairly and from the runs'
records: its numbers (:mod:`.study`) and how they are shown (:mod:`.show`: tables, sentences, figures, and the
numbers the prose quotes).  The trained models themselves are :mod:`cnet_lib.images`'s.

A chapter writes ``from cnet_lib.studies import refinement`` and calls the names below, e.g.
``refinement.refinement_cost_table(refinement.time_refinement(cfg))``.
"""
from .show import (change_per_epoch_table, configs_table, facts, fig_theta_refinement, fig_training_curves,
                   histories_table, refinement_cost_table, word_refinement_check, word_speedup)
from .study import (change_per_epoch, epoch_seconds, recorded_timing, refinement_check, refinement_cost,
                    schedule_ideal, schedule_n_steps, time_refinement, whole_runs)

__all__ = [
    # the runs and their training
    "configs_table", "histories_table", "fig_training_curves", "epoch_seconds",
    # what a refinement keeps; θ(t) epoch by epoch
    "refinement_check", "word_refinement_check", "change_per_epoch", "change_per_epoch_table", "fig_theta_refinement",
    # what refinement saves
    "schedule_n_steps", "schedule_ideal", "time_refinement", "recorded_timing", "refinement_cost", "word_speedup",
    "refinement_cost_table", "whole_runs",
    # the numbers the prose quotes
    "facts",
]
