"""The trained models that ship with the book (``cnet_lib/shipped/<preset>-<run>/``, written by
``python -m cnet_lib ship``): found for a run, verified against their manifests, and copied.

A run the book ships a trained model for is used instead of trained, unless the reader has trained
that run themselves (:func:`cnet_lib.images.runs.run_store.trained_runs`): every shipped file is first
checked against the SHA-256 its manifest records (:func:`verify_shipped`), then copied into its own
folder beside the reader's (:func:`install_shipped`).  A reader's own run folder is never written by a
shipped model.
"""
from __future__ import annotations

import re
from pathlib import Path
from string import Formatter
from typing import Optional

from ...runtime.checkpoint import CheckpointError, atomic_copy, file_digest
from ...runtime.device import gpu_words
from ...runtime.progress import duration
from ...runtime.records import DamagedRecord, load_json
from ..training.train_config import TrainConfig
from ..training.train_state import CHECKPOINT, read_results
from .image_presets import identity_hash, image_runs, training_time_template

__all__ = ["SEEDS_FILE", "SHIPPED", "MANIFEST", "REINSTALL", "ShippedFileError", "read_manifest", "shipped_run", "verify_shipped",
           "install_shipped", "shipping_presets", "plain_description", "shipped_training_record", "expected_training"]

SEEDS_FILE = "seeds.json"

SHIPPED = Path(__file__).resolve().parents[2] / "shipped"
MANIFEST = "manifest.json"
REINSTALL = ("reinstall cnet_lib (pip install --force-reinstall --no-deps of the same source; in Colab: Runtime > "
             "Disconnect and delete runtime, then run the chapter again from its first cell), or train the model "
             "yourself with trained_runs(ctx.settings, use_shipped=False)")


class ShippedFileError(CheckpointError):
    """A file shipped with the book does not match its manifest: the installed package is damaged."""


MANIFEST_LIMIT = 1 << 20
"""The size limit of a manifest (1 MiB; the shipped ones hold a few KB)."""


def read_manifest(folder: Path, fix: str = f"the installed package is damaged; {REINSTALL}") -> dict:
    """The manifest of the shipped folder ``folder``, read without following a link or blocking, at most
    :data:`MANIFEST_LIMIT` bytes (:func:`cnet_lib.runtime.records.load_json`); one that cannot be read or is not
    a JSON object raises :class:`ShippedFileError` naming it, what is wrong and ``fix`` (by default: the installed
    package is damaged, reinstall)."""
    path = folder / MANIFEST
    try:
        manifest = load_json(path, MANIFEST_LIMIT)
    except DamagedRecord as err:
        raise ShippedFileError(f"the shipped manifest {path} cannot be read: {err}; {fix}") from None
    except OSError as err:
        raise ShippedFileError(f"the shipped manifest {path} cannot be read ({type(err).__name__}: "
                               f"{str(err)[:80]}): {fix}") from None
    if not isinstance(manifest, dict):
        raise ShippedFileError(f"the shipped manifest {path} is not a manifest (it holds a JSON "
                               f"{type(manifest).__name__}): {fix}")
    return manifest


def shipped_run(cfg: TrainConfig) -> Optional[Path]:
    """The folder of the model shipped with the book for this run, when there is one and its
    manifest's identity hash is the run's (a changed preset never picks up a stale model).  A
    shipped folder whose manifest cannot be read raises :class:`ShippedFileError`."""
    folder = SHIPPED / f"{cfg.preset}-{cfg.run_name}"
    if not folder.is_dir():
        return None
    return folder if read_manifest(folder).get("identity_hash") == identity_hash(cfg) else None


def verify_shipped(folder: Path) -> dict:
    """The manifest of the shipped folder ``folder``, after checking every file it lists against the
    SHA-256 it records; a missing or changed file (a truncated checkpoint, zeroed weights) raises
    :class:`ShippedFileError` naming the file and what to do (reinstall).  Nothing is copied or
    trained from a folder that fails."""
    manifest = read_manifest(folder)
    files = manifest.get("files")
    if not isinstance(files, dict) or CHECKPOINT not in files:
        raise ShippedFileError(f"the shipped manifest {folder / MANIFEST} lists no checksums for its files: the "
                               f"installed package is damaged; {REINSTALL}")
    for name, digest in files.items():
        path = folder / name
        if Path(name).name != name or name in ("", ".", ".."):  # only files of this folder, never a path
            raise ShippedFileError(f"the shipped manifest {folder / MANIFEST} names {name!r}, which is not a file of "
                                   f"its folder: the installed package is damaged; {REINSTALL}")
        if not path.is_file():
            raise ShippedFileError(f"the shipped file {path} is missing: the installed package is damaged; {REINSTALL}")
        got = file_digest(path)
        if got != digest:
            raise ShippedFileError(f"the shipped file {path} does not match the SHA-256 its manifest records (expected "
                                   f"{digest[:12]}…, found {got[:12]}…): the installed package is damaged or was "
                                   f"changed; {REINSTALL}")
    return manifest


def install_shipped(folder: Path, cfg: TrainConfig, label: str, verbose: bool) -> bool:
    """Copy the shipped model of ``cfg`` (checkpoint, history, θ snapshots, its sweep and robustness
    results) into ``folder``, after :func:`verify_shipped`: a file already there with the recorded
    SHA-256 is kept, any other one (missing, damaged) is copied atomically and checked again.
    Says that the model ships and how to train it instead (not where it was trained: the chapters say that in a
    margin note, :func:`cnet_lib.images.runs.run_loading.provenance`); False without a shipped model."""
    src = shipped_run(cfg)
    if src is None:
        return False
    manifest = verify_shipped(src)
    folder.mkdir(parents=True, exist_ok=True)
    for name, digest in manifest["files"].items():
        dest = folder / name
        if dest.is_file() and file_digest(dest) == digest:
            continue
        atomic_copy(src / name, dest)
        if file_digest(dest) != digest:
            raise ShippedFileError(f"the copy {dest} of the shipped file {src / name} differs from it after copying "
                                   "(a failing disk?): check the disk and run again")
    if verbose:  # where and on what it was trained is provenance: the chapters say it in a margin note
        print(f"{label}: using the model shipped with the book for this preset. To train it yourself instead: "
              "trained_runs(ctx.settings, use_shipped=False).")
    return True


def _machine(machine: dict, short: bool = False) -> str:
    """A manifest's machine as a reader names it: ``an NVIDIA H100 80GB HBM3 GPU``, ``a 2-core CPU``; ``short``: a
    GPU by its model alone, ``an H100``."""
    if str(machine.get("device", "")).startswith("cuda"):
        name = machine.get("device_name") or "CUDA"
        if short:
            return gpu_words(name)
        return f"{'an' if name.upper().startswith(('NVIDIA', 'AMD', 'A', 'E', 'I', 'O', 'U')) else 'a'} {name} GPU"
    return f"a {machine['cpu_count']}-core CPU" if machine.get("cpu_count") else "a CPU"


def _sweep_seconds(folder: Path, manifest: dict) -> Optional[float]:
    """The seconds the manifestation sweep shipped in ``folder`` (with ``manifest``) took where it ran (its record's
    ``seconds``); ``None`` unless exactly one sweep ships there and it says."""
    sweeps = [name for name in manifest.get("files", {}) if name.startswith("sweep-")]
    if len(sweeps) != 1:
        return None
    try:
        seconds = load_json(folder / sweeps[0]).get("seconds")
    except (OSError, DamagedRecord, AttributeError):
        return None
    return float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else None


def shipped_training_record(preset: str) -> Optional[dict]:
    """How long the models that ship for ``preset`` trained, and where, from the results files they were trained
    with (shipped beside them): ``{"seconds": {run: s}`` (each run's epochs, evaluation excluded, as
    :func:`cnet_lib.images.runs.run_loading.training_time` counts them), ``"eval_seconds": {run: s}``,
    ``"sweep_seconds": {run: s or None}`` (its shipped manifestation sweep), ``"study_seconds": {file: s}`` (every
    study's, as ``cnet ship --restudy`` recorded them in the manifests), ``"machine"`` (the first run's
    environment), ``"seed"}``; ``None`` unless every run of the preset ships a model of the preset as it is now,
    with its record."""
    seconds, evals, sweeps, studies, machine, seed = {}, {}, {}, {}, None, None
    for run, cfg in image_runs(preset).items():
        folder = shipped_run(cfg)
        record = read_results(folder) if folder is not None else None
        history = (record or {}).get("history", [])
        times = [h.get("train_seconds") for h in history]
        if record is None or not times or not all(isinstance(t, (int, float)) for t in times):
            return None
        seconds[run] = float(sum(times))
        evals[run] = float(sum(h.get("eval_seconds") or 0.0 for h in history))
        manifest = read_manifest(folder)
        sweeps[run] = _sweep_seconds(folder, manifest)
        studies.update((manifest.get("studies") or {}).get("seconds") or {})
        machine = machine if machine is not None else (record.get("environment") or {})
        seed = seed if seed is not None else record.get("seed")
    return {"seconds": seconds, "eval_seconds": evals, "sweep_seconds": sweeps, "study_seconds": studies,
            "machine": machine, "seed": seed}


def expected_training(preset: str) -> str:
    """How long training the image models of ``preset`` takes, where it was measured: the preset's words
    (:func:`~cnet_lib.images.runs.image_presets.training_time_template`) with the shipped models' records filled in
    (:func:`shipped_training_record`), each time rounded as the book says a duration
    (:func:`cnet_lib.runtime.progress.duration`); "not measured" when the preset's words need a record and no
    model of the preset ships."""
    words = training_time_template(preset)
    if not any(field for _, field, _, _ in Formatter().parse(words)):
        return words
    record = shipped_training_record(preset)
    if record is None:
        return f"not measured (no trained models of the '{preset}' preset ship with this install)"
    return words.format(total=duration(sum(record["seconds"].values())), machine=_machine(record["machine"], short=True),
                        seed=record["seed"], **{run: duration(s) for run, s in record["seconds"].items()})


def plain_description(text: str) -> str:
    """A shipped manifest's description of its data in a reader's words: the folders and command lines it
    records in parentheses (``(JPEG-derived pixels, ../shared/data-large)``) are left out, and "the project's"
    copy is "a" copy."""
    def keep(m: "re.Match") -> str:
        items = [i.strip() for i in m.group(1).split(",") if "/" not in i and "`" not in i and i.strip()]
        return f" ({', '.join(items)})" if items else ""

    text = re.sub(r"\s*\(([^()]*)\)", keep, text)
    return text.replace("the project's ", "a ").strip()


def shipping_presets() -> list:
    """The presets whose models ship with the book, sorted."""
    return sorted({p.parent.name.split("-", 1)[0] for p in SHIPPED.glob(f"*/{MANIFEST}")})
