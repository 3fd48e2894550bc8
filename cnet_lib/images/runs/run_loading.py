"""Loading a finished run from its folder, and what a folder holds when it is not one.

A cached run whose checkpoint cannot be read (truncated, damaged, foreign) or was written for another
configuration is not lost and does not stop a chapter: the file is set aside
(:func:`set_aside_damaged_checkpoint`, :func:`set_aside_other_config`), and a ``results.json`` that is not
whole is written again from the checkpoint.  A reader's own unfinished run is left as it is, with a
sentence saying how to continue it (:func:`own_finished`).

Also here: one trained run as the chapters use it, and the device its studies run on (:class:`StudyRun`,
:func:`study_device`).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

import torch

from ...core.models import ContinuousNet
from ...runtime.checkpoint import CheckpointError, config_diff, describe_checkpoint_file, file_digest, load_checkpoint
from ...runtime.device import DeviceLike, resolve_device
from ...runtime.files import folder_lock, set_aside, shown_path
from ...runtime.rich_text import run_label
from ...runtime.settings import Settings
from ..training.train_config import TrainConfig, build_model
from ..training.train_state import CHECKPOINT, RESULTS, load_model, read_results, restore_results
from .image_presets import is_finished
from .shipped import plain_description, read_manifest, shipped_run
from .theta_record import SNAPSHOTS, rebuilt_snapshots

__all__ = ["set_aside_damaged_checkpoint", "set_aside_other_config", "epochs_saved", "load_finished", "own_finished",
           "trained_arithmetic", "as_trained_note", "StudyRun", "study_device", "training_time", "provenance"]


# One trained run of the image study as the chapters use it: :class:`StudyRun` (its model, history, θ
# snapshots, folder and the settings it was loaded with), the device its studies run on, and how long it trained.

@dataclass
class StudyRun:
    """One trained run: ``model`` (eval mode, trained manifestation), ``history`` (one dict per
    epoch, see :func:`cnet_lib.images.training.train_loop.train`), ``snapshots`` (θ̂ after every epoch), and the
    session's ``settings`` it was loaded with (the studies of the run read its data through them)."""

    name: str
    config: TrainConfig
    model: ContinuousNet
    history: list
    out_dir: Path
    snapshots: list = field(default_factory=list)
    trained_now: bool = False
    seconds: float = 0.0  # wall time of this call (training, or just loading)
    checkpoint_sha256: str = ""  # of the checkpoint file the model was loaded from, or just written
    shipped: bool = False  # the model shipped with the book (out_dir is its copy)
    settings: Settings = field(default_factory=Settings)

    @property
    def label(self) -> str:
        """The run's name in the book's words (:func:`cnet_lib.runtime.rich_text.run_label`)."""
        return run_label(self.name)

    @property
    def checkpoint(self) -> Path:
        """The checkpoint file the model came from."""
        return self.out_dir / CHECKPOINT

    @property
    def checkpoint_digest(self) -> str:
        """The SHA-256 of the checkpoint this model came from: recorded when it was loaded or
        trained (under the run folder's lock), else read from the file now."""
        return self.checkpoint_sha256 or file_digest(self.checkpoint)

    @property
    def final_accuracy(self) -> float:
        """The test accuracy after the last epoch."""
        return self.history[-1]["test_acc"]

    def initial_model(self) -> ContinuousNet:
        """The model as training started (same seed, untrained)."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.config.seed)
            return build_model(self.config).eval()


def study_device(run: StudyRun, device: DeviceLike = None) -> torch.device:
    """The device a study of ``run`` (the first run of a study of several) runs on: ``device`` when given, else
    the session's, decided once (:attr:`cnet_lib.runtime.settings.Settings.device`, which the run was loaded
    with and onto)."""
    return resolve_device(device) if device is not None else run.settings.device


def trained_arithmetic(run: StudyRun) -> str:
    """The arithmetic of the evaluation that gave the run its accuracy on its own graph (its training's last epoch, which
    the sweeps reproduce): ``"bf16 autocast"`` on a CUDA device with the run's ``amp``, else ``"float32"``."""
    device = str(training_time(run).get("device") or "")
    return "bf16 autocast" if device.startswith("cuda") and run.config.amp else "float32"


def as_trained_note(figures: Mapping[str, float], runs: Optional[Mapping[str, Any]], how: str) -> str:
    """Why a study shows other accuracies of the same models than the one each has everywhere else (its accuracy on
    its own graph as trained, :attr:`StudyRun.final_accuracy`): ``figures`` the study's ({label: %}), ``how`` what
    the study did differently (its images, its arithmetic).  ``""`` when every figure rounds to the trained one (to
    one decimal) or no ``runs`` are given; labels that are no run (another graph of a model) are left out."""
    if not runs:
        return ""
    pairs = [(label, f, 100 * runs[label].final_accuracy) for label, f in figures.items() if label in runs]
    if not pairs or all(f"{f:.1f}" == f"{t:.1f}" for _, f, t in pairs):
        return ""
    arith = {trained_arithmetic(runs[label]) for label, _, _ in pairs}
    trained = " and ".join(f"{t:.1f}%" for _, _, t in pairs)
    return f"as trained: {trained} ({' or '.join(sorted(arith))}, on all the held-out images); here {how}"


def training_time(run: StudyRun) -> dict:
    """How long a run trained and where: ``{"epochs", "train_seconds"`` (the sum over its history,
    evaluation excluded), ``"device", "device_name", "cpu_count"`` (from the run's results file, which a shipped
    model brings along; ``None`` when it has none)``}``."""
    env = (read_results(run.out_dir) or {}).get("environment")
    env = env if isinstance(env, dict) else {}
    return {"epochs": len(run.history), "train_seconds": sum(h["train_seconds"] for h in run.history),
            "device": env.get("device"), "device_name": env.get("device_name"), "cpu_count": env.get("cpu_count")}


def provenance(run: StudyRun) -> dict:
    """Where and on what ``run`` was trained, for a chapter's margin: :func:`training_time` with ``"environment"``
    (its results file's, ``{}`` without one), ``"seed"`` (its training seed), ``"shipped"`` and ``"data"`` (a shipped
    model's data as its manifest describes it, in a reader's words; ``None`` for a run trained in this session, whose
    data are the session's)."""
    env = (read_results(run.out_dir) or {}).get("environment")
    data = None
    folder = shipped_run(run.config) if run.shipped else None
    if folder is not None:
        data = plain_description(read_manifest(folder).get("data", {}).get("description", "")) or None
    return {**training_time(run), "environment": env if isinstance(env, dict) else {}, "seed": run.config.seed,
            "shipped": bool(run.shipped), "data": data}


# ---------------------------------------------------------------------- the module's own part (its docstring above)

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
