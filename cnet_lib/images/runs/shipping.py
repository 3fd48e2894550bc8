"""Shipped folders written: a preset's trained runs, their studies and a manifest, in ``cnet_lib/shipped/<preset>-<run>/``
(what ``python -m cnet_lib ship`` writes; :mod:`cnet_lib.images.runs.shipped` reads them).

The ship command studies the runs (:func:`cnet_lib.cli.ship.ship_studied`) and writes their folders with
:func:`write_shipped`: every file a chapter reads, checked first (the library's readers: no
link followed, never blocking, bounded; a damaged file is one sentence, :class:`ShipError`), and a ``manifest.json``
with the command, the run's identity hash, the machine, the training time, the accuracies, the data, how the
checkpoint stores its weights and the SHA-256 of every file.  All folders or none are replaced.

Also here: a finished run as it ships, its weights alone in half precision and what the book says of it computed
from them (:func:`shipping_copy`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import stat
import time
from pathlib import Path
from typing import Mapping, Optional, Sequence

import torch

from ...runtime.checkpoint import atomic_write_text, file_digest, load_checkpoint, rounded_weights, save_checkpoint
from ...runtime.device import environment, precision_for
from ...runtime.files import folder_lock
from ...runtime.records import DamagedRecord, kind_of, load_json, open_regular
from ...runtime import cuda_graphs
from ..training.evaluation import Evaluator
from ..training.train_state import CHECKPOINT, RESULTS, SHIPPED_EXTRA, load_model, results_problem, results_record
from .image_presets import identity_hash
from .run_loading import StudyRun, load_finished
from .shipped import MANIFEST, SEEDS_FILE
from .study_inputs import study_data
from .theta_record import SNAPSHOTS

__all__ = ["ShipError", "copy_run_file", "study_seconds", "write_shipped", "ship_run", "SOURCE", "copy_dir",
           "shipping_copy", "shipping_copies"]


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
    """``folder/results.json`` as the library reads it (:func:`cnet_lib.images.training.train_state.results_problem`:
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


# A finished run as it ships: its weights alone, stored in half precision, and everything the book says of it
# computed from those weights (issue 45).
#
# A 64-128-256 ContinuousNet's training checkpoint (float32 weights and SGD momentum) is about 59 MB; its weights in
# float16 are about 15 MB, under the 16 MiB a file may have to come back from the GPU machine, and a quarter of what a
# Colab reader would download.  :func:`shipping_copies` writes, beside each run folder, the folder
# ``<run folder>-<weights>`` holding the run's weights-only checkpoint stored as ``weights`` (the model and
# :data:`cnet_lib.images.training.train_state.SHIPPED_EXTRA`), its θ snapshots, and its ``results.json`` written from
# that checkpoint; and loads the run from there.  Every study computed from such a :class:`StudyRun` (sweeps,
# robustness, adaptive steps) is keyed by the copy's SHA-256 and so describes the weights exactly as they ship.
#
# Rounding changes a few predictions (float16: none or one in 1,000 held-out images of the shipped 16-32-64 and
# 8-16-32 models; bfloat16 up to ten; ``benchmarks/results/gpu_shipping.json`` in the git history), so the copy's last epoch is evaluated
# again, the way training evaluated it (the same precision, graphs and test images): its ``test_acc`` is the accuracy
# of the weights as they ship, and ``test_acc_trained`` keeps the one training measured.  So the one number a chapter
# quotes for a model, its final accuracy, is its sweep's own-graph accuracy too.

SOURCE = "source.json"
"""In a copy's folder: the SHA-256 of the training checkpoint it was made from and how it stores its weights (a copy
made from another checkpoint, or stored otherwise, is made again).  It does not ship."""


def copy_dir(run: StudyRun, weights: str) -> Path:
    """The folder of ``run``'s copy stored as ``weights``: ``<run folder>-<weights>``, beside the run folder."""
    return run.out_dir.with_name(f"{run.out_dir.name}-{weights}")


def _made_from(folder: Path, digest: str, weights: str) -> bool:
    try:
        source = json.loads((folder / SOURCE).read_text())
    except (OSError, ValueError):
        return False
    return (isinstance(source, dict) and source.get("checkpoint_sha256") == digest and source.get("weights") == weights
            and (folder / CHECKPOINT).is_file() and source.get("copy_sha256") == file_digest(folder / CHECKPOINT))


def _write_copy(run: StudyRun, folder: Path, weights: str, digest: str) -> None:
    """The copy's files: the rounded weights with the last epoch evaluated again, the results file, the θ
    snapshots, and :data:`SOURCE`."""
    cfg = run.config
    ck = load_checkpoint(run.checkpoint, map_location="cpu")
    device = run.settings.device
    folder.mkdir(parents=True, exist_ok=True)
    # the rounded model, evaluated as training evaluated its last epoch
    model, _ = load_model(run.checkpoint, device)
    model.load_state_dict({k: v.float() if torch.is_tensor(v) and v.is_floating_point() else v
                           for k, v in rounded_weights(model.state_dict(), weights).items()})
    data = study_data(cfg, run.settings, device, with_train=False)
    graph_cls = cuda_graphs.graph_class(device, cfg.cuda_graphs)
    evaluator = Evaluator(precision_for(device, cfg.amp, graphs=graph_cls is not None), graph_cls)
    acc, _ = evaluator(model, data.test_x, data.test_y, data.mean, data.std, cfg.eval_batch_size)
    history = [dict(h) for h in ck["extra"]["history"]]
    history[-1].update(test_acc=acc, test_acc_trained=ck["extra"]["history"][-1]["test_acc"], weights=weights)
    extra = {**{k: ck["extra"][k] for k in SHIPPED_EXTRA}, "history": history}
    save_checkpoint(folder / CHECKPOINT, ck["model"], ck["config"], extra, weights=weights)
    env = extra.get("environment") or {}
    atomic_write_text(folder / RESULTS, json.dumps(results_record(cfg, history, env, extra.get("started_utc") or "",
                                                                  folder / CHECKPOINT), indent=1))
    if (run.out_dir / SNAPSHOTS).is_file():
        shutil.copyfile(run.out_dir / SNAPSHOTS, folder / SNAPSHOTS)
    atomic_write_text(folder / SOURCE, json.dumps({"checkpoint_sha256": digest, "weights": weights,
                                                   "copy_sha256": file_digest(folder / CHECKPOINT),
                                                   "test_acc_trained": history[-1]["test_acc_trained"],
                                                   "test_acc": acc}))


def shipping_copy(run: StudyRun, weights: str = "float16") -> StudyRun:
    """``run`` (a finished run of the reader's own, loaded from its folder) as it ships, loaded from its copy
    (module doc); the copy is made once per training checkpoint and ``weights``, under its folder's lock."""
    if run.shipped:
        raise ValueError(f"{run.name} is a model shipped with the book: copy the run you trained "
                         "(trained_runs(..., use_shipped=False))")
    folder = copy_dir(run, weights)
    t0 = time.perf_counter()
    digest = file_digest(run.checkpoint)
    with folder_lock(folder, f"storing {run.label} as {weights}"):
        if not _made_from(folder, digest, weights):
            _write_copy(run, folder, weights, digest)
        cfg = dataclasses.replace(run.config, out_dir=str(folder))
        loaded = load_finished(run.name, cfg, folder, run.settings, t0, False, True)
    if loaded is None:
        raise RuntimeError(f"the copy of {run.name} in {folder} did not load as a finished run of its configuration")
    return loaded


def shipping_copies(runs: Mapping[str, StudyRun], weights: str = "float16") -> dict[str, StudyRun]:
    """Every run of ``runs`` as it ships (:func:`shipping_copy`), in the same order."""
    return {name: shipping_copy(run, weights) for name, run in runs.items()}
