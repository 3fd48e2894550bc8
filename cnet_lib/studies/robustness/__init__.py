"""Beyond the paper: is a ContinuousNet robust to weight noise, to rounded weights, to input noise?  The study of the
chapter *Beyond the paper: robustness and quantization*: its numbers (:mod:`.study`: the grid, the perturbations, the
measurement, the trained runs' cached study and its verdict) and how they are shown (:mod:`.show`: tables, sentences,
figures, the live app and the numbers the chapter's prose quotes).

A chapter writes ``from cnet_lib.studies import robustness``, then ``study = robustness.run(runs)``,
``verdict = robustness.judge(study, "rk4_refined", "euler_fixed")``, ``robustness.drops_table(verdict)``,
``robustness.fig_weight_noise(study)``, ``robustness.live_app(runs, ...)``: the names below.  Everything else is
its module's (``robustness.study.check_grid``, ``robustness.show.outcome_phrase``).
"""
from . import show, study
from .show import (drops_table, facts, fig_drops, fig_explorer, fig_input_noise, fig_quantization, fig_weight_noise,
                   live_app, over_seeds_table, quantization_error_table, size_table, word_over_seeds, word_verdict)
from .study import (NOISE_DRAWS, PRIMARY, judge, over_seeds, preset_grid, quantize_theta, quantize_weights,
                    robustness_over_seeds, run)

__all__ = ["study", "show",
           # the study
           "run", "preset_grid", "judge", "over_seeds", "robustness_over_seeds", "PRIMARY", "NOISE_DRAWS",
           "quantize_theta", "quantize_weights",
           # how it is shown
           "quantization_error_table", "size_table", "drops_table", "word_verdict", "over_seeds_table", "word_over_seeds",
           "facts", "fig_weight_noise", "fig_quantization", "fig_input_noise", "fig_drops", "fig_explorer", "live_app"]
