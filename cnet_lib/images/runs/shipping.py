"""Shipped folders written: a preset's trained runs, their studies and a manifest, in ``cnet_lib/shipped/<preset>-<run>/``
(what ``python -m cnet_lib ship`` writes; :mod:`cnet_lib.images.runs.shipped` reads them).

The ship command studies the runs (:func:`cnet_lib.cli.ship.ship_studied`) and writes their folders with
:func:`write_shipped`: every file a chapter reads, checked first (the library's readers: no
link followed, never blocking, bounded; a damaged file is one sentence, :class:`ShipError`), and a ``manifest.json``
with the command, the run's identity hash, the machine, the training time, the accuracies, the data, how the
checkpoint stores its weights and the SHA-256 of every file.  All folders or none are replaced.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Optional, Sequence


from .run_folders import identity_hash
from .shipped import MANIFEST, SEEDS_FILE
from .study_run import StudyRun
from .theta_record import SNAPSHOTS
from ..training.results_file import results_problem
from ..training.train_state import CHECKPOINT, RESULTS
from ...runtime.checkpoint import atomic_write_text, file_digest
from ...runtime.device import environment
from ...runtime.records import DamagedRecord, kind_of, load_json, open_regular

__all__ = ["ShipError", "copy_run_file", "study_seconds", "write_shipped", "ship_run"]


class ShipError(ValueError):
    """A run file that shipping reads or copies cannot be used; the message names it and says what to do."""


_THEN = {CHECKPOINT: "the run is trained again", RESULTS: "it is written again from the run's checkpoint",
         SNAPSHOTS: "it is rebuilt from the run's checkpoint (its first and last epochs)",
         SEEDS_FILE: "the other seeds' numbers ship once it is written again (scripts/seeds_file.py)"}
"""What running ``ship`` again does about a file that is not there; any other file is a study, computed again."""
_MISSING = "it is missing"


def _unusable(path: Path, problem: str) -> ShipError:
    """The one sentence for a run file that cannot be shipped: which, why, and what to do."""
    then = _THEN.get(path.name, "the study is computed again")
    todo = "run the same command again"
    if problem != _MISSING:
        todo = f"delete it (or move it aside) and {todo}"
    return ShipError(f"{path} cannot be shipped: {problem}; {todo}: {then}")


def _run_results(folder: Path) -> dict:
    """``folder/results.json`` as the library reads it (:func:`cnet_lib.images.training.results_file.results_problem`:
    no link followed, never blocking, bounded), with the fields a manifest takes from it checked too."""
    record, problem = results_problem(folder)
    if record is None:
        raise _unusable(folder / RESULTS, problem or _MISSING)
    env, seconds = record.get("environment"), record.get("train_seconds_total")
    if not isinstance(env, dict) or isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise _unusable(folder / RESULTS, "its environment or train_seconds_total is not what training writes")
    return record


def _sources(folder: Path, names: Sequence[str]) -> list[Path]:
    """The files of ``names`` that ``folder`` holds, each a plain file (a link, a pipe or a folder in the place of
    one raises :class:`ShipError`: nothing is shipped through it)."""
    found = []
    for name in names:
        try:
            mode = os.lstat(folder / name).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            raise _unusable(folder / name, f"it is {kind_of(mode)}, not a file (nothing was read through it)")
        found.append(folder / name)
    return found


@contextlib.contextmanager
def _reading(path: Path):
    """Opening or reading ``path`` inside: a damaged file (:class:`DamagedRecord`) or one that cannot be read
    becomes one sentence naming it (:class:`ShipError`)."""
    try:
        yield
    except DamagedRecord as err:
        raise _unusable(path, str(err)) from None
    except OSError as err:
        missing = isinstance(err, FileNotFoundError)
        raise _unusable(path, _MISSING if missing else f"it cannot be read ({err.strerror or err})") from None


def copy_run_file(src: Path, dst: Path) -> None:
    """Copy the plain file ``src`` to ``dst``, opened without following a link or blocking."""
    with _reading(src):
        fd = open_regular(src)
    with os.fdopen(fd, "rb") as f_src, open(dst, "wb") as f_dst:
        shutil.copyfileobj(f_src, f_dst, 1 << 20)


def study_seconds(path: Path) -> Optional[float]:
    """The computing time a study file records (``None`` when it records none), read as records are
    (:func:`cnet_lib.runtime.records.load_json`: no link followed, never blocking, bounded)."""
    with _reading(path):
        record = load_json(path)
    if not isinstance(record, dict):
        raise _unusable(path, f"it holds a JSON {type(record).__name__}, not a study")
    seconds = record.get("seconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))):
        raise _unusable(path, f"its seconds is {str(seconds)[:20]!r}, not a time")
    return None if seconds is None else float(seconds)


def _write_run(run: StudyRun, folder: Path, keep: Sequence[str], record: dict) -> None:
    """Write the new folder ``folder`` of ``run``: the files of ``keep`` the run folder holds, each checked first,
    and the manifest (``record`` with the run's own fields and every file's SHA-256)."""
    results = _run_results(run.out_dir)
    sources = _sources(run.out_dir, keep)
    folder.mkdir(parents=True)
    for src in sources:
        copy_run_file(src, folder / src.name)
    cfg = run.config
    manifest = {
        "preset": cfg.preset, "run": run.name, "identity_hash": identity_hash(cfg), "command": record["command"],
        "data": {"folder": Path(cfg.data_dir).name, "description": record["description"],
                 "n_train": cfg.n_train, "n_test": cfg.n_test},
        "machine": results["environment"] or environment(cfg.device or "cpu"),
        "train_seconds": results["train_seconds_total"],
        "threads_per_epoch": [h.get("torch_threads") for h in run.history],
        "final_test_acc": run.final_accuracy,
        "weights": record.get("weights", "float32"),
        **({"final_test_acc_trained": run.history[-1]["test_acc_trained"]} if "test_acc_trained" in run.history[-1]
           else {}),
        "history": [{k: h[k] for k in ("epoch", "n_steps", "train_loss", "test_acc", "train_seconds")}
                    for h in run.history],
        **{k: record[k] for k in ("sweeps_and_robustness_seconds", "wall_seconds_of_this_command", "created_utc")},
        "files": {f.name: file_digest(f) for f in sorted(folder.iterdir())},
    }
    atomic_write_text(folder / MANIFEST, json.dumps(manifest, indent=1))


def write_shipped(items: Sequence[tuple], record: dict) -> list[Path]:
    """Ship every ``(run, folder, keep)`` of ``items`` (:func:`_write_run`), all or none: each new folder is
    written beside its final place first (``.<name>.staging``), and only when every one is written are the shipped
    folders replaced by them.  A run file that cannot be shipped stops with one sentence and leaves every shipped
    folder as it was (the staged ones removed)."""
    staged = []
    try:
        for run, folder, keep in items:
            stage = folder.with_name(f".{folder.name}.staging")
            if stage.exists():  # left by an interrupted ship
                shutil.rmtree(stage)
            staged.append((stage, folder))
            _write_run(run, stage, keep, record)
    except BaseException:
        for stage, _ in staged:
            shutil.rmtree(stage, ignore_errors=True)
        raise
    for stage, folder in staged:
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(stage, folder)
    return [folder for _, folder in staged]


def ship_run(run: StudyRun, folder: Path, keep: Sequence[str], record: dict) -> Path:
    """Ship one run into ``folder`` (:func:`write_shipped`: checked before ``folder`` is replaced)."""
    return write_shipped([(run, folder, keep)], record)[0]
