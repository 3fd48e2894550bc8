"""The pendulum study behind the chapters "Numerical integrators" and "Is a ResNet a forward-Euler
integrator?": the exact solution and data (:mod:`.physics`), the ODE-Net and its training
(:mod:`.odenet`), the presets (:mod:`.pendulum_presets`), the integrators on the true rate
(:mod:`.convergence`), the trained models, a study obtained whole, once per machine (:mod:`.trained_models`;
every ODE-Net of a study trained at once: :mod:`.stacked_step`, :mod:`.batched_training`, on the device
:mod:`.study_training` measures faster; on disk and shipped: :mod:`.study_store`), their rollouts
(:mod:`.rollouts`, several schemes at once: :mod:`.scheme_batches`) and flows (:mod:`.rate_flows`) and the
measures these share (:mod:`.path_errors`).  It returns numbers: the chapters' tables and what they say about the
numbers are the reporting layer's (:mod:`cnet_lib.report.pendulum_report`, :mod:`cnet_lib.report.pendulum_claims_report`),
its figures and live app are in :mod:`cnet_lib.draw.pendulum_figures`; the trained rates integrated to a tolerance
are the adaptive-step study's (:mod:`cnet_lib.studies.adaptive`).

Every public name of these modules is re-exported here, by name (``tests/test_cli.py`` checks that none is missing), so
a chapter writes ``pendulum.train_models(cfg)``.
"""
from ..runtime.settings import require_extra

require_extra("cnet_lib.pendulum")  # plotly, ipywidgets, ...: a clear message on the core install

from . import (batched_training, convergence, odenet, path_errors, pendulum_presets,
               physics, rate_flows, rollouts, scheme_batches, stacked_step, study_store, study_training, trained_models)
from .physics import (G, RHO0, PendulumData, exact_solution, true_rate, modified_rate, energy, period, make_data,
                      n_intervals)
from .odenet import (TORCHDIFFEQ_METHODS, ODENet, ODENetFit, odenet_label, one_step, rollout, global_error,
                     train_odenet, initial_odenet, check_training)
from .pendulum_presets import (PendulumConfig, PENDULUM_PRESETS, config_for)
from .path_errors import (steps_for, final_error, thin_indices, rms)
from .convergence import (swing_facts, true_rate_rollout, true_rate_rollouts, local_errors, local_slopes,
                          integrator_convergence, fit_slope, fit_slopes, halving_ratios)
from .trained_models import (setup_facts, backend_agreement, training_summary, training_key, study_configs, job_for,
                             train_models, obtain_study, study_source)
from .rollouts import (StackedRate, rollout_rows, dip_rows, interchange_matrix, odenet_convergence,
                       error_floor_rows, dt_data_control, summary)
from .rate_flows import (euler_correction_rms, rate_distances, energy_gained, flow_periods, flow_period)
from .scheme_batches import (multi_scheme_rollout)
from .stacked_step import (StackedParams, ModelPairs, StepGroup, BlockLayout, block_rows_for, make_layout, fast_tanh,
                           stacked_loss_and_grads)
from .batched_training import (TrainingJob, StackedAdam, train_batched)
from .study_store import (STORE_FORMAT, SHIPPED_PENDULUM, study_key, study_hash, store_path, shipped_study_path,
                          save_study, load_study, read_study)
from .study_training import (PROBE_ITERS, NOTICE_SECONDS, estimate_seconds, choose_device, choose_threads,
                             training_notice)

MODULES = (physics, odenet, pendulum_presets, path_errors, convergence, trained_models, rollouts, rate_flows,
           scheme_batches, stacked_step, batched_training, study_store, study_training)
"""The modules whose public names (``__all__``) this package re-exports."""

__all__ = [name for module in MODULES for name in module.__all__]
