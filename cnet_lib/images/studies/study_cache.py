"""A study of the trained runs computed once and cached beside their checkpoints: :func:`cached_study`, the one
runner every study uses (the sweeps, :func:`cnet_lib.studies.manifestation.run`; the robustness study,
:func:`cnet_lib.studies.robustness.study.run`; the adaptive steps, :func:`cnet_lib.studies.adaptive.run`).

A study's cache file is named by a hash of everything its numbers depend on (its *key*: the checkpoints'
SHA-256, the grid, the test split, the device type), and it records that key.  The runner

1. locks the folder of the file, so that a second process waits and then reads what the first one wrote, and
   removes the temporary files a save killed mid-write left there (those of ended processes only);
2. reads the file when it is whole and current (:func:`cnet_lib.runtime.json_cache.read_cache`: a file that
   is cut off, not JSON, of an older format or of another key is set aside, ``<name>.damaged-<time>``, and
   computed again), and says where and when it was computed (:func:`provenance`);
3. otherwise computes the study, an out-of-memory error said in one sentence with the batch size to try;
4. stamps the record with the machine it ran on, its seconds and the date, and writes it atomically (a
   folder that refuses is said in one sentence, and the results are used all the same).

Where a study ran, in what arithmetic, are said from
its record (:func:`provenance`, :func:`ran_on`, :func:`precision`).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence

import torch

from ...runtime.checkpoint import remove_stale_temporaries
from ...runtime.device import environment
from ...runtime.json_cache import keyed, read_cache, write_cache
from ...runtime.locks import folder_lock
from ...runtime.memory import out_of_memory_hint

__all__ = ["StudyFile", "Described", "Cached", "cached_study", "provenance", "ran_on", "precision", "utc_now"]

_UNREADABLE = (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError)


@dataclass(frozen=True)
class StudyFile:
    """A cache file of a study: its ``path``, the ``key`` it records, and a ``note`` said after "loaded from
    ..." when this file is the one read (a stand-in for the study's own file, say)."""

    path: Path
    key: Mapping
    note: str = ""


@dataclass(frozen=True)
class Described:
    """How a study is named in what the runner says: ``what`` in the sentences about a damaged or unwritable
    file ("the robustness study"), ``noun`` before "loaded from ..." ("robustness study"), ``doing`` while the
    folder is locked and in the out-of-memory advice ("computing the robustness study")."""

    what: str
    noun: str
    doing: str


class Cached(NamedTuple):
    """What :func:`cached_study` returns: the study's ``value`` (what ``read`` makes of the record), the
    ``record`` as stored, whether it was ``computed`` now, and whether the file was ``kept`` (written)."""

    value: Any
    record: dict
    computed: bool
    kept: bool


def utc_now() -> str:
    """The time now, as the records store it (``2026-11-27T10:00:00Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def provenance(record: Mapping) -> str:
    """Where, when and in how long a cached study was computed, in words (the machine as a reader would name
    it, never a folder of it)."""
    when = (record.get("created_utc") or "")[:10] or "an unrecorded date"
    return f"computed on {ran_on(record)}, {when}, in {record.get('seconds', 0):.0f} s"


def ran_on(record: Mapping) -> str:
    """Where a study's record says it ran, in words: ``an NVIDIA H100 80GB HBM3 GPU``, ``a 2-core x86_64 CPU`` (a CPU
    by its cores and architecture, as the book's measurements name machines, not by its brand)."""
    env = record.get("environment") or {}
    name = env.get("device_name") or ""
    if str(env.get("device", "")).startswith("cuda"):
        name = name or "CUDA"
        return f"{'an' if name.upper().startswith(('NVIDIA', 'AMD', 'A', 'E', 'I', 'O', 'U')) else 'a'} {name} GPU"
    arch = next((a for a in ("x86_64", "aarch64", "arm64") if a in str(env.get("platform", ""))), "")
    cores = env.get("cpu_count")
    return " ".join(w for w in ("a", f"{cores}-core" if cores else "", arch, "CPU") if w)


def precision(record: Mapping) -> str:
    """The arithmetic a study's record says it ran in: bf16 autocast, float32 with TF32 convolutions (CUDA
    without ``"tf32": false``: cuDNN's default, which the studies of the ``gpu`` preset ran with), or float32."""
    env, key = record.get("environment") or {}, record.get("key") or {}
    if key.get("amp"):
        return "bf16 autocast"
    if str(env.get("device", "")).startswith("cuda") and record.get("tf32", True):
        return "float32 with TF32 convolutions, PyTorch's default on CUDA"
    return "float32"


def _whole(record: dict) -> dict:
    return record


def _read(file: StudyFile, described: Described, fields: Sequence[str], read: Callable[[dict], Any]):
    """``(value, record)`` of ``file`` when it is whole, current and readable, else ``None`` (set aside)."""
    record = read_cache(file.path, described.what, keyed(file.key, *fields))
    if record is None:
        return None
    try:
        return read(record), record
    except _UNREADABLE as err:
        problem = f"its {fields[0]} cannot be read ({type(err).__name__}: {err})"
        read_cache(file.path, described.what, lambda obj: problem)
        return None


def cached_study(file: StudyFile, compute: Callable[[], tuple], described: Described, *, fields: Sequence[str],
                 device: torch.device, batch_size: int, read: Callable[[dict], Any] = _whole,
                 also: Sequence[StudyFile] = (), verbose: bool = True, indent: Optional[int] = None) -> Cached:
    """The study cached in ``file`` (or, failing it, in one of ``also``), else ``compute()``d and written there.

    ``compute()`` returns ``(value, fields of the record)`` (``fields`` name those a whole record holds besides
    its key); the runner adds ``key``, ``environment`` (the machine of ``device``), ``seconds`` and
    ``created_utc``.  ``read(record)`` makes the study's value of a record read back (one it cannot read is set
    aside and computed again).  ``batch_size`` is what to lower when ``device`` runs out of memory; the error says to what."""
    with folder_lock(file.path.parent, described.doing, required=False) as locked:
        if locked:  # what a save killed mid-write left (only ended processes' files: no live writer's)
            remove_stale_temporaries(file.path.parent, [f.path.name for f in (file, *also)])
        for candidate in (file, *also):
            found = _read(candidate, described, fields, read)
            if found is not None:
                if verbose:
                    print(f"{described.noun} read from its file ({provenance(found[1])}){candidate.note}")
                return Cached(found[0], found[1], computed=False, kept=False)
        t0 = time.perf_counter()
        with out_of_memory_hint(device, described.doing, batch_size):
            value, own = compute()
        record = {"key": dict(file.key), **own, "environment": environment(device),
                  "seconds": time.perf_counter() - t0, "created_utc": utc_now()}
        kept = write_cache(file.path, json.dumps(record, indent=indent), described.what)
    return Cached(value, record, computed=True, kept=kept)
