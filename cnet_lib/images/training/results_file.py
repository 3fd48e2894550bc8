"""A run's ``results.json`` read as anyone may have left it, and written again from the checkpoint when it is not whole.

``results.json`` repeats what the checkpoint holds (the history, the environment, the start time) in a form
people and other programs read.  :func:`read_results` returns it only when it is whole: a JSON object whose
``epochs_done`` is a count and whose ``history`` has that many epochs, read without following a link or
blocking, at most :data:`RESULTS_LIMIT` bytes (:func:`cnet_lib.runtime.records.load_json`).  Anything else (cut
off, nested too deeply, ``[]``, ``{"epochs_done": null}``, ``"two"``) is damage, said in words by
:func:`results_problem`.  Since the checkpoint holds everything the file says, :func:`restore_results` sets a
damaged file aside (``results.json.damaged-<time>``, kept) and writes it again from the checkpoint; a file
behind its checkpoint (a save killed between the two writes) is written again too.
"""
from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional

from ...runtime.checkpoint import CheckpointSaveError, atomic_write_text
from ...runtime.files import set_aside, write_problem
from ...runtime.records import DamagedRecord, load_json
from .train_config import TrainConfig

__all__ = ["RESULTS", "RESULTS_LIMIT", "utc_now", "results_problem", "read_results", "results_record",
           "restore_results"]

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
