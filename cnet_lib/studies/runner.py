"""The one runner every study of the trained image models goes through, and what it reads on any machine.

* Inputs checked before any model is evaluated (:func:`check_study_inputs`).
* A study computed once for the trained runs and cached beside them (:func:`cached_study`): a lock, a checked read, the
  computation with the out-of-memory advice, its provenance (:func:`provenance`, :func:`ran_on`, :func:`precision`),
  an atomic write.
* The numbers of several training seeds in one file (:data:`SEEDS_FILE`, :func:`seed_record`, :func:`seed_studies`).
* The studies that ship beside a shipped model, read in place of a recomputation on a machine of another kind
  (:func:`shipped_stand_ins`), and what a recomputation will cost said first (:func:`announce_recompute`).
A study folder (:mod:`cnet_lib.studies.robustness`, say) imports this module and :mod:`cnet_lib.studies.stats`, never
another study.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence

import torch

from ..images.runs.run_loading import StudyRun, training_time
from ..images.runs.shipped import SEEDS_FILE, SHIPPED
from ..images.training.evaluation import checked_rows
from ..core.validation import check_int
from ..runtime.checkpoint import atomic_write_text, keyed, plain, read_cache, remove_stale_temporaries, write_cache
from ..runtime.device import environment, out_of_memory_hint
from ..runtime.files import folder_lock
from ..runtime.records import DamagedRecord, load_json

__all__ = ["check_study_inputs", "StudyFile", "Described", "Cached", "cached_study", "provenance", "ran_on",
           "precision", "utc_now", "SEEDS_FILE", "SEEDS_FORMAT", "seed_record", "write_seeds_file",
           "read_seeds_file", "seed_sweeps", "seed_studies", "MACHINE_FIELDS", "shipped_stand_ins",
           "announce_recompute", "shipped_sweep_file", "shipped_seeds"]


def check_study_inputs(runs: Mapping, n_images: Optional[int] = None, n_show: Optional[int] = None) -> list:
    """The names of ``runs`` (a non-empty mapping of trained runs), after checking ``n_images`` (the
    test images evaluated: an integer >= 1) and ``n_show`` (the images shown: from 1 to ``n_images``)."""
    if not isinstance(runs, Mapping) or not runs:
        raise ValueError(f"runs must be the trained runs, {{name: StudyRun}} (e.g. "
                         f"runs=images.trained_runs(ctx.settings)), got {runs!r:.60}")
    if n_images is not None:
        check_int("n_images", n_images, low=1, example=1000)
    if n_show is not None:
        check_int("n_show", n_show, low=1, high=n_images, example=12)
    return list(runs)


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


SEEDS_FORMAT = "cnet_lib training seeds, version 1"


def _compact(conds: Sequence) -> list[dict]:
    return [{"kind": c.kind, "level": c.level, "accuracies": c.accuracies(), "n": int(c.correct[0].numel())}
            for c in conds]


def seed_record(runs: Mapping[str, StudyRun], sweeps: Mapping[str, Sequence[dict]],
                study: Optional[Mapping[str, Sequence]] = None, adaptive: Optional[Mapping] = None) -> dict:
    """One training seed's numbers: ``seed``, per run the checkpoint's SHA-256, final accuracy and training
    seconds (with the device), its sweep rows, the robustness study as each condition's accuracy per
    noise draw (``None`` without a study) and, given it, the adaptive-step study in compact form
    (:func:`cnet_lib.studies.adaptive.seeds_record`).  Every
    run must have the same seed."""
    seeds = {run.config.seed for run in runs.values()}
    if len(seeds) != 1:
        raise ValueError(f"the runs of one seed record must share their training seed, got seeds {sorted(seeds)}")
    record = {
        "seed": seeds.pop(),
        "runs": {name: {"checkpoint_sha256": run.checkpoint_digest, "final_test_acc": run.final_accuracy,
                        **training_time(run)} for name, run in runs.items()},
        "sweeps": {name: list(rows) for name, rows in sweeps.items()},
        "robustness": None if study is None else {label: _compact(conds) for label, conds in study.items()},
    }
    if adaptive is not None:
        record["adaptive"] = dict(adaptive)
    return record


def write_seeds_file(path: Path, records: Sequence[Mapping], preset: str, environment: Mapping[str, Any],
                     identity: Optional[Mapping[str, str]] = None) -> Path:
    """Write ``records`` (:func:`seed_record`, one per seed, seeds distinct) atomically to ``path``; ``identity``
    (run -> :func:`cnet_lib.images.runs.image_presets.identity_hash`) says which runs the records are of."""
    seeds = [r["seed"] for r in records]
    if len(set(seeds)) != len(seeds) or not seeds:
        raise ValueError(f"give one record per training seed, each seed once; got seeds {seeds}")
    payload = {"format": SEEDS_FORMAT, "preset": preset, "environment": dict(environment),
               "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "seeds": sorted(records, key=lambda r: r["seed"])}
    if identity is not None:
        payload["identity"] = dict(identity)
    atomic_write_text(path, json.dumps(payload, indent=1))
    return Path(path)


def read_seeds_file(path: Path) -> Optional[dict]:
    """The seeds file at ``path``, or ``None`` when it is absent, unreadable, of another format or not whole (a
    record without its seed, runs or sweep rows; read without following a link or blocking, bounded: the
    chapters then report the loaded models alone)."""
    try:
        payload = load_json(path)
    except (OSError, DamagedRecord):
        return None
    if not isinstance(payload, dict) or payload.get("format") != SEEDS_FORMAT or not payload.get("seeds"):
        return None
    try:  # every record as seed_record writes it (a figure reads every row)
        for record in payload["seeds"]:
            if not isinstance(record["seed"], int) or not all(isinstance(r, dict) for r in record["runs"].values()):
                return None
            for rows in record["sweeps"].values():
                checked_rows(rows, ("kind", "accuracy"))  # what the seed verdicts read of every row
            for conds in (record.get("robustness") or {}).values():
                if not all({"kind", "level", "accuracies", "n"} <= set(c) for c in conds):
                    return None
    except (KeyError, TypeError, AttributeError, ValueError, RecursionError):
        return None
    return payload


def _matching(runs: Mapping[str, StudyRun], verbose: bool) -> Optional[dict]:
    """The seeds file beside the first run when one of its records is exactly the loaded runs (their
    seed and every checkpoint's SHA-256)."""
    first = next(iter(runs.values()))
    path = first.out_dir / SEEDS_FILE
    payload = read_seeds_file(path)
    if payload is None:
        return None
    seed = first.config.seed
    mine = next((r for r in payload["seeds"] if r["seed"] == seed), None)
    if mine is None or any(mine["runs"].get(n, {}).get("checkpoint_sha256") != run.checkpoint_digest
                           for n, run in runs.items()):
        if verbose:
            print(f"{path} describes other models than the ones loaded, so only these models are reported.")
        return None
    return payload


def seed_sweeps(runs: Mapping[str, StudyRun], sweeps: Mapping[str, Sequence[dict]],
                verbose: bool = True) -> dict:
    """``{training seed: {run: sweep rows}}``: every seed of the seeds file that stands with the loaded
    ``runs`` (the loaded seed's rows are ``sweeps``, as computed now), else ``{seed: sweeps}`` alone."""
    seed = next(iter(runs.values())).config.seed
    payload = _matching(runs, verbose)
    out = {seed: dict(sweeps)}
    for record in (payload or {}).get("seeds", []):
        if record["seed"] != seed and all(n in record["sweeps"] for n in sweeps):
            out[record["seed"]] = {n: record["sweeps"][n] for n in sweeps}
    return dict(sorted(out.items()))


def seed_studies(runs: Mapping[str, StudyRun], study: Mapping[str, Sequence], verbose: bool = True) -> dict:
    """``{training seed: {label: conditions}}`` for :func:`cnet_lib.studies.robustness.robustness_over_seeds`:
    the loaded seed's ``study`` and every other seed of the seeds file that stands with ``runs`` and has
    a robustness study of the same labels, else ``{seed: study}`` alone."""
    seed = next(iter(runs.values())).config.seed
    payload = _matching(runs, verbose)
    out = {seed: dict(study)}
    for record in (payload or {}).get("seeds", []):
        other = record.get("robustness")
        if record["seed"] != seed and other and all(label in other for label in study):
            out[record["seed"]] = {label: other[label] for label in study}
    return dict(sorted(out.items()))


MACHINE_FIELDS = ("device", "amp")
"""The fields of a study's key that say where and how it ran, not what it measured."""


def _what_it_measured(key: Mapping) -> dict:
    return {k: v for k, v in plain(dict(key)).items() if k not in MACHINE_FIELDS}


def _record(path) -> Optional[dict]:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return obj if isinstance(obj, dict) and isinstance(obj.get("key"), dict) else None


def shipped_stand_ins(run, prefix: str, key: Mapping) -> tuple:
    """The studies shipped beside ``run`` (named ``<prefix>*.json``) that measured what ``key`` asks for on
    another device or with other autocast, as :class:`StudyFile` s whose note says that the shipped numbers are
    shown; none for a run that did not ship with the book (a reader's own models are studied where they are)."""
    if not getattr(run, "shipped", False):
        return ()
    want = _what_it_measured(key)
    found = []
    for path in sorted(run.out_dir.glob(f"{prefix}*.json")):
        record = _record(path)
        if record is None or plain(record["key"]) == plain(dict(key)) or _what_it_measured(record["key"]) != want:
            continue
        found.append(StudyFile(path, record["key"], f"; shipped with the book, so its numbers are shown here rather "
                                                    f"than computed again on this machine ({precision(record)})"))
    return tuple(found)


def announce_recompute(run, prefix: str, what: str) -> None:
    """Say, before a shipped run's study is computed here after all (none of its shipped files measured what is
    asked: another grid, say), what is computed and about how long the shipped one took where it ran."""
    if not getattr(run, "shipped", False):
        return
    took = [r for r in (_record(p) for p in sorted(run.out_dir.glob(f"{prefix}*.json"))) if r]
    hint = (f"; the shipped one took {max(r.get('seconds', 0) for r in took):.0f} s on {ran_on(took[0])}, and a CPU "
            "can take many times that") if took else ""
    print(f"{what}: no study shipped with the book measured this, so it is computed now{hint}.", flush=True)


def shipped_sweep_file(preset: str, run: str) -> Optional[dict]:
    """The sweep that ships beside ``preset``'s ``run`` (``cnet_lib/shipped/<preset>-<run>/sweep-*.json``), parsed
    (its ``rows`` checked as a sweep's, :func:`cnet_lib.images.training.evaluation.checked_rows`), or ``None`` when
    that run does not ship one; a folder with several, or one that cannot be read, raises a ValueError that says to
    ship the preset again."""
    found = sorted((SHIPPED / f"{preset}-{run}").glob("sweep-*.json"))
    if not found:
        return None
    if len(found) > 1:
        raise ValueError(f"{SHIPPED / f'{preset}-{run}'} holds {len(found)} sweeps, not one: restudy the shipped "
                         f"models (cnet ship {preset} --restudy)")
    try:
        payload = load_json(found[0])
        checked_rows(payload["rows"])
    except (OSError, DamagedRecord, KeyError, TypeError, ValueError) as err:
        raise ValueError(f"the shipped sweep {found[0]} cannot be read ({err}): reinstall cnet_lib, or ship the "
                         f"preset again (cnet ship {preset})") from None
    return payload


def shipped_seeds(preset: str) -> list:
    """The records of the seeds file that ships with ``preset``'s models (``seeds.json`` beside ``rk4_refined``), one
    per training seed; none when it ships none."""
    payload = read_seeds_file(SHIPPED / f"{preset}-rk4_refined" / SEEDS_FILE)
    return list(payload["seeds"]) if payload else []
