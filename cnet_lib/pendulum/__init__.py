"""The pendulum of the paper's Section 3 and its ODE-Nets: the models the pendulum chapters read.

The exact solution and the data (:mod:`.physics`); the ODE-Net, its rollouts (several models and schemes at once
too) and its training (:mod:`.odenet`); every ODE-Net of a study trained at once, on the device measured faster
(:mod:`.batched_training`); the presets, the study on disk and as it ships, and the models obtained once per
machine (:mod:`.trained_models`).  What the chapters measure with these models, and their tables, sentences and
figures, are the pendulum study's (:mod:`cnet_lib.studies.pendulum`; the flows integrated to a tolerance:
:mod:`cnet_lib.studies.adaptive`).

Every public name of these modules is re-exported here, by name, so a reader writes ``pendulum.train_models(cfg)``.
"""
from ..runtime.settings import require_extra

require_extra("cnet_lib.pendulum")  # scipy, torchdiffeq, ...: a clear message on the core install

from . import batched_training, odenet, physics, trained_models
from .physics import (G, RHO0, PendulumData, exact_solution, true_rate, modified_rate, energy, period, make_data,
                      n_intervals, steps_for)
from .odenet import (TORCHDIFFEQ_METHODS, ODENet, ODENetFit, odenet_label, one_step, rollout, global_error,
                     train_odenet, initial_odenet, check_training, StackedRate, multi_scheme_rollout)
from .batched_training import (StackedParams, ModelPairs, StepGroup, BlockLayout, block_rows_for, make_layout,
                               fast_tanh, stacked_loss_and_grads, TrainingJob, StackedAdam, train_batched, PROBE_ITERS,
                               estimate_seconds, choose_threads, choose_device)
from .trained_models import (PendulumConfig, PENDULUM_PRESETS, config_for, STORE_FORMAT, SHIPPED_PENDULUM, study_key,
                             study_hash, store_path, shipped_study_path, save_study, load_study, read_study,
                             training_key, study_configs, job_for, train_models, obtain_study, study_source,
                             NOTICE_SECONDS, training_notice)
MODULES = (physics, odenet, batched_training, trained_models)
"""The modules whose public names (``__all__``) this package re-exports."""

__all__ = [name for module in MODULES for name in module.__all__]
