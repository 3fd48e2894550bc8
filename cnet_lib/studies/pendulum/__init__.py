"""The pendulum study of the chapters *Numerical integrators* and *Is a ResNet a forward-Euler integrator?*:
its numbers (:mod:`.study`) and how they are shown (:mod:`.show`: tables, sentences, figures, the live rollout app,
the numbers the prose quotes).  The pendulum and its trained ODE-Nets are :mod:`cnet_lib.pendulum`'s.

A chapter writes ``from cnet_lib.studies import pendulum`` and calls the names below, e.g.
``pendulum.dip_table(pendulum.dip_rows(rows))``; the few names of :mod:`cnet_lib.pendulum` the chapters call
(``config_for``, ``train_models``, ``true_rate``, ``odenet_label``, ``G``) come with them.
"""
from ...pendulum import G, config_for, odenet_label, train_models, true_rate
from .show import (backend_table, control_table, convergence_table, dip_table, energy_gained_table, error_floor_table,
                   facts, fig_against_exact, fig_convergence, fig_dt_data_control, fig_exact_motion, fig_interchange,
                   fig_rollout_explorer, fig_scheme_explorer, fig_training_loss, fig_trajectories, flow_period_table,
                   halving_table, interchange_table, live_rollout_app, local_error_table, odenet_convergence_table,
                   rate_distance_table, rollout_table, setup_table, slopes_table, swing_table, training_table,
                   word_control, word_dip, word_energy, word_error_floor, word_fit, word_interchange,
                   word_long_window, word_odenet_curves, word_orders, word_rate_distances)
from .study import (backend_agreement, dip_rows, dt_data_control, energy_gained, error_floor_rows,
                    euler_correction_rms, fit_slopes, flow_periods, halving_ratios, integrator_convergence,
                    interchange_matrix, local_errors, local_slopes, odenet_convergence, rate_distances, rollout_rows,
                    setup_facts, swing_facts, training_summary, true_rate_rollout, true_rate_rollouts)

__all__ = [
    # the pendulum and its trained ODE-Nets (cnet_lib.pendulum)
    "G", "config_for", "train_models", "true_rate", "odenet_label",
    # Numerical integrators
    "swing_facts", "swing_table", "fig_exact_motion", "true_rate_rollout", "rollout_table", "fig_against_exact",
    "local_errors", "local_slopes", "local_error_table", "integrator_convergence", "fit_slopes", "convergence_table",
    "slopes_table", "word_orders", "fig_convergence", "halving_ratios", "halving_table", "word_long_window",
    "true_rate_rollouts", "fig_scheme_explorer",
    # Is a ResNet a forward-Euler integrator?
    "setup_facts", "setup_table", "backend_agreement", "backend_table", "training_summary", "training_table",
    "word_fit", "fig_training_loss", "rollout_rows", "dip_rows", "dip_table", "word_dip", "fig_trajectories",
    "euler_correction_rms", "rate_distances", "rate_distance_table", "word_rate_distances", "odenet_convergence",
    "odenet_convergence_table", "word_odenet_curves", "error_floor_rows", "error_floor_table", "word_error_floor",
    "interchange_matrix", "interchange_table", "word_interchange", "fig_interchange", "dt_data_control",
    "control_table", "word_control", "fig_dt_data_control", "energy_gained", "flow_periods", "energy_gained_table",
    "flow_period_table", "word_energy", "live_rollout_app", "fig_rollout_explorer",
    # the numbers both chapters' prose quotes
    "facts",
]
