"""``python -m cnet_lib ship PRESET``: train a preset's image models and ship them with the book.

Trains both runs of the preset with the project's own training (:func:`cnet_lib.images.runs.run_store.trained_runs`,
never from a shipped model), computes their manifestation sweeps and the robustness study, and copies
everything a chapter reads (and the other training seeds' numbers, ``seeds.json``, where the run folder
holds them: :mod:`cnet_lib.studies.runner`) into ``cnet_lib/shipped/<preset>-<run>/`` with a ``manifest.json``: the
exact command, the run's identity hash (:func:`cnet_lib.images.runs.image_presets.identity_hash`; a changed preset
makes the shipped model stale, and a test fails), the machine, the training time, the accuracies, the
data it was trained on and the SHA-256 of every file.  The chapters then load these models instead of
training them, and say so.

    CNET_DATA_DIR=../shared/data-large python -m cnet_lib ship cpu --data-description "..."

``--controls`` ships the preset's control runs instead (RK4-classic at fixed depth, Euler refined: with the two main
runs they make the 2 x 2 of integrator x refinement), each with its sweep:

    CNET_DATA_DIR=../shared/data-large python -m cnet_lib ship cpu --controls --data-description "..."

``--weights float16`` (or ``bfloat16``) ships each model's weights alone, stored in half precision and loaded as
float32 (:mod:`cnet_lib.images.runs.shipping`: a quarter of the training checkpoint's bytes); the studies that
ship are then computed from those rounded weights, so they describe the model exactly as it ships.  The default,
``float32``, ships the training checkpoint as it is.

``--restudy`` recomputes only the studies of the models already shipped (when a study changes, not
the training): each shipped model is verified and loaded, its sweeps and robustness study are
computed with the preset's current grids (a cache that matches is reused, with the time it took
then), the study files in the shipped folder are replaced, and the manifest keeps the training
record and gains a ``studies`` entry (the command, the machine, each study's computing time).

    CNET_DATA_DIR=../shared/data-large python -m cnet_lib ship cpu --restudy

The data folder, mirror, CUDA graphs and threads come from the environment's settings
(:class:`cnet_lib.runtime.settings.Settings`); ``--root`` and ``--device`` override its runs folder and
device (default: the CPU).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

from ..images.runs.image_presets import CONTROLS, image_runs, sweep_grid
from ..images.runs.run_loading import StudyRun
from ..images.runs.run_store import trained_runs
from ..images.runs.shipped import MANIFEST, SHIPPED, read_manifest
from ..images.runs.shipping import ShipError, copy_run_file, shipping_copies, study_seconds, write_shipped
from ..images.runs.theta_record import SNAPSHOTS
from ..images.training.train_state import CHECKPOINT, RESULTS
from ..runtime.checkpoint import WEIGHTS, atomic_write_text, file_digest
from ..runtime.device import environment
from ..runtime.settings import Settings
from ..studies.runner import SEEDS_FILE
from ..studies import adaptive, manifestation, robustness
from .command_line import UsageError, command_main

__all__ = ["SUMMARY", "INTERRUPTED", "STUDY_PREFIXES", "ShipError", "ship", "ship_studied", "restudy", "add_arguments",
           "run", "main"]

SUMMARY = "Train a preset's image models (or --restudy them) and ship them with the book in cnet_lib/shipped/"

STUDY_PREFIXES = (manifestation.SWEEP_PREFIX, robustness.study.PREFIX, adaptive.PREFIX)
"""The names of the study files a shipped folder holds start with these."""


def ship(settings: Settings, data_description: str, command: str, dest: Path = SHIPPED,
         controls: bool = False, weights: str = "float32") -> list[Path]:
    """Train (or reload from the settings' runs folder), sweep and study the runs of the settings' preset, and
    write the shipped folders.  With ``controls`` the preset's control runs instead
    (:data:`cnet_lib.images.runs.image_presets.CONTROLS`, the other cells of integrator x refinement): trained and
    swept, shipped with their sweep (the robustness and adaptive studies are the main runs').  A run file that
    cannot be shipped (damaged, not a file, a link) stops with one sentence (:class:`ShipError`) before any
    shipped folder is replaced (:func:`ship_studied`).  ``weights`` other than ``"float32"`` ships each run's weights
    alone stored that way, and every study from them (:func:`cnet_lib.images.runs.shipping.shipping_copies`)."""
    if weights not in WEIGHTS:
        raise ValueError(f"weights={weights!r}: choose one of {', '.join(WEIGHTS)} (e.g. weights='float16')")
    t0 = time.perf_counter()
    runs = trained_runs(settings, runs=list(CONTROLS) if controls else None, use_shipped=False, verbose=True,
                        progress=False)
    if weights != "float32":  # the weights as they ship, rounded first: every study below is of them
        runs = shipping_copies(runs, weights)
    return ship_studied(runs, data_description, command, dest, controls=controls, weights=weights, started=t0,
                        studies=(robustness.study.study_file,))


def ship_studied(runs: Mapping[str, StudyRun], data_description: str, command: str, dest: Path,
                 controls: bool = False, weights: str = "float32", started: Optional[float] = None,
                 studies: Sequence[Callable[[Mapping[str, StudyRun]], Path]] = ()) -> list[Path]:
    """Study the trained ``runs`` of one preset (each run's sweep; unless ``controls``, the ``studies`` of all of them
    and the adaptive-step study, beside the first: cached, so a study already computed is read) and write their
    shipped folders ``dest/<preset>-<run>/`` (:func:`cnet_lib.images.runs.shipping.write_shipped`: all or none).
    Each of ``studies`` computes its study of the runs (or reads its cache) and returns its file (the robustness
    study's :func:`cnet_lib.studies.robustness.study.study_file`).  ``weights`` is how their checkpoints store the
    weights (recorded in the manifests; the runs are already stored so, see
    :func:`cnet_lib.images.runs.shipping.shipping_copies`); ``started`` the ``time.perf_counter()`` the command
    started at (its wall seconds go into the manifests)."""
    first = next(iter(runs.values()))
    preset, dev = first.config.preset, first.settings.device
    t0 = time.perf_counter() if started is None else started
    sweeps_t0 = time.perf_counter()
    manifestation.run(runs, verbose=True)
    files = {name: [manifestation.sweep_cache(run, sweep_grid(preset), dev)[0].name] for name, run in runs.items()}
    if not controls:
        files[next(iter(runs))] += [study(runs).name for study in studies]  # these studies live beside the first run
    finished = time.perf_counter()
    if not controls:  # the adaptive-step study, beside it too
        files[next(iter(runs))].append(adaptive.study_for_shipping(runs, dev).name)
    record = {"command": command, "description": data_description, "weights": weights,
              "sweeps_and_robustness_seconds": finished - sweeps_t0, "wall_seconds_of_this_command": finished - t0,
              "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    # the current studies only, not stale caches; and the other training seeds' numbers where the run has them
    written = write_shipped([(run, dest / f"{preset}-{name}", [CHECKPOINT, RESULTS, SNAPSHOTS, *files[name], SEEDS_FILE])
                            for name, run in runs.items()], record)
    for name, folder in zip(runs, written):
        print(f"shipped {name}: {folder} ({sum(f.stat().st_size for f in folder.iterdir()) / 1e6:.2f} MB)")
    return written


def _shipped_manifests(preset: str, dest: Path) -> dict[str, dict]:
    """The manifest of every run of ``preset`` shipped in ``dest``, read as records are
    (:func:`cnet_lib.images.runs.shipped.read_manifest`); one that is missing or cannot be used raises one sentence."""
    ship_again = f"ship the preset again (python -m cnet_lib ship {preset} --data-description ...)"
    manifests = {}
    for name in image_runs(preset):
        folder = dest / f"{preset}-{name}"
        if not os.path.lexists(folder / MANIFEST):
            raise ShipError(f"{folder / MANIFEST} is missing: the {preset} preset's {name} is not shipped, so there is "
                            f"nothing to restudy; {ship_again}, or restore the folder from git")
        manifests[name] = read_manifest(folder, f"restore it from git (git checkout -- {folder}) or {ship_again}")
    return manifests


def restudy(settings: Settings, command: str, dest: Path = SHIPPED) -> list[Path]:
    """Recompute the studies of the shipped models of the settings' preset (not their training) and rewrite
    the shipped folders' study files and manifests (see the module docstring).  The manifests are read first
    (:func:`cnet_lib.images.runs.shipped.read_manifest`), and every study file before any shipped file is
    replaced: one that cannot be used stops with one sentence."""
    preset = settings.preset
    manifests = _shipped_manifests(preset, dest)
    runs = trained_runs(settings, use_shipped=True, verbose=True, progress=False)
    own = [name for name, run in runs.items() if not run.shipped]
    if own:
        raise ValueError(f"{', '.join(own)} did not come from the shipped models (a finished run of your own "
                         "was found first); give --root an empty folder")
    manifestation.run(runs, verbose=True)
    dev = settings.device
    studies = {name: [manifestation.sweep_cache(run, sweep_grid(preset), dev)[0]] for name, run in runs.items()}
    studies[next(iter(runs))].append(robustness.study.study_file(runs))
    studies[next(iter(runs))].append(adaptive.study_for_shipping(runs, dev))
    seconds = {name: {f.name: study_seconds(f) for f in files} for name, files in studies.items()}
    written = []
    for name, run in runs.items():
        folder, manifest = dest / f"{preset}-{name}", manifests[name]
        for old in folder.iterdir():
            if old.name.startswith(STUDY_PREFIXES):
                old.unlink()
        for f in studies[name]:
            copy_run_file(f, folder / f.name)
        manifest["studies"] = {
            "command": command, "machine": environment(dev),
            "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "seconds": seconds[name],
        }
        manifest["files"] = {f.name: file_digest(f) for f in sorted(folder.iterdir()) if f.name != MANIFEST}
        atomic_write_text(folder / MANIFEST, json.dumps(manifest, indent=1))
        written.append(folder)
        print(f"restudied {name}: {folder} ({', '.join(f.name for f in studies[name])})")
    return written


INTERRUPTED = "interrupted; what was trained is kept in the runs folder: run the same command again"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options: the preset, what the data is, train or --restudy, where to train, the device."""
    p.add_argument("preset")
    p.add_argument("--data-description", help="what the data is, in words (goes into the manifest; needed unless "
                   "--restudy)")
    p.add_argument("--restudy", action="store_true", help="recompute the studies of the shipped models, not their training")
    p.add_argument("--controls", action="store_true", help="ship the preset's control runs (RK4-classic at fixed depth, "
                   "Euler refined: the other cells of integrator x refinement) with their sweeps, not its two main runs")
    p.add_argument("--weights", default="float32", choices=list(WEIGHTS),
                   help="how the shipped checkpoints store their weights (loaded as float32 in every case): float32 ships "
                   "the training checkpoint as it is; float16 or bfloat16 ship the weights alone, rounded, a quarter of "
                   "the bytes, and the studies are computed from the rounded weights")
    p.add_argument("--root", help="runs root to train into (default: $CNET_RUNS_DIR, else ~/.cache/cnet_lib/runs)")
    p.add_argument("--device", default="cpu")


def run(args: argparse.Namespace) -> int:
    """Ship (or restudy) the preset's models; 0 when done."""
    if not args.restudy and not args.data_description:
        raise UsageError("--data-description is needed to ship newly trained models")
    if args.restudy and args.weights != "float32":
        raise UsageError("--restudy keeps the shipped checkpoints as they are; to store them otherwise, ship again "
                         "with --weights")
    if args.restudy and args.controls:
        raise UsageError("--restudy recomputes the main runs' studies; the control runs ship with their sweep only "
                         "(ship them again with --controls)")
    settings = Settings.from_environment(preset=args.preset, runs_dir=args.root, device=args.device)
    command = (f"CNET_DATA_DIR=<the folder {settings.data_dir.name}> python -m cnet_lib ship "
               + " ".join(shlex.quote(a) for a in args.argv))
    if args.restudy:
        restudy(settings, command)
    else:
        ship(settings, args.data_description, command, controls=args.controls, weights=args.weights)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command alone (:func:`cnet_lib.cli.command_line.command_main`); returns its exit status (0 done,
    1 an error said in one line, 2 a wrong option, 130 interrupted)."""
    return command_main(sys.modules[__name__], argv)
