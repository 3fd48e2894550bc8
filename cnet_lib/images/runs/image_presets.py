"""What each run-size preset means for the image chapters: the two training runs, the sweep grid,
the adaptive-step grid, and how the time training takes is worded (the times themselves are the shipped models'
records).  Calibration edits numbers here only (how each preset was calibrated, and what it measured, is in
``CHANGELOG.md``: "Calibration history").

Every run is ``{**data, **common, **runs[name]}`` as :class:`~cnet_lib.images.training.train_config.TrainConfig`
fields; ``sweep`` is the grid :func:`cnet_lib.images.training.evaluation.manifestation_sweep` evaluates a trained
model on.  (The robustness study keeps its grid per preset beside its code,
:data:`cnet_lib.studies.robustness.study.GRIDS`; the pendulum chapters keep their own table in
:mod:`cnet_lib.pendulum.trained_models`; which preset a session runs is its setting,
:class:`cnet_lib.runtime.settings.Settings`.)

Also here: where the runs live and the hashes that name them (:func:`run_dir`, :func:`identity_hash`).
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Union

from ...runtime.checkpoint import CheckpointError, load_checkpoint
from ...runtime.settings import preset_name, select_preset
from ..data.datasets import resolve_data_dir
from ..training.train_config import TrainConfig
from ..training.train_state import CHECKPOINT, read_results

__all__ = ["IMAGE_PRESETS", "CONTROLS", "ADAPTIVE_GRIDS", "LIVE_IMAGES", "image_runs", "sweep_grid", "adaptive_grid",
           "live_images", "timing_grid", "training_time_template", "short_hash", "identity_hash", "run_hash",
           "run_dir", "shipped_copy_dir", "is_finished"]


IMAGE_PRESETS: dict[str, dict[str, Any]] = {
    # CI and nbmake: seconds on a small data set (or the fake one)
    "smoke": {
        "data": dict(dataset="cifar10", n_train=256, n_test=128),
        "common": dict(channels=(4, 8, 8), batch_size=32, lr=0.05, lr_schedule="constant", epochs=2,
                       weight_decay=5e-4, momentum=0.9),
        "runs": {
            "rk4_refined": dict(scheme="rk4_classic", n_basis=1, refine_at=(1,)),  # N_t = M: 1 -> 2
            "euler_fixed": dict(scheme="euler", n_basis=2),
        },
        # the other two cells of the 2 x 2 (integrator x refinement): :data:`CONTROLS`
        "controls": {
            "rk4_fixed": dict(scheme="rk4_classic", n_basis=2),
            "euler_refined": dict(scheme="euler", n_basis=1, refine_at=(1,)),
        },
        "sweep": dict(schemes=("euler", "midpoint", "rk4_classic", "rk4_38"), n_steps=(1, 2, 4), compress=(1,),
                      compress_schemes=("rk4_38",)),
        "training_time": "seconds",
        # refinement's speed-up, timed in turn (cnet_lib.studies.refinement.time_refinement)
        "timing": dict(rounds=2, steps=1, warmup=1),
    },
    # the default without a GPU: the models ship with the book (cnet_lib/shipped/)
    "cpu": {
        "data": dict(dataset="cifar10", n_train=None, n_test=2000),
        "common": dict(channels=(8, 16, 32), batch_size=128, lr=0.1, lr_schedule="step", lr_milestones=(5,),
                       lr_decay=0.1, epochs=6, weight_decay=5e-4, momentum=0.9),
        "runs": {
            "rk4_refined": dict(scheme="rk4_classic", n_basis=1, refine_at=(1, 3)),  # N_t = M: 1 -> 2 -> 4
            "euler_fixed": dict(scheme="euler", n_basis=4),
        },
        "controls": {
            "rk4_fixed": dict(scheme="rk4_classic", n_basis=4),  # RK4 at its final depth from the start
            "euler_refined": dict(scheme="euler", n_basis=1, refine_at=(1, 3)),  # Euler grown like rk4_refined
        },
        # N_t = 6 on M = 4: steps that cross θ's jumps, shown apart by the manifestation verdict (its graph rule)
        "sweep": dict(schemes=("euler", "midpoint", "rk4_classic", "rk4_38"), n_steps=(1, 2, 3, 4, 6, 8),
                      compress=(1, 2), compress_schemes=("rk4_classic", "rk4_38")),
        # the words; the times and the machine are the shipped models' records (shipped.expected_training)
        "training_time": ("about {total} for both models on {machine} "
                          "(measured: RK4 refined {rk4_refined}, Euler {euler_fixed})"),
        "timing": dict(rounds=5, steps=3, warmup=2, budget_s=20),
    },
    # the image chapters in <= 30 min on a T4-class GPU, by estimate (``book/gpu.md``); trained on an H100 from three
    # seeds per method (the models that ship).  A wider recipe toward the paper's accuracy (64-128-256, 40 epochs,
    # Nesterov, one learning-rate cycle, label smoothing, cutout; benchmarks/bench_gpu_recipe.py) is the command line
    # of book/gpu.md, "Toward the paper's accuracy", not a preset.
    "gpu": {
        "data": dict(dataset="cifar10", n_train=None, n_test=None),
        "common": dict(channels=(16, 32, 64), batch_size=128, lr=0.1, lr_schedule="step", lr_milestones=(12,),
                       lr_decay=0.1, epochs=16, weight_decay=5e-4, momentum=0.9),
        "runs": {
            "rk4_refined": dict(scheme="rk4_classic", n_basis=1, refine_at=(4, 8)),  # N_t = M: 1 -> 2 -> 4
            "euler_fixed": dict(scheme="euler", n_basis=4),
        },
        "controls": {
            "rk4_fixed": dict(scheme="rk4_classic", n_basis=4),
            "euler_refined": dict(scheme="euler", n_basis=1, refine_at=(4, 8)),
        },
        "sweep": dict(schemes=("euler", "midpoint", "rk4_classic", "rk4_38"), n_steps=(1, 2, 3, 4, 6, 8, 16),
                      compress=(1, 2), compress_schemes=("rk4_classic", "rk4_38")),
        # words only: not part of a run's identity hash (run_folders.identity_hash), so the shipped models stay valid;
        # the times, the machine and the seed are the shipped models' records (shipped.expected_training), and so is
        # the T4 estimate computed from them (book.measurements.t4_estimate)
        "training_time": ("both models in {total} on {machine} "
                          "(measured, training seed {seed}: RK4 refined {rk4_refined}, Euler {euler_fixed})"),
        # on a GPU all of it in seconds; on a CPU what fits 20 s (cnet_lib.studies.refinement.study.fit_budget)
        "timing": dict(rounds=7, steps=20, warmup=3, budget_s=20),
    },
    # The paper's scale (Queiruga et al., arXiv 2008.02389) on the schedule of the authors' published command
    # lines (the paper's text gives no epochs; its timings imply about 160); its refinement epochs are the paper's
    # (Sec. 5.2), which it says were chosen just before the learning rate decays, and on the command lines' decays
    # (30, 60, 90) they are not.  ``CHANGELOG.md``'s "Calibration history" says which values
    # come from the command lines and which are assumptions.  Never run for this book.  refine_at counts completed epochs, the authors count from 1: these runs refine
    # one epoch later than theirs.
    "paper": {
        "data": dict(dataset="cifar10", n_train=None, n_test=None),
        "common": dict(batch_size=128, lr=0.1, lr_schedule="step", lr_milestones=(30, 60, 90), lr_decay=0.1,
                       epochs=120, weight_decay=5e-4, momentum=0.9),
        "runs": {
            # ContinuousNet 16-32-64, RK4-classic refined N_t = M: 1 -> 2 -> 4 -> 8 -> 16 -> 32 (5 doublings)
            "rk4_refined": dict(channels=(16, 32, 64), scheme="rk4_classic", n_basis=1, refine_at=(20, 40, 60, 70, 80)),
            # ... against Euler trained at 32-32-32 from the start
            "euler_fixed": dict(channels=(16, 32, 64), scheme="euler", n_basis=32),
            # CIFAR-100 Wide-ContinuousNet 64-128-256 refined 1 -> 8 at 20, 50, 80
            "cifar100_wide_refined": dict(dataset="cifar100", channels=(64, 128, 256), scheme="rk4_classic",
                                          n_basis=1, refine_at=(20, 50, 80)),
        },
        "controls": {
            "rk4_fixed": dict(channels=(16, 32, 64), scheme="rk4_classic", n_basis=32),
            "euler_refined": dict(channels=(16, 32, 64), scheme="euler", n_basis=1, refine_at=(20, 40, 60, 70, 80)),
        },
        "sweep": dict(schemes=("euler", "midpoint", "rk4_classic", "rk4_38"), n_steps=(1, 2, 4, 8, 16, 32, 64),
                      compress=(2, 4, 6, 8, 16), compress_schemes=("rk4_classic", "rk4_38")),
        "training_time": "hours on a GPU (not measured)",
        # on a GPU all of it in seconds; on a CPU what fits 20 s (cnet_lib.studies.refinement.study.fit_budget)
        "timing": dict(rounds=7, steps=20, warmup=3, budget_s=20),
    },
}


def image_runs(preset: str, out_root=None, *, controls: bool = False, **overrides) -> dict[str, TrainConfig]:
    """The runs of ``preset`` (``ctx.preset`` in a chapter) as TrainConfigs, ``overrides`` applied to every run;
    with ``controls=True`` its control runs too (:data:`CONTROLS`), after the main ones.

    With ``out_root`` each run writes to ``out_root/<preset>-<run>``; with ``resume=True`` as well,
    ``train(cfg)`` trains a run once and afterwards just reloads it.
    """
    name = preset_name(preset)
    p = select_preset(IMAGE_PRESETS, name)
    specs = {**p["runs"], **(p["controls"] if controls else {})}
    runs = {}
    for run, spec in specs.items():
        kw = {**p["data"], **p["common"], **spec, "preset": name, "run_name": run}
        if out_root is not None:
            kw["out_dir"] = str(Path(out_root) / f"{name}-{run}")
        runs[run] = TrainConfig(**{**kw, **overrides})
    return runs


CONTROLS = ("rk4_fixed", "euler_refined")
"""The control runs of every preset: with the two main runs (RK4-classic refined, Euler at fixed depth) they make
the 2 x 2 of integrator x refinement (RK4-classic at fixed depth, Euler refined on the same schedule), so that what
the integrator does and what refinement does can be told apart.  Each preset's ``controls`` hold them with the same
data, recipe, final M and refinement epochs as the main runs (``tests/test_image_study.py`` checks the balance); they
are trained only when asked for by name (:func:`cnet_lib.images.runs.run_store.trained_runs`)."""


def sweep_grid(preset: str) -> dict:
    """The sweep grid of ``preset`` (schemes, n_steps, compress, compress_schemes)."""
    return dict(select_preset(IMAGE_PRESETS, preset)["sweep"])


def timing_grid(preset: str) -> dict:
    """How refinement's training time is timed in ``preset`` (rounds, steps, warmup and the budget in seconds of
    :func:`cnet_lib.studies.refinement.time_refinement`)."""
    return dict(select_preset(IMAGE_PRESETS, preset)["timing"])


def training_time_template(preset: str) -> str:
    """How ``preset`` words the time its image models take to train: plain words, or a template whose ``{total}``,
    ``{machine}``, ``{seed}`` and ``{<run>}`` the shipped models' records fill
    (:func:`cnet_lib.images.runs.shipped.expected_training`)."""
    return select_preset(IMAGE_PRESETS, preset)["training_time"]


ADAPTIVE_GRIDS = {
    "smoke": dict(pairs=("bosh3", "dopri5"), tolerances=(1e-2, 1e-4), equal_cost_pair="dopri5", batch_size=32,
                  n_images=32),
    "cpu": dict(pairs=("bosh3", "dopri5"), tolerances=(1e-1, 1e-2, 1e-3, 1e-4, 1e-5), equal_cost_pair="dopri5",
                batch_size=100, n_images=None),
    # on a GPU an adaptive solve is launch-bound and synchronises every step: larger batches, 2,000 images
    "gpu": dict(pairs=("bosh3", "dopri5"), tolerances=(1e-1, 1e-2, 1e-3, 1e-4, 1e-5), equal_cost_pair="dopri5",
                batch_size=500, n_images=2000),
    "paper": dict(pairs=("bosh3", "dopri5"), tolerances=(1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6), equal_cost_pair="dopri5",
                  batch_size=500, n_images=2000),
}
"""The study's grid per preset: the pairs, the tolerances (``rtol = atol``, loosest first), the pair whose
NFE the fixed-step graphs of equal cost match, the images per batch (the error norm's batch) and how many
of the preset's test images are evaluated (None: all of them; ``smoke`` takes a few, for seconds)."""

LIVE_IMAGES = {"smoke": 32, "cpu": 200, "gpu": 1000, "paper": 1000}
"""Test images the live app evaluates per interaction, per preset (not part of the study)."""


def adaptive_grid(preset: str) -> dict:
    """The study's grid of ``preset`` (:data:`ADAPTIVE_GRIDS`)."""
    return dict(select_preset(ADAPTIVE_GRIDS, preset))


def live_images(preset: str) -> int:
    """The live app's number of test images in ``preset`` (:data:`LIVE_IMAGES`)."""
    return int(select_preset(LIVE_IMAGES, preset))


# Where the image study's trained runs live, and the hashes that name them.
#
# A run lives in ``<runs root>/<preset>-<run>-<hash>/`` (the runs root: a session's ``runs_dir``
# setting, ``CNET_RUNS_DIR``, default ``~/.cache/cnet_lib/runs``), where ``<hash>`` is a short hash of
# the run's identity (:meth:`TrainConfig.identity`, the number of epochs and the data folder), so a
# changed preset never picks up a stale checkpoint.  A model shipped with the book is copied beside it,
# into ``<preset>-<run>-<hash>-shipped/`` (:func:`shipped_copy_dir`).

PathLike = Union[str, os.PathLike]


def short_hash(obj: Any, n: int = 10) -> str:
    """The first ``n`` hex digits of the SHA-256 of ``obj`` as sorted JSON."""
    text = json.dumps(obj, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def identity_hash(cfg: TrainConfig) -> str:
    """Short hash of the run's identity: ``cfg.identity()`` and the number of epochs (what a
    shipped model must match to stand in for this run, whatever folder the data is in)."""
    return short_hash({"identity": cfg.identity(), "epochs": cfg.epochs})


def run_hash(cfg: TrainConfig) -> str:
    """Short hash of what the trained model depends on: ``cfg.identity()``, the number of
    epochs and the data folder (a fake data set and the real one never share a checkpoint)."""
    data = str(resolve_data_dir(cfg.data_dir).resolve())
    return short_hash({"identity": cfg.identity(), "epochs": cfg.epochs, "data": data})


def run_dir(cfg: TrainConfig, root: PathLike) -> Path:
    """``<root>/<preset>-<run>-<hash of the run>``, and ``<root>/<preset>-<run>-seed<k>-<hash>`` for a
    training seed k other than 0 (the seed is in the hash too; the name says it to a reader)."""
    seed = f"-seed{cfg.seed}" if cfg.seed else ""
    return Path(root).expanduser() / f"{cfg.preset}-{cfg.run_name}{seed}-{run_hash(cfg)}"


def shipped_copy_dir(cfg: TrainConfig, root: PathLike) -> Path:
    """Where the shipped model of ``cfg`` is copied: ``<root>/<preset>-<run>-<hash>-shipped``,
    beside (never inside) the reader's own run folder :func:`run_dir`."""
    own = run_dir(cfg, root)
    return own.with_name(f"{own.name}-shipped")


def is_finished(out: Path, cfg: TrainConfig) -> bool:
    """Whether ``out`` holds a finished run of ``cfg``: its checkpoint, and results of every epoch.  When
    ``results.json`` is not whole (:func:`cnet_lib.images.training.train_state.read_results`), the epochs
    the checkpoint holds count: the results file is written again from it."""
    if not (out / CHECKPOINT).is_file():
        return False
    res = read_results(out)
    if res is not None:
        return res["epochs_done"] >= cfg.epochs
    try:
        return int(load_checkpoint(out / CHECKPOINT, map_location="cpu")["extra"]["epoch"]) >= cfg.epochs
    except (OSError, CheckpointError, KeyError, TypeError, ValueError):
        return False
