"""One trained run of the image study as the chapters use it: :class:`StudyRun` (its model, history, θ
snapshots, folder and the settings it was loaded with), the device its studies run on, and how long it trained."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

import torch

from ...core.models import ContinuousNet
from ...runtime.checkpoint import file_digest
from ...runtime.device import DeviceLike, resolve_device
from ...runtime.settings import Settings
from ...runtime.vocabulary import run_label
from ..training.train_config import TrainConfig, build_model
from ..training.results_file import read_results
from ..training.train_state import CHECKPOINT
from .shipped import plain_description, read_manifest, shipped_run

__all__ = ["trained_arithmetic", "as_trained_note", "StudyRun", "study_device", "training_time", "provenance"]


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
        """The run's name in the book's words (:func:`cnet_lib.runtime.vocabulary.run_label`)."""
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
