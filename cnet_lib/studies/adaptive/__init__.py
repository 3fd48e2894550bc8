"""The adaptive-step study of the chapter *Beyond the paper II: adaptive steps*: does an error-controlled solver
tell a continuous model from a discrete one, on the pendulum's ODE-Nets and on the two image models?  Its numbers
(:mod:`.study`: what is measured, computed once through the studies' runner, and the two verdicts) and how they are
shown (:mod:`.show`: tables, sentences, figures, the live app, the numbers the prose quotes).  The embedded pairs and
the adaptive integrator themselves are the library's core (:func:`cnet_lib.integrate_adaptive`).

A chapter writes ``from cnet_lib.studies import adaptive`` and calls the names below, e.g.
``study = adaptive.run(runs)``, ``adaptive.verdict_table(adaptive.judge(study))``.
"""
from .show import (CONTROL_DASHES, LIVE_TOLERANCES, PAIR_DASH, accuracy_table, equal_cost_table, facts, fig_accuracy,
                   fig_equal_cost, fig_flow_errors, fig_nfe, fig_step_explorer, fig_step_positions, flow_table,
                   flows_verdict_table, live_app, torchdiffeq_table, verdict, verdict_table, word_flows,
                   word_verdict)
from .study import (BINS, EQUAL_COST_SCHEME, IMAGE_CLASSES, IMAGE_RULE, OUTCOMES, PENDULUM_GRIDS, PENDULUM_RULE, PREFIX,
                    ImageRule, MemberRates, ModelClass, PendulumFlow, PendulumRule, Verdict, adaptive_rows,
                    adaptive_solves, check_grid, checked_study, classify_model, decode_predictions, encode_predictions,
                    equal_cost_rows, evaluate, fixed_solves, flow_rows, judge, judge_flows, mean_nfe, measure,
                    own_rows, pendulum_flows, pendulum_grid, run, seeds_record, stages_per_step, study_file, study_for_shipping,
                    torchdiffeq_rows)

__all__ = [
    # the pendulum's ODE-Nets as flows
    "PENDULUM_GRIDS", "pendulum_grid", "PendulumFlow", "pendulum_flows", "flow_rows", "own_rows", "torchdiffeq_rows",
    "PendulumRule", "PENDULUM_RULE", "judge_flows", "MemberRates", "adaptive_solves", "fixed_solves",
    "torchdiffeq_table", "flow_table", "fig_flow_errors", "flows_verdict_table", "word_flows",
    "CONTROL_DASHES",
    # the image models under adaptive steps
    "BINS", "EQUAL_COST_SCHEME", "check_grid", "encode_predictions", "decode_predictions", "evaluate", "mean_nfe",
    "stages_per_step", "measure", "adaptive_rows", "equal_cost_rows", "seeds_record", "PREFIX", "checked_study",
    "study_file", "run", "study_for_shipping", "accuracy_table", "equal_cost_table", "PAIR_DASH", "fig_accuracy", "fig_nfe",
    "fig_step_positions", "fig_equal_cost",
    # the image verdict
    "ImageRule", "IMAGE_RULE", "IMAGE_CLASSES", "OUTCOMES", "ModelClass", "Verdict", "classify_model", "judge",
    "verdict_table", "word_verdict", "verdict",
    # the live app
    "LIVE_TOLERANCES", "fig_step_explorer", "live_app",
    # the numbers the prose quotes
    "facts",
]
