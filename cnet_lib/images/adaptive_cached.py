"""The adaptive-step study of the trained runs (:mod:`cnet_lib.images.adaptive_steps`), computed once and cached
beside the first run's checkpoint, as the sweeps and the robustness study are (:mod:`cnet_lib.images.cached_studies`).

The cache file ``adaptive-<hash>.json`` is named by a hash of everything its numbers depend on: every
checkpoint's SHA-256 (recorded when the model was loaded or trained), the whole grid, the test split, the
data set and the device type; it records that key, and a file whose key differs, or that is damaged, is
set aside and computed again (:mod:`cnet_lib.runtime.json_cache`).  The ``cpu`` preset's study ships
beside the shipped models (``python -m cnet_lib ship cpu --restudy``), so a chapter loads it in seconds.
"""
from __future__ import annotations

import json
import time
from typing import Mapping, Optional

from ..runtime.device import environment, resolve_device
from ..runtime.files import shown_path
from ..runtime.json_cache import keyed, read_cache, write_cache
from ..runtime.locks import folder_lock
from ..runtime.memory import out_of_memory_hint
from .adaptive_steps import adaptive_grid, adaptive_study, check_adaptive_grid
from .checks import check_study_inputs
from .run_folders import short_hash
from .study_inputs import study_data
from .study_run import StudyRun

__all__ = ["ADAPTIVE_PREFIX", "adaptive_cache", "adaptive_study_path", "adaptive_runs", "adaptive_provenance"]

ADAPTIVE_PREFIX = "adaptive-"
"""The cache file's name starts with this (the ship command copies such files)."""


def adaptive_cache(runs: Mapping[str, StudyRun], grid: Mapping, device) -> tuple:
    """``(path, key)`` of the cached study of ``runs`` over ``grid`` on ``device`` (a torch.device); the file
    lives beside the first run's checkpoint."""
    names = list(runs)
    first = runs[names[0]].config
    key = {"checkpoints": {n: runs[n].checkpoint_digest[:12] for n in names}, "grid": dict(grid),
           "n_test": first.n_test, "seed": first.seed, "dataset": first.dataset, "device": device.type}
    return runs[names[0]].out_dir / f"{ADAPTIVE_PREFIX}{short_hash(key, 12)}.json", key


def _checked_grid(runs: Mapping[str, StudyRun], grid: Optional[Mapping]) -> dict:
    """The grid (default: the first run's preset's), checked, as the cache key holds it."""
    first = runs[next(iter(runs))]
    g = check_adaptive_grid(grid if grid is not None else adaptive_grid(first.config.preset))
    return {**g, "pairs": list(g["pairs"]), "tolerances": list(g["tolerances"])}


def _device(runs: Mapping[str, StudyRun], device):
    first = runs[next(iter(runs))]
    return resolve_device(device) if device is not None else resolve_device(first.settings.device)


def adaptive_study_path(runs: Mapping[str, StudyRun], grid: Optional[Mapping] = None, device=None):
    """The cache file :func:`adaptive_runs` reads and writes for these arguments (the ship command copies it)."""
    check_study_inputs(runs)
    return adaptive_cache(runs, _checked_grid(runs, grid), _device(runs, device))[0]


def adaptive_provenance(cached: Mapping) -> str:
    """Where, when and in how long a cached study was computed, in words."""
    env = cached.get("environment") or {}
    where = env.get("device_name") or env.get("device") or "an unrecorded machine"
    when = (cached.get("created_utc") or "")[:10] or "an unrecorded date"
    return f"computed on {where}, {when}, in {cached.get('seconds', 0):.0f} s"


def adaptive_runs(runs: Mapping[str, StudyRun], grid: Optional[Mapping] = None, *, device=None, verbose: bool = True,
                  progress: bool = False) -> dict:
    """The adaptive-step study of ``runs`` (all on the same test images), computed once and cached (see the
    module doc): the dict of :func:`cnet_lib.images.adaptive_steps.adaptive_study`, with ``"environment"``,
    ``"seconds"`` and ``"created_utc"``.  ``grid`` defaults to the preset's (:data:`ADAPTIVE_GRIDS`) and is
    checked first; ``progress`` prints a line per evaluation."""
    names = check_study_inputs(runs)
    first = runs[names[0]]
    g, dev = _checked_grid(runs, grid), _device(runs, device)
    path, key = adaptive_cache(runs, g, dev)
    what = "the adaptive-step study"
    with folder_lock(first.out_dir, "computing the adaptive-step study", required=False):
        cached = read_cache(path, what, keyed(key, "runs", "labels", "n"))
        if cached is not None:
            if verbose:
                print(f"adaptive-step study loaded from {shown_path(path)} ({adaptive_provenance(cached)})")
            return cached
        data = study_data(first.config, first.settings, dev, with_train=False)
        t0 = time.perf_counter()
        say = (lambda line: print(f"  {line}", flush=True)) if progress else None
        with out_of_memory_hint(dev, "computing the adaptive-step study", g["batch_size"]):
            study = adaptive_study({n: runs[n].model.to(dev) for n in names}, data.test_x, data.test_y, data.mean,
                                   data.std, g, threads=first.config.threads, progress=say)
        study.update(key=key, seconds=time.perf_counter() - t0, environment=environment(dev),
                     created_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        kept = write_cache(path, json.dumps(study), what)
    if verbose:
        n_eval = sum(len(r["rows"]) for r in study["runs"].values())
        print(f"adaptive-step study: {n_eval} evaluations on {study['n']} test images in {study['seconds']:.1f} s"
              + (f" (cached in {shown_path(path)})" if kept else ""))
    return study
