"""``python -m cnet_lib ship PRESET``: train a preset's image models and ship them with the book.

Trains both runs of the preset with the project's own training (:func:`cnet_lib.images.runs.run_store.trained_runs`,
never from a shipped model), computes their manifestation sweeps and the robustness study, and copies
everything a chapter reads (and the other training seeds' numbers, ``seeds.json``, where the run folder
holds them: :mod:`cnet_lib.images.studies.seed_cached`) into ``cnet_lib/shipped/<preset>-<run>/`` with a ``manifest.json``: the
exact command, the run's identity hash (:func:`cnet_lib.images.runs.run_folders.identity_hash`; a changed preset
makes the shipped model stale, and a test fails), the machine, the training time, the accuracies, the
data it was trained on and the SHA-256 of every file.  The chapters then load these models instead of
training them, and say so.

    CNET_DATA_DIR=../shared/data-large python -m cnet_lib ship cpu --data-description "..."

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
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

from ..images.runs.image_presets import robustness_grid, sweep_grid
from ..images.runs.run_folders import identity_hash
from ..images.runs.run_store import trained_runs
from ..images.runs.shipped import MANIFEST, SHIPPED
from ..images.runs.theta_record import SNAPSHOTS
from ..images.studies.adaptive_cached import ADAPTIVE_PREFIX, adaptive_runs, adaptive_study_path
from ..images.studies.robustness_cached import ROBUSTNESS_PREFIX, robustness_cache, robustness_runs
from ..images.studies.seed_cached import SEEDS_FILE
from ..images.studies.sweep_cached import SWEEP_PREFIX, sweep_cache, sweep_runs
from ..images.training.train_state import CHECKPOINT, RESULTS
from ..runtime.checkpoint import atomic_write_text, file_digest
from ..runtime.device import environment
from ..runtime.settings import Settings
from .command_line import UsageError, command_main

__all__ = ["SUMMARY", "INTERRUPTED", "ship", "restudy", "add_arguments", "run", "main"]

SUMMARY = "Train a preset's image models (or --restudy them) and ship them with the book in cnet_lib/shipped/"

STUDY_PREFIXES = (SWEEP_PREFIX, ROBUSTNESS_PREFIX, ADAPTIVE_PREFIX)


def ship(settings: Settings, data_description: str, command: str, dest: Path = SHIPPED) -> list[Path]:
    """Train (or reload from the settings' runs folder), sweep and study the runs of the settings' preset, and
    write the shipped folders."""
    preset = settings.preset
    t0 = time.perf_counter()
    runs = trained_runs(settings, use_shipped=False, verbose=True, progress=False)
    sweeps_t0 = time.perf_counter()
    sweep_runs(runs, verbose=True)
    robustness_runs(runs, verbose=True, progress=True)
    finished = time.perf_counter()
    dev = settings.device
    studies = {name: [sweep_cache(run, sweep_grid(preset), dev)[0].name] for name, run in runs.items()}
    robustness_file = robustness_cache(runs, robustness_grid(preset), dev)[0]
    studies[next(iter(runs))].append(robustness_file.name)  # the study lives beside the first run
    adaptive_runs(runs, verbose=True, progress=True, device=dev)  # the adaptive-step study, beside it too
    studies[next(iter(runs))].append(adaptive_study_path(runs, device=dev).name)
    written = []
    for name, run in runs.items():
        folder = dest / f"{preset}-{name}"
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        # the current studies only, not stale caches; and the other training seeds' numbers where the run has them
        keep = [CHECKPOINT, RESULTS, SNAPSHOTS, *studies[name], SEEDS_FILE]
        for f in keep:
            if (run.out_dir / f).is_file():
                shutil.copyfile(run.out_dir / f, folder / f)
        results = json.loads((run.out_dir / RESULTS).read_text())
        manifest = {
            "preset": preset, "run": name, "identity_hash": identity_hash(run.config),
            "command": command,
            "data": {"folder": Path(run.config.data_dir).name, "description": data_description,
                     "n_train": run.config.n_train, "n_test": run.config.n_test},
            "machine": results.get("environment") or environment(run.config.device or "cpu"),
            "train_seconds": results.get("train_seconds_total"),
            "threads_per_epoch": [h.get("torch_threads") for h in run.history],
            "final_test_acc": run.final_accuracy,
            "history": [{k: h[k] for k in ("epoch", "n_steps", "train_loss", "test_acc", "train_seconds")}
                        for h in run.history],
            "sweeps_and_robustness_seconds": finished - sweeps_t0,
            "wall_seconds_of_this_command": finished - t0,
            "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "files": {f.name: file_digest(f) for f in sorted(folder.iterdir())},
        }
        atomic_write_text(folder / MANIFEST, json.dumps(manifest, indent=1))
        written.append(folder)
        print(f"shipped {name}: {folder} ({sum(f.stat().st_size for f in folder.iterdir()) / 1e6:.2f} MB)")
    return written


def _study_seconds(path: Path) -> Optional[float]:
    try:
        return float(json.loads(path.read_text()).get("seconds"))
    except (OSError, ValueError, TypeError):
        return None


def restudy(settings: Settings, command: str, dest: Path = SHIPPED) -> list[Path]:
    """Recompute the studies of the shipped models of the settings' preset (not their training) and rewrite
    the shipped folders' study files and manifests (see the module docstring)."""
    preset = settings.preset
    runs = trained_runs(settings, use_shipped=True, verbose=True, progress=False)
    own = [name for name, run in runs.items() if not run.shipped]
    if own:
        raise ValueError(f"{', '.join(own)} did not come from the shipped models (a finished run of your own "
                         "was found first); give --root an empty folder")
    sweep_runs(runs, verbose=True)
    robustness_runs(runs, verbose=True, progress=True)
    dev = settings.device
    studies = {name: [sweep_cache(run, sweep_grid(preset), dev)[0]] for name, run in runs.items()}
    studies[next(iter(runs))].append(robustness_cache(runs, robustness_grid(preset), dev)[0])
    adaptive_runs(runs, verbose=True, progress=True, device=dev)
    studies[next(iter(runs))].append(adaptive_study_path(runs, device=dev))
    written = []
    for name, run in runs.items():
        folder = dest / f"{preset}-{name}"
        manifest = json.loads((folder / MANIFEST).read_text())
        for old in folder.iterdir():
            if old.name.startswith(STUDY_PREFIXES):
                old.unlink()
        for f in studies[name]:
            shutil.copyfile(f, folder / f.name)
        manifest["studies"] = {
            "command": command, "machine": environment(dev),
            "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "seconds": {f.name: _study_seconds(f) for f in studies[name]},
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
    p.add_argument("--root", help="runs root to train into (default: $CNET_RUNS_DIR, else ~/.cache/cnet_lib/runs)")
    p.add_argument("--device", default="cpu")


def run(args: argparse.Namespace) -> int:
    """Ship (or restudy) the preset's models; 0 when done."""
    if not args.restudy and not args.data_description:
        raise UsageError("--data-description is needed to ship newly trained models")
    settings = Settings.from_environment(preset=args.preset, runs_dir=args.root, device=args.device)
    command = (f"CNET_DATA_DIR=<the folder {settings.data_dir.name}> python -m cnet_lib ship "
               + " ".join(shlex.quote(a) for a in args.argv))
    if args.restudy:
        restudy(settings, command)
    else:
        ship(settings, args.data_description, command)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command alone (:func:`cnet_lib.cli.command_line.command_main`); returns its exit status (0 done,
    1 an error said in one line, 2 a wrong option, 130 interrupted)."""
    return command_main(sys.modules[__name__], argv)
