"""Where the image study's trained runs live, and the hashes that name them.

A run lives in ``<runs root>/<preset>-<run>-<hash>/`` (the runs root: a session's ``runs_dir``
setting, ``CNET_RUNS_DIR``, default ``~/.cache/cnet_lib/runs``), where ``<hash>`` is a short hash of
the run's identity (:meth:`TrainConfig.identity`, the number of epochs and the data folder), so a
changed preset never picks up a stale checkpoint.  A model shipped with the book is copied beside it,
into ``<preset>-<run>-<hash>-shipped/`` (:func:`shipped_copy_dir`).
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Union

from ...runtime.checkpoint import CheckpointError, load_checkpoint
from ..data.datasets import resolve_data_dir
from ..training.results_file import read_results
from ..training.train_config import TrainConfig
from ..training.train_state import CHECKPOINT

__all__ = ["short_hash", "identity_hash", "run_hash", "run_dir", "shipped_copy_dir", "is_finished"]

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
    ``results.json`` is not whole (:func:`cnet_lib.images.training.results_file.read_results`), the epochs
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
