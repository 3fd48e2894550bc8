"""Trained runs of the image study: trained once, reloaded everywhere (:func:`trained_runs`).

The three image chapters share two trained models per preset (:data:`cnet_lib.images.runs.image_presets.IMAGE_PRESETS`):
an RK4-classic ContinuousNet grown by refinement (``rk4_refined``) and an Euler ContinuousNet trained
at its final depth from the start (``euler_fixed``).  :func:`trained_runs` trains each run of the
session's preset **once**, in its folder under the session's runs folder
(:mod:`cnet_lib.images.runs.image_presets`), and afterwards reloads it; while training, θ(t) of a few weights is
recorded after every epoch (:mod:`cnet_lib.images.runs.theta_record`).  A run the book ships a trained model
for is used instead (:mod:`cnet_lib.images.runs.shipped`), unless the reader has trained that run themselves.

Each run folder is locked while it is checked, loaded or trained
(:func:`cnet_lib.runtime.files.folder_lock`): a second notebook or process on the same runs root
waits, with a message, and then loads what the first one trained.
"""
from __future__ import annotations

import dataclasses
import errno
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from ...runtime.checkpoint import CheckpointSaveError, file_digest
from ...runtime.files import (FolderNotWritable, check_creatable, check_writable, folder_lock, private_temp_dir,
    shown_path)
from ...runtime.rich_text import run_label
from ...runtime.settings import Settings
from ..training.train_config import TrainConfig
from ..training.train_loop import train
from ..training.train_state import CHECKPOINT, interrupted_message
from .image_presets import image_runs, is_finished, run_dir, shipped_copy_dir
from .run_loading import StudyRun, load_finished, own_finished, set_aside_damaged_checkpoint, set_aside_other_config
from .shipped import REINSTALL, ShippedFileError, expected_training, install_shipped, shipped_run, shipping_presets
from .study_inputs import study_data, study_data_dir
from .theta_record import SnapshotRecorder

__all__ = ["run_configs", "training_notice", "trained_runs"]

NOT_WRITABLE = "set CNET_RUNS_DIR (runs_dir in Settings) to a folder you can write to"


def run_configs(settings: Settings, progress: bool = False, verbose: bool = True,
                overrides: Optional[Mapping[str, Any]] = None, controls: bool = False) -> dict[str, TrainConfig]:
    """The session's preset's runs as they are trained here: the session's data folder (or the announced
    fake data, :func:`cnet_lib.images.runs.study_inputs.study_data_dir`), device, CUDA graphs and threads, each
    run's folder under its runs folder, resumable, with ``overrides`` (they change the run's hash); with
    ``controls`` the preset's control runs too (:data:`cnet_lib.images.runs.image_presets.CONTROLS`)."""
    base = image_runs(settings.preset, controls=controls)
    first = next(iter(base.values()))
    data_root = study_data_dir(settings, first.dataset, verbose=verbose)
    execution = dict(data_dir=str(data_root), device=str(settings.device), resume=True, progress=progress,
                     cuda_graphs=settings.cuda_graphs, threads=settings.threads)
    out = {}
    for run, cfg in base.items():
        cfg = dataclasses.replace(cfg, **{**execution, **dict(overrides or {})})
        out[run] = dataclasses.replace(cfg, out_dir=str(run_dir(cfg, settings.runs_dir)))
    return out


def _writable_copy_dir(copy: Path, label: str) -> Path:
    """``copy`` when its runs folder can be written, else the same name in this user's private
    temporary folder (said in one sentence): the shipped package's own folder is never written."""
    try:
        with folder_lock(copy, f"checking the shipped {label}"):
            check_writable(copy)
        return copy
    except FolderNotWritable:
        fallback = private_temp_dir() / copy.name
        print(f"{label}: the runs folder {shown_path(copy.parent)} cannot be written, so the shipped model is copied "
              f"to {shown_path(fallback.parent)}, which the system may clear; set CNET_RUNS_DIR to a folder you can write to keep "
              "what is computed from it.")
        return fallback


def _shipped_run(run: str, cfg: TrainConfig, settings: Settings, t0: float, verbose: bool) -> StudyRun:
    """The model shipped with the book for ``cfg``: verified, copied (once) into
    :func:`cnet_lib.images.runs.image_presets.shipped_copy_dir` under its lock (into this user's private
    temporary folder when the runs root cannot be written), and loaded from there."""
    label = run_label(run)
    folder = _writable_copy_dir(shipped_copy_dir(cfg, settings.runs_dir), label)
    with folder_lock(folder, f"installing the shipped {label}"):
        install_shipped(folder, cfg, label, verbose)
        loaded = load_finished(run, dataclasses.replace(cfg, out_dir=str(folder)), folder, settings, t0, False, True,
                               shipped=True)
    if loaded is None:
        raise ShippedFileError(f"the shipped model in {folder} is not a finished run of the {cfg.preset} preset's "
                               f"{run!r}: {REINSTALL}")
    loaded.config = cfg
    return loaded


def _train_own(run: str, cfg: TrainConfig, settings: Settings, t0: float, verbose: bool, data_box: list) -> StudyRun:
    """The reader's own run of ``cfg``, loaded when finished, else trained (or resumed) in its
    folder, under the folder's lock for the whole time (a second process waits, then loads it)."""
    folder = Path(cfg.out_dir)
    label = run_label(run)
    with folder_lock(folder, f"training {label}", required=False) as locked:
        if locked:
            set_aside_damaged_checkpoint(folder, label)
        loaded = load_finished(run, cfg, folder, settings, t0, verbose, locked) if folder.is_dir() else None
        if loaded is not None:
            return loaded
        if not locked:
            raise FolderNotWritable(errno.EACCES, f"{label} must be trained, but the runs folder {folder.parent} "
                                                  f"cannot be written: {NOT_WRITABLE}")
        set_aside_other_config(folder, cfg, label)
        check_creatable(folder, NOT_WRITABLE)  # made only once the data is read: data that fails leaves no folder
        if data_box[0] is None:
            data_box[0] = study_data(cfg, settings)
        data = data_box[0]
        check_writable(folder, NOT_WRITABLE)
        if verbose:
            print(f"{label}: training {cfg.epochs} epochs on {len(data.train_y)} images "
                  f"({cfg.scheme}, N_t = M: {cfg.n_steps or cfg.n_basis} -> {cfg.final_n_steps()}), into the runs folder")
        rec = SnapshotRecorder(folder, cfg, verbose, label)
        try:
            result = train(cfg, data=data, on_epoch=rec)
        except KeyboardInterrupt:
            print(f"{label}: {interrupted_message(folder, how='run this cell again')}")
            raise
        except CheckpointSaveError as err:  # the chapter's advice, not the command line's
            raise err.advised("set CNET_RUNS_DIR to a folder", "run this cell again: the training continues from its "
                              "last saved epoch") from None
        digest = file_digest(folder / CHECKPOINT)
    return StudyRun(run, cfg, result.model, list(result.history), folder, rec.snaps, True, time.perf_counter() - t0,
                    digest, settings=settings)


def training_notice(cfgs: Mapping[str, TrainConfig], use_shipped: bool) -> None:
    """Before any training: which runs will be trained, how long that takes, and, when the preset
    ships no trained models, which preset does (loading instead of training)."""
    to_train = [run for run, cfg in cfgs.items()
                if not is_finished(Path(cfg.out_dir), cfg) and not (use_shipped and shipped_run(cfg) is not None)]
    if not to_train:
        return
    first = next(iter(cfgs.values()))
    main = set(image_runs(first.preset))
    how_long = (f"training takes {expected_training(first.preset)}" if set(to_train) <= main else
                "the control runs' training time is on the page Measurements (the models that ship)")
    print(f"{', '.join(run_label(r) for r in to_train)}: not trained yet for the '{first.preset}' preset; {how_long}, "
          "once: later chapters and runs reload the models from the runs folder.")
    preset = first.preset
    shipping = [p for p in shipping_presets() if p != preset]
    if shipping and preset != "smoke":
        print(f"   Trained models ship with the book for the {' and '.join(repr(p) for p in shipping)} preset: set "
              f"%env CNET_PRESET={shipping[0]} before the setup cell to load them instead of training.")


def _check_run_names(runs, preset: str, known: Sequence[str]) -> list[str]:
    """``runs`` as a list of the preset's run names (a single name may be given as a string)."""
    names = [runs] if isinstance(runs, str) else list(runs)
    if not names:
        raise ValueError(f"runs names no run; give some of {', '.join(known)} (or runs=None for all)")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown run {unknown[0]!r}: the {preset} preset's runs are {', '.join(known)} "
                         f"(e.g. runs=[{known[0]!r}])")
    return names


def trained_runs(settings: Settings, *, runs: Optional[Sequence[str]] = None, progress: bool = False,
                 verbose: bool = True, use_shipped: bool = True, **overrides) -> dict[str, StudyRun]:
    """The session's preset's image runs, trained once and afterwards reloaded: ``{run name: StudyRun}``.

    ``settings`` (``ctx.settings`` in a chapter) gives the preset, the runs folder, the data folder and
    its mirror, the device, CUDA graphs and CPU threads; ``runs`` (names of the preset's runs, its control
    runs included, :data:`cnet_lib.images.runs.image_presets.CONTROLS`; an unknown one is refused) defaults
    to its two main runs.  A finished run is loaded from its checkpoint without
    touching the data; an interrupted one resumes from its last epoch.  ``overrides`` are applied to
    every run's :class:`cnet_lib.images.training.train_config.TrainConfig` (they change its hash).

    With ``use_shipped`` (the default), a run the book ships a trained model for
    (:func:`cnet_lib.images.runs.shipped.shipped_run`) is loaded from its verified copy unless the reader has
    finished that run themselves; a reader's unfinished run is kept as it is (a sentence says how to
    continue it).  ``use_shipped=False`` loads or trains the reader's own run.  Every run folder is
    locked while it is used (a second process waits, then loads the result).
    """
    if not isinstance(settings, Settings):
        raise TypeError(f"settings must be the session's Settings (ctx.settings in a chapter, "
                        f"Settings.from_environment() in a script), got {settings!r:.60}")
    known = list(image_runs(settings.preset, controls=True))
    names = None if runs is None else _check_run_names(runs, settings.preset, known)
    cfgs = run_configs(settings, progress, verbose, overrides, controls=names is not None)
    if names is not None:
        cfgs = {k: v for k, v in cfgs.items() if k in names}
    if verbose:
        training_notice(cfgs, use_shipped)
    out: dict[str, StudyRun] = {}
    data_box: list = [None]  # the data, loaded once for every run that trains
    for run, cfg in cfgs.items():
        t0 = time.perf_counter()
        if use_shipped and shipped_run(cfg) is not None:
            out[run] = own_finished(run, cfg, settings, t0, verbose) or _shipped_run(run, cfg, settings, t0, verbose)
        else:
            out[run] = _train_own(run, cfg, settings, t0, verbose, data_box)
    return out
