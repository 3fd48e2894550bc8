"""A training run on disk: its checkpoint and results file, written atomically after every epoch, and
resuming from them.

After each epoch ``out_dir/checkpoint.pt`` (model, optimizer, RNG states, history, config) and
``out_dir/results.json`` (the history) are written atomically.  ``resume=True`` continues from the
checkpoint — the model is rebuilt at the initial configuration and the refinements up to the saved
epoch are replayed before loading — and gives the same weights as an uninterrupted run; with a
finished checkpoint it just loads the model ("train once, reuse everywhere").

A finished run ships as its weights alone (:data:`SHIPPED_EXTRA`, no optimizer or random states; stored in
float16 or bfloat16 they are a quarter of the training checkpoint's bytes: :mod:`cnet_lib.images.runs.shipping_copy`):
such a checkpoint loads like any finished run but cannot be continued.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import torch

from ...core.models import ContinuousNet
from ...runtime.checkpoint import (CheckpointError, CheckpointMismatchError, atomic_write_text, load_checkpoint,
                                   save_checkpoint)
from ...runtime.checkpoint import load_model as load_saved_model
from ...runtime.device import resolve_device
from .results_file import RESULTS, read_results, restore_results, results_record, utc_now
from .train_config import TrainConfig, lr_scheduler

__all__ = ["CHECKPOINT", "RESULTS", "TrainResult", "RunState", "start_or_resume", "save_epoch", "results_record",
           "interrupted_message", "load_model", "utc_now", "SHIPPED_EXTRA"]

CHECKPOINT = "checkpoint.pt"
SHIPPED_EXTRA = ("epoch", "history", "model_config", "manifestation", "run_config", "environment", "started_utc")
"""What a weights-only copy keeps of a training checkpoint's ``extra``: everything a finished run is loaded and
described from, not the optimizer's or the random generators' state."""


def rng_state(gen: torch.Generator) -> dict:
    """The random states a resumed run continues from: torch's, CUDA's and the data generator's."""
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "data": gen.get_state(),
    }


def _set_rng_state(state: dict, gen: torch.Generator) -> None:
    # RNG states must be CPU ByteTensors, whatever map_location the checkpoint was read with
    torch.set_rng_state(state["torch"].cpu())
    if state.get("cuda") and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])
    gen.set_state(state["data"].cpu())


@dataclass
class TrainResult:
    """What :func:`cnet_lib.images.training.train_loop.train` returns: the model (eval mode), its history (one
    dict per epoch), the config, the checkpoint path (``None`` without ``out_dir``) and the results
    record."""

    model: ContinuousNet
    history: list[dict]
    config: TrainConfig
    checkpoint: Optional[Path]
    results: dict = field(default_factory=dict)

    @property
    def final_accuracy(self) -> Optional[float]:
        return self.history[-1]["test_acc"] if self.history else None


@dataclass
class RunState:
    """Where a run stands: the next epoch to train, the optimizer and its learning-rate schedule
    (positioned at that epoch), the history so far."""

    start: int
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    history: list
    started: str


def start_or_resume(cfg: TrainConfig, model: ContinuousNet, ckpt_path: Optional[Path], device: torch.device,
                    gen: torch.Generator, *, writes: bool = True) -> RunState:
    """A fresh optimizer at epoch 0, or the state of ``ckpt_path`` when resuming: the model is
    rebuilt at its initial configuration, the refinements before the saved epoch are replayed,
    then weights, optimizer and random generators are loaded.  A process that ``writes`` the run folder (one
    process, or rank 0 of several) also writes a damaged or stale ``results.json`` again
    (:func:`cnet_lib.images.training.results_file.restore_results`); the other ranks never touch it, so that one
    process alone sets it aside and rewrites it.  Whether to resume depends on the checkpoint alone, which every
    rank reads before rank 0 can write it again (after the first epoch, behind a collective)."""
    ck = None
    start = 0
    if cfg.resume and ckpt_path and ckpt_path.exists():
        try:
            ck = load_checkpoint(ckpt_path, expected_config=cfg.identity(), map_location=device)
        except CheckpointMismatchError as err:
            raise CheckpointMismatchError(
                f"{err}. To continue that run, run with the settings it was written for; to start this one, choose "
                "another out_dir (--out-dir), or move the checkpoint aside") from None
        if writes:  # a damaged or stale results.json is written again
            restore_results(ckpt_path.parent, cfg, ck, ckpt_path)
        start = int(ck["extra"]["epoch"])
        if "optimizer" not in ck["extra"] and start < cfg.epochs:
            raise CheckpointError(
                f"{ckpt_path} holds a run's weights alone (as the book ships a model: no optimizer or random states), "
                f"{start} of the {cfg.epochs} epochs asked for, so it cannot be continued: train in another out_dir "
                "(--out-dir), or load it as it is")
        for e in cfg.refine_at:  # rebuild the graph the checkpoint was saved from
            if e < start:
                model.refine()
        model.load_state_dict(ck["model"])
    # built after any replayed refinement: refine() replaces the coefficient Parameters
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay,
                                nesterov=cfg.nesterov)
    if ck is None:
        return RunState(start, optimizer, lr_scheduler(cfg, optimizer), [], utc_now())
    extra = ck["extra"]
    if "optimizer" not in extra:  # a finished weights-only copy: nothing is left to train
        return RunState(start, optimizer, lr_scheduler(cfg, optimizer, start), list(extra["history"]),
                        extra.get("started_utc", utc_now()))
    optimizer.load_state_dict(extra["optimizer"])
    _set_rng_state(extra["rng"], gen)
    return RunState(start, optimizer, lr_scheduler(cfg, optimizer, start), list(extra["history"]),
                    extra.get("started_utc", utc_now()))


def save_epoch(out: Path, cfg: TrainConfig, model: ContinuousNet, state: RunState, gen: torch.Generator,
               env: dict) -> None:
    """Write the checkpoint of the last finished epoch and the results file, each atomically."""
    history = state.history
    ckpt_path = out / CHECKPOINT
    save_checkpoint(ckpt_path, model.state_dict(), cfg.identity(), extra={
        "epoch": history[-1]["epoch"],
        "optimizer": state.optimizer.state_dict(),
        "rng": rng_state(gen),
        "history": history,
        "model_config": model.config(),
        "manifestation": [list(m) for m in model.manifestation],
        "run_config": dataclasses.asdict(cfg),
        "environment": env,
        "started_utc": state.started,
    })
    atomic_write_text(out / RESULTS, json.dumps(results_record(cfg, history, env, state.started, ckpt_path), indent=1))


def interrupted_message(out_dir: Path, how: str = "rerun the same command with --resume") -> str:
    """What to tell after an interruption: which epoch is safe on disk and how to continue.
    Checkpoints are written atomically, so an interruption leaves the last one whole."""
    ckpt = out_dir / CHECKPOINT
    done = (read_results(out_dir) or {}).get("epochs_done")
    if done is None and ckpt.is_file():  # results.json damaged: the checkpoint says which epoch it holds
        try:
            done = int(load_checkpoint(ckpt, map_location="cpu")["extra"]["epoch"])
        except (OSError, ValueError, KeyError, TypeError):
            done = None
    if ckpt.is_file() and done:
        return f"interrupted; epoch {done} is saved in {ckpt} (nothing else was written): {how} to continue"
    return f"interrupted before the first epoch finished; nothing was saved in {out_dir}: {how} to start again"


def load_model(path, device=None) -> tuple[ContinuousNet, dict]:
    """The trained model of a checkpoint (or of ``out_dir/checkpoint.pt``), in its trained manifestation, and the
    checkpoint: :func:`cnet_lib.runtime.checkpoint.load_model` (which reads a file of ``save_model`` as well)."""
    return load_saved_model(path, resolve_device(device), with_checkpoint=True)
