"""Loading a finished run from its folder, and what a folder holds when it is not one.

A cached run whose checkpoint cannot be read (truncated, damaged, foreign) or was written for another
configuration is not lost and does not stop a chapter: the file is set aside
(:func:`set_aside_damaged_checkpoint`, :func:`set_aside_other_config`), and a ``results.json`` that is not
whole is written again from the checkpoint.  A reader's own unfinished run is left as it is, with a
sentence saying how to continue it (:func:`own_finished`).
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

from ...runtime.checkpoint import CheckpointError, config_diff, describe_checkpoint_file, file_digest, load_checkpoint
from ...runtime.files import set_aside, shown_path
from ...runtime.locks import folder_lock
from ...runtime.settings import Settings
from ...runtime.vocabulary import run_label
from ..training.results_file import RESULTS, restore_results
from ..training.train_config import TrainConfig
from ..training.train_state import CHECKPOINT, load_model
from .run_folders import is_finished
from .study_run import StudyRun
from .theta_record import SNAPSHOTS, rebuilt_snapshots

__all__ = ["set_aside_damaged_checkpoint", "set_aside_other_config", "epochs_saved", "load_finished", "own_finished"]


def set_aside_damaged_checkpoint(folder: Path, label: str, then: str = "this run is trained again") -> None:
    """A checkpoint in ``folder`` that cannot be read is renamed ``checkpoint.pt.damaged-<time>``, with
    one sentence saying so and what happens ``then`` (by default the run is trained again)."""
    ckpt = folder / CHECKPOINT
    problem = describe_checkpoint_file(ckpt) if ckpt.is_file() else None
    if problem:
        aside = set_aside(ckpt)
        print(f"{label}: {problem}; it was moved to {aside.name} and {then}.")


def set_aside_other_config(folder: Path, cfg: TrainConfig, label: str) -> None:
    """A checkpoint in ``folder`` written for another configuration than ``cfg`` (copied there, or left by an
    older version) is renamed ``checkpoint.pt.other-config-<time>`` (kept; its ``results.json`` and θ snapshots
    likewise), with one sentence saying so and that this run is trained in its place.  The caller holds the
    folder's lock."""
    ckpt = folder / CHECKPOINT
    if not ckpt.is_file():
        return
    try:
        diff = config_diff(load_checkpoint(ckpt, map_location="cpu")["config"], cfg.identity())
    except CheckpointError:
        return  # a damaged one is set_aside_damaged_checkpoint's
    if diff:
        fields = ", ".join(list(diff)[:4]) + (", ..." if len(diff) > 4 else "")
        aside = set_aside(ckpt, "other-config")
        for name in (RESULTS, SNAPSHOTS):  # they describe that run too
            if os.path.lexists(folder / name):
                set_aside(folder / name, "other-config")
        print(f"{label}: {shown_path(ckpt)} was written for another configuration (its {fields} differ); it was "
              f"moved to {aside.name} (kept, with its results) and this run is trained in its place.")


def epochs_saved(folder: Path) -> int:
    """The epochs a run folder's checkpoint holds (0 without a readable one)."""
    try:
        return int(load_checkpoint(folder / CHECKPOINT, map_location="cpu")["extra"]["epoch"])
    except (OSError, CheckpointError, KeyError, TypeError, ValueError):
        return 0


def load_finished(run: str, cfg: TrainConfig, folder: Path, settings: Settings, t0: float, verbose: bool,
                  writable: bool, shipped: bool = False) -> Optional[StudyRun]:
    """The finished run in ``folder`` (its lock held, or the folder unwritable) on the session's device,
    or ``None`` when the folder holds no finished run of ``cfg``.  The checkpoint's SHA-256 is recorded
    with it; θ snapshots that cannot be read are rebuilt from the checkpoint (the first and the last
    epoch, :func:`cnet_lib.images.runs.theta_record.rebuilt_snapshots`)."""
    label = run_label(run)
    if not is_finished(folder, cfg):
        return None
    digest = file_digest(folder / CHECKPOINT)
    model, ck = load_model(folder, settings.device)
    if config_diff(ck["config"], cfg.identity()):
        return None
    if writable:  # a damaged or stale results.json is written again from the checkpoint
        restore_results(folder, cfg, ck, folder / CHECKPOINT)
    history = list(ck["extra"]["history"])
    snaps = rebuilt_snapshots(folder, cfg, ck["model"], history, label, writable)
    out = StudyRun(run, cfg, model, history, folder, snaps, False, time.perf_counter() - t0, digest, shipped, settings)
    if verbose:
        print(f"{label}: loaded the trained model from the runs folder ({len(history)} epochs, held-out accuracy "
              f"{out.final_accuracy:.4f})")
    return out


def own_finished(run: str, cfg: TrainConfig, settings: Settings, t0: float, verbose: bool) -> Optional[StudyRun]:
    """The reader's own finished run of ``cfg`` (None when there is none).  The folder is locked
    only when it exists, and a damaged checkpoint is set aside; an unfinished run is left as it
    is, with a sentence saying it is kept and how to continue it."""
    folder = Path(cfg.out_dir)
    if not folder.is_dir():
        return None
    label = run_label(run)
    with folder_lock(folder, f"loading {label}", required=False) as locked:
        if locked:
            set_aside_damaged_checkpoint(folder, label, "the model shipped with the book is used instead")
        loaded = load_finished(run, cfg, folder, settings, t0, verbose, locked)
        if loaded is None and (folder / CHECKPOINT).is_file():
            done = epochs_saved(folder)
            print(f"{label}: your own training of this run is kept in {shown_path(folder)} (epoch {done} of {cfg.epochs} saved); "
                  "the model shipped with the book is used meanwhile. To continue yours, run "
                  "trained_runs(ctx.settings, use_shipped=False).")
    return loaded
