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
  the numbers; over training seeds (``seed_cached``).  Their tables and sentences are
  the ``<study>_report`` modules of :mod:`cnet_lib.report`; their figures and live apps are in :mod:`cnet_lib.draw`.
  The studies that have moved into :mod:`cnet_lib.studies` (the robustness study, :mod:`cnet_lib.studies.robustness`;
  the manifestation sweeps, :mod:`cnet_lib.studies.manifestation`) read the models and the evaluations here (a
  sweep: :func:`cnet_lib.images.training.evaluation.manifestation_sweep`).

The names a chapter calls are re-exported here (explicitly, :data:`__all__`), so a chapter writes
``images.trained_runs(ctx.settings)``; everything else is imported from its module.
"""
from . import data, runs, studies, training
from .runs.image_presets import CONTROLS, IMAGE_PRESETS, adaptive_grid, image_runs, live_images, sweep_grid, timing_grid
from .runs.run_store import trained_runs
from .runs.study_inputs import sample_batch, study_data
from .runs.study_run import StudyRun
from .studies.seed_cached import seed_record, seed_studies, seed_sweeps
from .studies.paired_stats import KEEP_POINTS
from .training.train_config import TrainConfig, build_model
from .training.train_loop import SGDStep, train
from .training.evaluation import manifestation_sweep
from .training.train_state import load_model

__all__ = [
    # the wings
    "data", "training", "runs", "studies",
    # presets and trained runs
    "IMAGE_PRESETS", "CONTROLS", "image_runs", "sweep_grid", "adaptive_grid", "timing_grid", "live_images", "trained_runs",
    "StudyRun", "study_data", "sample_batch",
    # training
    "TrainConfig", "build_model", "train", "SGDStep", "load_model",
    # the studies of the trained runs and their verdicts
    "manifestation_sweep", "KEEP_POINTS",
    "seed_record", "seed_sweeps", "seed_studies",
]
