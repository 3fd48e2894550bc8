"""The image models the chapters "ContinuousNet", "Refinement training", "Manifestation invariance", "Beyond the
paper: robustness" and "Adaptive steps" read, in three wings by stage, each importing only the wings before it
(``tests/test_layers.py``):

* :mod:`.data`: the data sets, on disk (downloaded, packed, faked) and in memory, in batches;
* :mod:`.training`: what a training run is, the training loop, its checkpoints and resume, evaluation (a sweep of
  one model over many graphs: :func:`.training.evaluation.manifestation_sweep`);
* :mod:`.runs`: the presets' trained runs, trained once and reloaded everywhere (shipped models included), with the
  data their studies read and θ(t) recorded while they trained, and the shipped folders written.

What is measured on the trained runs is the studies', one folder each in :mod:`cnet_lib.studies`, through one
runner (:mod:`cnet_lib.studies.runner`).  The names a chapter calls are re-exported here (explicitly,
:data:`__all__`), so a chapter writes ``images.trained_runs(ctx.settings)``; everything else is imported from its
module.
"""
from .runs.image_presets import CONTROLS, IMAGE_PRESETS, adaptive_grid, image_runs, live_images, sweep_grid, timing_grid
from .runs.run_loading import StudyRun
from .runs.run_store import trained_runs
from .runs.study_inputs import sample_batch, study_data
from .training.evaluation import manifestation_sweep
from .training.train_config import TrainConfig, build_model
from .training.train_loop import SGDStep, train
from .training.train_state import load_model
from . import data, runs, training

__all__ = [
    # the wings
    "data", "training", "runs",
    # presets and trained runs
    "IMAGE_PRESETS", "CONTROLS", "image_runs", "sweep_grid", "adaptive_grid", "timing_grid", "live_images", "trained_runs",
    "StudyRun", "study_data", "sample_batch",
    # training
    "TrainConfig", "build_model", "train", "SGDStep", "load_model",
    # the studies of the trained runs and their verdicts
    "manifestation_sweep",
]
