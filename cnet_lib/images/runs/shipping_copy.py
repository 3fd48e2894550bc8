"""A finished run as it ships: its weights alone, stored in half precision, and everything the book says of it
computed from those weights (issue 45).

A 64-128-256 ContinuousNet's training checkpoint (float32 weights and SGD momentum) is about 59 MB; its weights in
float16 are about 15 MB, under the 16 MiB a file may have to come back from the GPU machine, and a quarter of what a
Colab reader would download.  :func:`shipping_copies` writes, beside each run folder, the folder
``<run folder>-<weights>`` holding the run's weights-only checkpoint stored as ``weights`` (the model and
:data:`cnet_lib.images.training.train_state.SHIPPED_EXTRA`), its θ snapshots, and its ``results.json`` written from
that checkpoint; and loads the run from there.  Every study computed from such a :class:`StudyRun` (sweeps,
robustness, adaptive steps) is keyed by the copy's SHA-256 and so describes the weights exactly as they ship.

Rounding changes a few predictions (float16: none or one in 1,000 held-out images of the shipped 16-32-64 and
8-16-32 models; bfloat16 up to ten; ``benchmarks/results/gpu_shipping.json`` in the git history), so the copy's last epoch is evaluated
again, the way training evaluated it (the same precision, graphs and test images): its ``test_acc`` is the accuracy
of the weights as they ship, and ``test_acc_trained`` keeps the one training measured.  So the one number a chapter
quotes for a model, its final accuracy, is its sweep's own-graph accuracy too.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import Mapping

import torch

from ...runtime import cuda_graphs
from ...runtime.checkpoint import atomic_write_text, file_digest, load_checkpoint, rounded_weights, save_checkpoint
from ...runtime.device import precision_for
from ...runtime.locks import folder_lock
from ..training.evaluation import Evaluator
from ..training.results_file import RESULTS, results_record
from ..training.train_state import CHECKPOINT, SHIPPED_EXTRA, load_model
from .run_loading import load_finished
from .study_inputs import study_data
from .study_run import StudyRun
from .theta_record import SNAPSHOTS

__all__ = ["SOURCE", "copy_dir", "shipping_copy", "shipping_copies"]

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
