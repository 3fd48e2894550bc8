"""The image study behind the chapters "ContinuousNet", "Refinement training", "Manifestation
invariance" and "Beyond the paper".

Data: the data sets (:mod:`.datasets`), downloading them (:mod:`.download`), their files
(:mod:`.cifar_files`), in memory (:mod:`.image_data`), in batches (:mod:`.batches`), a fake one
(:mod:`.fake_data`).  Training: the run's config and schedule (:mod:`.train_config`), the loop
(:mod:`.train_loop`), checkpoints and resume (:mod:`.train_state`), evaluation (:mod:`.evaluation`),
the presets (:mod:`.image_presets`).  Trained runs: their folders (:mod:`.run_folders`), the shipped
models (:mod:`.shipped`), loading (:mod:`.run_loading`), θ recorded while training (:mod:`.theta_record`),
a run (:mod:`.study_run`), its data (:mod:`.study_inputs`), trained once (:mod:`.run_store`).  Studies:
manifestation sweeps (:mod:`.manifestations`), perturbations (:mod:`.perturbations`), the robustness
study (:mod:`.robustness_conditions`), paired statistics (:mod:`.paired_stats`), its verdict
(:mod:`.judgement`), the sweeps' verdict (:mod:`.verdict`), θ(t) (:mod:`.theta`), checks of the inputs
(:mod:`.checks`), cached studies of the runs (:mod:`.cached_studies`), the chapters' tables
(:mod:`.image_tables`), and refinement's training time measured fairly (:mod:`.refinement_timing`).  Its figures and live apps are in :mod:`cnet_lib.draw`.

The public names of the modules a chapter calls (:data:`MODULES`) are re-exported here, so a chapter
writes ``images.trained_runs(ctx.settings)``.
"""
from . import (cached_studies, image_presets, image_tables, judgement, refinement_timing, robustness_conditions, run_store,
               study_inputs, study_run, theta, train_config, train_loop, train_state, verdict)
from . import adaptive_cached, adaptive_steps, adaptive_tables, adaptive_verdict
from .adaptive_cached import *  # noqa: F401,F403
from .adaptive_steps import *  # noqa: F401,F403
from .adaptive_tables import *  # noqa: F401,F403
from .adaptive_verdict import *  # noqa: F401,F403
from .cached_studies import *  # noqa: F401,F403
from .image_presets import *  # noqa: F401,F403
from .image_tables import *  # noqa: F401,F403
from .judgement import *  # noqa: F401,F403
from .refinement_timing import *  # noqa: F401,F403
from .robustness_conditions import *  # noqa: F401,F403
from .run_store import *  # noqa: F401,F403
from .seed_claims import *  # noqa: F401,F403
from .seed_files import *  # noqa: F401,F403
from .study_inputs import *  # noqa: F401,F403
from .study_run import *  # noqa: F401,F403
from .theta import *  # noqa: F401,F403
from .train_config import *  # noqa: F401,F403
from .train_loop import *  # noqa: F401,F403
from .train_state import *  # noqa: F401,F403
from .verdict import *  # noqa: F401,F403

MODULES = (image_presets, train_config, train_loop, train_state, study_run, study_inputs, run_store, cached_studies,
           theta, robustness_conditions, judgement, verdict, image_tables, refinement_timing)
MODULES += (adaptive_steps, adaptive_cached, adaptive_tables, adaptive_verdict)
"""The modules whose public names (``__all__``) this package re-exports: those the chapters call."""

__all__ = [name for module in MODULES for name in module.__all__]
