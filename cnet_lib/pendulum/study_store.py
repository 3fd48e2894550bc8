"""The trained ODE-Nets of a pendulum study on disk: one file per study, keyed on the whole frozen config.

A study (:func:`cnet_lib.pendulum.study_configs`: the ODE-Nets of the training schemes, and the coarse-Δt_data
controls) is saved as one checkpoint (:func:`cnet_lib.runtime.checkpoint.save_checkpoint`: written atomically,
read with ``weights_only=True``) at ``<runs root>/pendulum/<preset>-<hash>.pt``, where ``<hash>`` is a short
hash of :func:`study_key`: every field of the :class:`~cnet_lib.pendulum.PendulumConfig` (``dataclasses.asdict``)
and the list of models, so a changed field never reuses a stale study.  The key is also stored in the file and
compared when it is read.  A file that is cut off, damaged, of another key or not a file (a link, a pipe) is set aside
(``<name>.damaged-<time>``, kept, never deleted), one sentence says so, and the study is trained again, as the
image study's caches are (:mod:`cnet_lib.runtime.json_cache`).

The ``gpu`` preset's study ships with the book, in the same format (``cnet_lib/shipped/pendulum/``), so that
its chapters on a machine without a GPU load it instead of training it for minutes on the CPU.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

import torch

from ..runtime.checkpoint import CheckpointError, CheckpointSaveError, load_checkpoint, save_checkpoint
from ..runtime.device import environment
from ..runtime.files import set_aside, shown_path, write_problem
from ..runtime.records import kind_of
from .odenet import ODENet, ODENetFit
from .pendulum_presets import PendulumConfig

__all__ = ["STORE_FORMAT", "SHIPPED_PENDULUM", "study_key", "study_hash", "store_path", "shipped_study_path",
           "save_study", "load_study", "read_study"]

PathLike = Union[str, os.PathLike]
STORE_FORMAT = 1
"""Raised when what the file holds changes: an older file then has another key and is trained again."""
SHIPPED_PENDULUM = Path(__file__).resolve().parents[1] / "shipped" / "pendulum"
"""Where the studies that ship with the book are (package data)."""


def study_key(cfg: PendulumConfig, models: Sequence[tuple]) -> dict:
    """What a study's trained ODE-Nets depend on: the store's format, every field of ``cfg`` and ``models``,
    ``(scheme, Δt_data, n_iters)`` of each ODE-Net in order; as JSON gives it back (tuples become lists)."""
    key = {"study": "pendulum ODE-Nets", "format": STORE_FORMAT, "config": dataclasses.asdict(cfg),
           "models": [list(m) for m in models]}
    return json.loads(json.dumps(key, sort_keys=True))


def study_hash(key: dict, n: int = 12) -> str:
    """The first ``n`` hex digits of the SHA-256 of ``key`` as sorted JSON."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:n]


def store_path(cfg: PendulumConfig, key: dict, runs_dir: PathLike) -> Path:
    """``<runs_dir>/pendulum/<preset>-<hash of the key>.pt``."""
    return Path(runs_dir).expanduser() / "pendulum" / f"{cfg.name}-{study_hash(key)}.pt"


def shipped_study_path(cfg: PendulumConfig, key: dict) -> Optional[Path]:
    """The study that ships with the book for this key, when there is one."""
    path = SHIPPED_PENDULUM / f"{cfg.name}-{study_hash(key)}.pt"
    return path if path.is_file() else None


def save_study(path: PathLike, key: dict, fits: Sequence[ODENetFit], say: Callable[[str], None] = print) -> bool:
    """Write the study ``fits`` (in the order of ``key["models"]``, with the machine they were trained on) to
    ``path`` atomically; True when written.
    A folder that refuses (read-only, full disk) is said in one sentence and the models are kept for this
    session only."""
    state = {f"{i}.{name}": t.detach().cpu() for i, fit in enumerate(fits) for name, t in fit.model.state_dict().items()}
    records = [dict(scheme=f.scheme, dt_data=f.dt_data, lr=f.lr, seed=f.seed, backend=f.backend,
                    losses=torch.tensor(f.losses, dtype=torch.float64), seconds=f.seconds, trained_with=f.trained_with,
                    optimizer_state=f.optimizer_state, device=f.device) for f in fits]
    extra = {"fits": records, "trained_on": environment(fits[0].device), "date": time.strftime("%Y-%m-%d")}
    try:
        save_checkpoint(path, state, key, extra)
        return True
    except CheckpointSaveError as err:
        say(f"the trained ODE-Nets could not be saved in {path} ({write_problem(err)}): they are used for this session "
            "only; to keep them, set CNET_RUNS_DIR to a folder you can write to (or free some space).")
        return False


def read_study(path: PathLike, key: dict) -> tuple:
    """``(fits, provenance)`` of the study at ``path`` (its key must be ``key``); raises
    :class:`cnet_lib.runtime.checkpoint.CheckpointError` for a damaged or foreign file.  ``provenance``:
    ``trained_on`` (the machine, :func:`cnet_lib.runtime.device.environment`), ``date`` and ``seconds``."""
    ck = load_checkpoint(path, expected_config=key)
    try:
        fits = []
        for i, (record, (scheme, dt_data, n_iters)) in enumerate(zip(ck["extra"]["fits"], key["models"], strict=True)):
            hidden = ck["model"][f"{i}.inner.weight"].shape[0]
            with torch.random.fork_rng(devices=[]):  # building a module draws weights: leave the global state alone
                model = ODENet(hidden).double()
            model.load_state_dict({k.split(".", 1)[1]: v for k, v in ck["model"].items() if k.split(".", 1)[0] == str(i)})
            losses = record["losses"].tolist()
            if record["scheme"] != scheme or len(losses) != n_iters:
                raise ValueError(f"model {i} is {record['scheme']} with {len(losses)} iterations, not {scheme} with {n_iters}")
            fits.append(ODENetFit(model=model.eval(), scheme=scheme, dt_data=float(dt_data), lr=record["lr"],
                                  seed=record["seed"], backend=record["backend"], losses=losses, seconds=record["seconds"],
                                  optimizer_state=record["optimizer_state"], trained_with=record["trained_with"],
                                  device=record["device"]))
    except (KeyError, ValueError, TypeError, AttributeError, RuntimeError) as err:
        raise CheckpointError(f"{path} is not a whole pendulum study ({type(err).__name__}: {str(err)[:120]})") from None
    seconds = max((f.seconds for f in fits), default=0.0)
    return fits, {"trained_on": ck["extra"].get("trained_on", {}), "date": ck["extra"].get("date", "?"), "seconds": seconds}


def load_study(path: PathLike, key: dict, what: str, say: Callable[[str], None] = print) -> Optional[tuple]:
    """:func:`read_study`, or ``None`` when there is no file; a damaged file or one of another key is set aside
    (kept as ``<name>.damaged-<time>``) with one sentence through ``say`` naming ``what``, and ``None`` is
    returned so that the caller trains the study again."""
    path = Path(path)
    if not os.path.lexists(path):
        return None
    try:
        if path.is_symlink() or not path.is_file():  # planted in a shared runs folder: never read through
            raise CheckpointError(f"{path} is {kind_of(os.lstat(path).st_mode)}, not a study file")
        return read_study(path, key)
    except CheckpointError as err:
        problem = str(err)
    try:
        where = f"it was moved to {set_aside(path).name} (kept) and is trained again"
    except OSError as err:
        where = f"it cannot be moved aside ({write_problem(err)}), so it is trained again for this session only"
    say(f"{what}: {shown_path(path)} cannot be used ({problem[:200]}); {where}.")
    return None
