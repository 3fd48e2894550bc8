"""The numbers of several training seeds, kept in one file beside the seed-0 runs: ``seeds.json``.

A preset trained from several seeds per method (the ``gpu`` preset from seeds 0, 1 and 2:
``scripts/seeds_file.py``) keeps, for every seed, the SHA-256 of its checkpoints, its final
accuracies and training time, its manifestation sweeps, its robustness study in compact form (each
condition's accuracy per noise draw; the per-image outcomes stay in the seed's own run folder) and its
adaptive-step study's rows (:func:`cnet_lib.studies.adaptive.seeds_record`; only the main runs have the two studies).  The file
lives in the seed-0 folder of the preset's first run and ships with it
(:mod:`cnet_lib.cli.ship`), so a chapter that loads the shipped seed-0 models also finds the other seeds'
numbers: :func:`seed_sweeps` and :func:`seed_studies` give the inputs of
:func:`cnet_lib.studies.manifestation.over_seeds` and :func:`cnet_lib.studies.robustness.robustness_over_seeds`, or the
loaded models alone (one seed) when there is no such file or it was written for other models.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from ...runtime.checkpoint import atomic_write_text
from ...runtime.records import DamagedRecord, load_json
from ..runs.study_run import StudyRun, training_time
from ..training.evaluation import checked_rows

__all__ = ["SEEDS_FILE", "SEEDS_FORMAT", "seed_record", "write_seeds_file",
           "read_seeds_file", "seed_sweeps", "seed_studies"]

SEEDS_FILE = "seeds.json"
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
    (run -> :func:`cnet_lib.images.runs.run_folders.identity_hash`) says which runs the records are of."""
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
