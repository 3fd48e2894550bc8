"""A training run on disk: its checkpoint and results file, written atomically after every epoch, and
resuming from them.

After each epoch ``out_dir/checkpoint.pt`` (model, optimizer, RNG states, history, config) and
``out_dir/results.json`` (the history) are written atomically.  ``resume=True`` continues from the
checkpoint — the model is rebuilt at the initial configuration and the refinements up to the saved
epoch are replayed before loading — and gives the same weights as an uninterrupted run; with a
finished checkpoint it just loads the model ("train once, reuse everywhere").

A finished run ships as its weights alone (:data:`SHIPPED_EXTRA`, no optimizer or random states; stored in
float16 or bfloat16 they are a quarter of the training checkpoint's bytes: :mod:`cnet_lib.images.runs.shipping`):
such a checkpoint loads like any finished run but cannot be continued.

Also here: a run's ``results.json``, read as anyone may have left it and written again from the checkpoint when it
is not whole (:func:`read_results`, :func:`restore_results`).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional

import torch

from ...core.models import ContinuousNet
from ...runtime.checkpoint import (CheckpointError, CheckpointMismatchError, CheckpointSaveError, atomic_write_text,
    load_checkpoint, load_model as load_saved_model, save_checkpoint)
from ...runtime.device import resolve_device
from ...runtime.files import set_aside, write_problem
from ...runtime.records import DamagedRecord, load_json
from .train_config import TrainConfig, lr_scheduler

__all__ = ["CHECKPOINT", "RESULTS", "TrainResult", "RunState", "start_or_resume", "save_epoch", "results_record",
           "interrupted_message", "load_model", "utc_now", "SHIPPED_EXTRA", "RESULTS_LIMIT", "results_problem",
           "read_results", "restore_results"]


# A run's ``results.json`` read as anyone may have left it, and written again from the checkpoint when it is not whole.
#
# ``results.json`` repeats what the checkpoint holds (the history, the environment, the start time) in a form
# people and other programs read.  :func:`read_results` returns it only when it is whole: a JSON object whose
# ``epochs_done`` is a count and whose ``history`` has that many epochs, read without following a link or
# blocking, at most :data:`RESULTS_LIMIT` bytes (:func:`cnet_lib.runtime.records.load_json`).  Anything else (cut
# off, nested too deeply, ``[]``, ``{"epochs_done": null}``, ``"two"``) is damage, said in words by
# :func:`results_problem`.  Since the checkpoint holds everything the file says, :func:`restore_results` sets a
# damaged file aside (``results.json.damaged-<time>``, kept) and writes it again from the checkpoint; a file
# behind its checkpoint (a save killed between the two writes) is written again too.

RESULTS = "results.json"
RESULTS_LIMIT = 16 << 20
"""The size limit of a results file (16 MiB; a run of 200 epochs writes about 100 KB)."""


def utc_now() -> str:
    """The time now, UTC, as ISO 8601 to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _whole(record) -> Optional[str]:
    """What is wrong with a parsed results record, or ``None`` when it is whole."""
    if not isinstance(record, dict):
        return f"it holds a JSON {type(record).__name__}, not a run's results"
    done, history = record.get("epochs_done"), record.get("history")
    if not isinstance(done, int) or isinstance(done, bool) or done < 0:
        return f"its epochs_done is {str(done)[:20]!r}, not a count of epochs"
    if not isinstance(history, list) or len(history) != done or not all(isinstance(h, dict) for h in history):
        return f"its history does not hold the {done} epochs it counts"
    return None


def results_problem(folder: Path) -> tuple[Optional[dict], Optional[str]]:
    """``(record, None)`` when ``folder/results.json`` is whole, ``(None, None)`` when there is none, and
    ``(None, what is wrong)`` otherwise."""
    path = Path(folder) / RESULTS
    try:
        record = load_json(path, RESULTS_LIMIT)
    except FileNotFoundError:
        return None, None
    except DamagedRecord as err:
        return None, str(err)
    except OSError as err:
        return None, f"it cannot be read ({err.strerror or err})"
    problem = _whole(record)
    return (None, problem) if problem else (record, None)


def read_results(folder: Path) -> Optional[dict]:
    """``folder/results.json`` when it is whole (:func:`results_problem`), else ``None``."""
    return results_problem(folder)[0]


def results_record(cfg: TrainConfig, history: list[dict], env: dict, started: str, ckpt: Optional[Path]) -> dict:
    """What ``results.json`` holds: the run, its environment and its history so far."""
    return {
        "preset": cfg.preset,
        "run_name": cfg.run_name,
        "seed": cfg.seed,
        "config": dataclasses.asdict(cfg),
        "environment": env,
        "started_utc": started,
        "updated_utc": utc_now(),
        "epochs_done": len(history),
        "train_seconds_total": sum(h["train_seconds"] for h in history),
        "eval_seconds_total": sum(h["eval_seconds"] for h in history),
        "final_test_acc": history[-1]["test_acc"] if history else None,
        "checkpoint": str(ckpt) if ckpt else None,
        "history": history,
    }


def _print(text: str) -> None:
    print(text, flush=True)


def restore_results(folder: Path, cfg: TrainConfig, ck: dict, checkpoint: Path,
                    say: Callable[[str], None] = _print) -> bool:
    """Write ``folder/results.json`` again from the checkpoint ``ck`` (read from ``checkpoint``) unless it is
    whole and counts the checkpoint's epochs; a damaged one is set aside first, said in one sentence through
    ``say``.  The caller holds the folder's lock.  True when the file was written; a folder that refuses the
    write is said in one sentence (the checkpoint still serves the run)."""
    record, problem = results_problem(folder)
    extra = ck["extra"]
    history = list(extra["history"])
    if record is not None and record["epochs_done"] == len(history):
        return False
    path = Path(folder) / RESULTS
    if problem:
        try:
            kept = f"it was moved to {set_aside(path).name} (kept)"
        except OSError as err:
            kept = f"it cannot be moved aside ({write_problem(err)})"
        say(f"{path} cannot be used: {problem}; {kept} and it is written again from {checkpoint.name} "
            f"({len(history)} epochs).")
    text = json.dumps(results_record(cfg, history, extra.get("environment") or {}, extra.get("started_utc") or "",
                                     checkpoint), indent=1)
    try:
        atomic_write_text(path, text)
    except CheckpointSaveError as err:
        say(f"{path} could not be written again from {checkpoint.name} ({write_problem(err)}); the run is read from "
            "its checkpoint.")
        return False
    return True


# ---------------------------------------------------------------------- the module's own part (its docstring above)

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
    (:func:`cnet_lib.images.training.train_state.restore_results`); the other ranks never touch it, so that one
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
