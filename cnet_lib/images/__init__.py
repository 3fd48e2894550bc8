"""The image study behind the chapters "ContinuousNet", "Refinement training", "Manifestation invariance",
"Beyond the paper: robustness" and "Adaptive steps" (whose study is :mod:`cnet_lib.studies.adaptive`), in four wings by stage, each importing only the wings
before it (``tests/test_layers.py``):

* :mod:`.data`: the data sets, on disk (downloaded, packed, faked) and in memory, in batches;
* :mod:`.training`: what a training run is, the training loop, its checkpoints and resume, evaluation;
* :mod:`.runs`: the presets' trained runs, trained once and reloaded everywhere (shipped models included),
  with the data their studies read and θ(t) recorded while they trained;
* :mod:`.studies`: what is measured on the trained runs.  Each study has the same parts, named
  ``<study>_<part>``: ``_measure`` evaluates models and returns rows, ``_cached`` computes it once for the
  trained runs and caches it (all through one runner, :mod:`.studies.study_cache`), ``_verdict`` decides from
  the numbers; for the sweeps and the robustness study, and over training seeds
  (``seed_cached``, ``seed_verdict``).  Their tables and sentences are the ``<study>_report`` modules of
  :mod:`cnet_lib.report`; their figures and live apps are in :mod:`cnet_lib.draw`.

The names a chapter calls are re-exported here (explicitly, :data:`__all__`), so a chapter writes
``images.trained_runs(ctx.settings)``; everything else is imported from its module.
"""
from . import data, runs, studies, training
from .runs.image_presets import CONTROLS, IMAGE_PRESETS, adaptive_grid, image_runs, live_images, robustness_grid, sweep_grid, timing_grid
from .runs.run_store import trained_runs
from .runs.study_inputs import sample_batch, study_data
from .runs.study_run import StudyRun
from .studies.factorial import factorial_over_seeds, shipped_factorial
from .studies.graph_rule import KEEP_POINTS, graph_kind
from .studies.refinement_timing import recorded_timing, time_refinement
from .studies.robustness_cached import robustness_runs
from .studies.robustness_measure import Condition, robustness_study
from .studies.robustness_verdict import NOISE_DRAWS, PRIMARY, judge, judge_methods
from .studies.seed_cached import seed_record, seed_studies, seed_sweeps
from .studies.seed_verdict import contrast_over_seeds, robustness_over_seeds
from .studies.sweep_cached import sweep_runs
from .studies.sweep_measure import manifestation_sweep, table1_rows, sweep_images
from .studies.sweep_verdict import judge_sweeps
from .studies.theta import (blocks_are_identity, bn_statistics, change_from_initial, change_per_epoch, feature_shapes,
                            manifestation_reads, refinement_check, resnet_manifestation, skip_gains, stage_rows,
                            theta_by_basis)
from .training.train_config import TrainConfig, build_model
from .training.train_loop import SGDStep, train
from .training.train_state import load_model

__all__ = [
    # the wings
    "data", "training", "runs", "studies",
    # presets and trained runs
    "IMAGE_PRESETS", "CONTROLS", "image_runs", "sweep_grid", "robustness_grid", "adaptive_grid", "timing_grid", "live_images", "trained_runs",
    "StudyRun", "study_data", "sample_batch",
    # training
    "TrainConfig", "build_model", "train", "SGDStep", "load_model",
    # θ(t) and the graphs of one model
    "theta_by_basis", "change_from_initial", "change_per_epoch", "stage_rows", "manifestation_reads",
    "resnet_manifestation", "refinement_check", "feature_shapes", "bn_statistics", "skip_gains", "blocks_are_identity",
    "time_refinement", "recorded_timing",
    # the studies of the trained runs and their verdicts
    "sweep_runs", "manifestation_sweep", "table1_rows", "sweep_images", "judge_sweeps",
    "robustness_runs", "robustness_study", "Condition", "judge", "judge_methods", "PRIMARY", "NOISE_DRAWS",
    "seed_record", "seed_sweeps", "seed_studies", "contrast_over_seeds", "robustness_over_seeds",
    "graph_kind", "KEEP_POINTS", "factorial_over_seeds", "shipped_factorial",
]
