"""The adaptive-step study of the trained runs (:mod:`.adaptive_measure`), computed once and cached beside the
first run's checkpoint (:func:`adaptive_runs`, through :func:`cnet_lib.images.studies.study_cache.cached_study`),
as the sweeps and the robustness study are.

The cache file ``adaptive-<hash>.json`` is named by a hash of everything its numbers depend on: every
checkpoint's SHA-256 (recorded when the model was loaded or trained), the whole grid, the test split, the
data set and the device type; it records that key, and a file whose key differs, or that is damaged, is
set aside and computed again (:mod:`cnet_lib.runtime.json_cache`).  The ``cpu`` preset's study ships
beside the shipped models (``python -m cnet_lib ship cpu --restudy``), so a chapter loads it in seconds.
"""
from __future__ import annotations

from typing import Mapping, Optional

from ...runtime.device import full_float32
from ..runs.image_presets import adaptive_grid
from ..runs.run_folders import short_hash
from ..runs.study_inputs import study_data
from ..runs.study_run import StudyRun, study_device
from .adaptive_measure import adaptive_study, check_adaptive_grid
from .checks import check_study_inputs
from .shipped_studies import announce_recompute, shipped_stand_ins
from .study_cache import Described, StudyFile, cached_study

__all__ = ["ADAPTIVE_PREFIX", "checked_study", "adaptive_cache", "adaptive_key_grid", "adaptive_study_path",
           "adaptive_runs"]

ADAPTIVE_PREFIX = "adaptive-"
"""The cache file's name starts with this (the ship command copies such files)."""

DESCRIBED = Described("the adaptive-step study", "adaptive-step study", "computing the adaptive-step study")


def checked_study(record: Mapping) -> Mapping:
    """``record`` after checking that every run of it holds the rows the tables and figures read: a list of
    evaluations of a known kind, each with its accuracy and predictions, one of them the trained graph's; a
    ValueError (or KeyError, TypeError) says what is not (the runner then sets the file aside)."""
    for name, run in record["runs"].items():
        rows = run["rows"]
        for i, row in enumerate(rows):
            if row.get("kind") not in ("trained", "adaptive", "equal_cost") or not isinstance(row.get("pred"), str) \
                    or not isinstance(row.get("accuracy"), (int, float)):
                raise ValueError(f"row {i} of {str(name)[:40]} is not an evaluation")
        if not any(row["kind"] == "trained" for row in rows):
            raise ValueError(f"no row of {str(name)[:40]} is the trained graph's")
    return record


def adaptive_cache(runs: Mapping[str, StudyRun], grid: Mapping, device) -> tuple:
    """``(path, key)`` of the cached study of ``runs`` over ``grid`` on ``device`` (a torch.device); the file
    lives beside the first run's checkpoint."""
    names = list(runs)
    first = runs[names[0]].config
    key = {"checkpoints": {n: runs[n].checkpoint_digest[:12] for n in names}, "grid": dict(grid),
           "n_test": first.n_test, "seed": first.seed, "dataset": first.dataset, "device": device.type}
    return runs[names[0]].out_dir / f"{ADAPTIVE_PREFIX}{short_hash(key, 12)}.json", key


def adaptive_key_grid(runs: Mapping[str, StudyRun], grid: Optional[Mapping]) -> dict:
    """The grid (default: the first run's preset's), checked, as the cache key holds it."""
    first = runs[next(iter(runs))]
    g = check_adaptive_grid(grid if grid is not None else adaptive_grid(first.config.preset))
    return {**g, "pairs": list(g["pairs"]), "tolerances": list(g["tolerances"])}


def adaptive_study_path(runs: Mapping[str, StudyRun], grid: Optional[Mapping] = None, device=None):
    """The cache file :func:`adaptive_runs` reads and writes for these arguments (the ship command copies it)."""
    check_study_inputs(runs)
    return adaptive_cache(runs, adaptive_key_grid(runs, grid), study_device(runs[next(iter(runs))], device))[0]


def adaptive_runs(runs: Mapping[str, StudyRun], grid: Optional[Mapping] = None, *, device=None, verbose: bool = True,
                  progress: bool = False) -> dict:
    """The adaptive-step study of ``runs`` (all on the same held-out images), computed once and cached (see the
    module doc): the dict of :func:`cnet_lib.images.studies.adaptive_measure.adaptive_study`, with ``"key"``,
    ``"environment"``, ``"seconds"`` and ``"created_utc"``.  ``grid`` defaults to the preset's
    (:func:`cnet_lib.images.runs.image_presets.adaptive_grid`) and is checked first; ``device`` defaults to the
    session's (:func:`study_device`); ``progress`` prints a line per evaluation."""
    names = check_study_inputs(runs)
    first = runs[names[0]]
    g, dev = adaptive_key_grid(runs, grid), study_device(first, device)
    path, key = adaptive_cache(runs, g, dev)

    def compute():
        announce_recompute(first, ADAPTIVE_PREFIX, DESCRIBED.what)
        data = study_data(first.config, first.settings, dev, with_train=False)
        say = (lambda line: print(f"  {line}", flush=True)) if progress else None
        with full_float32():  # the chapter says float32: no TF32 convolutions on a GPU either
            study = adaptive_study({n: runs[n].model.to(dev) for n in names}, data.test_x, data.test_y, data.mean,
                                   data.std, g, threads=first.config.threads, progress=say)
        return None, {**study, "tf32": False}

    done = cached_study(StudyFile(path, key), compute, DESCRIBED, fields=("runs", "labels", "n"), device=dev,
                        batch_size=g["batch_size"], read=checked_study,
                        also=shipped_stand_ins(first, ADAPTIVE_PREFIX, key), verbose=verbose)
    study = done.record
    if verbose and done.computed:
        n_eval = sum(len(r["rows"]) for r in study["runs"].values())
        print(f"adaptive-step study: {n_eval} evaluations on {study['n']} held-out images in {study['seconds']:.1f} s"
              + (" (kept for the next time)" if done.kept else ""))
    return study
