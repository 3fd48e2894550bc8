"""Beyond the paper: is a ContinuousNet robust to weight noise, to rounded weights, to input noise?  The study of the
chapter *Beyond the paper: robustness and quantization*: its numbers (:mod:`.study`: the grid, the perturbations, the
measurement, the trained runs' cached study and its verdict) and how they are shown (:mod:`.show`: tables, sentences,
figures, the live app and the numbers the chapter's prose quotes).

A chapter writes ``from cnet_lib.studies import robustness``, then ``study = robustness.run(runs)``,
``verdict = robustness.judge(study, "rk4_refined", "euler_fixed")``, ``robustness.drops_table(verdict)``,
``robustness.fig_weight_noise(study)``, ``robustness.live_app(runs, ...)``.
"""
from . import show, study
from .show import (DRAWS_NOTE, FOOTING, HURTS, STORAGE_KINDS, STUDY_HOW, active_conditions, draws_cell, drops_table, facts,
                   fig_drops, fig_explorer, fig_input_noise, fig_quantization, fig_weight_noise, floor_sentences,
                   level_name, live_app, outcome_phrase, over_seeds_table, quantization_error_table, size_table,
                   study_label, word_over_seeds, word_verdict)
from .study import (DEFAULT_GRID, FAMILIES, FLOAT_FORMATS, GRAPHS, GRIDS, KINDS, MC_HALF_WIDTH, NOISE_DRAWS, OUTCOMES,
                    PREFIX, PRIMARY, QUANTIZATION_SCHEMES, RANDOM_KINDS, WIDE_SD, Condition, Judgement, PrimaryTest,
                    SeedRobustness, cache_path, check_grid, coefficient_tensors, condition_name, conditions_from_json,
                    conditions_to_json, decide, draw_spread, float_format_copy, identity_copy, input_noise, judge,
                    model_bytes, over_seeds, pack_outcomes, perturb_coefficients, preset_grid, quantize_per_channel,
                    quantize_theta, quantize_weights, robustness_over_seeds, robustness_rows, robustness_study, run,
                    study_file, summarise, unpack_outcomes)

__all__ = ["study", "show", *study.__all__, *show.__all__]
