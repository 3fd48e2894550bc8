"""The studies of the trained runs, computed once and cached beside their checkpoints: the
manifestation sweeps (:func:`sweep_runs`) and the robustness study (:func:`robustness_runs`).

A cache file is named by a hash of what its numbers depend on: the checkpoint files, the grid, the
test split and the device type (the run folder already holds the data folder's hash).  A cache a
shipped model brought along is used the same way, and the message says where it was computed.
"""
from __future__ import annotations

import json
import time
from typing import Mapping, Optional

from ..runtime.checkpoint import atomic_write_text
from ..runtime.device import amp_dtype, environment, resolve_device
from .presets import robustness_grid, sweep_grid
from .robustness import conditions_from_json, conditions_to_json, robustness_study
from .runs import StudyRun, file_hash, short_hash, study_data
from .sweep import manifestation_sweep, write_sweep

__all__ = ["sweep_runs", "sweep_cache", "ROBUSTNESS_GRAPHS", "robustness_runs", "robustness_cache"]


def sweep_cache(run: StudyRun, grid: Mapping, device) -> tuple:
    """``(path, key)`` of the cached sweep of ``run`` over ``grid`` on ``device`` (a torch.device)."""
    cfg = run.config
    key = {"checkpoint": file_hash(run.checkpoint), "grid": dict(grid), "n_test": cfg.n_test, "seed": cfg.seed,
           "dataset": cfg.dataset, "device": device.type, "amp": bool(cfg.amp and amp_dtype(device) is not None)}
    return run.out_dir / f"sweep-{short_hash(key, 12)}.json", key


def robustness_cache(runs: Mapping[str, StudyRun], grid: Mapping, device) -> tuple:
    """``(path, key)`` of the cached robustness study of ``runs`` over ``grid`` on ``device``; the
    file lives beside the first run's checkpoint."""
    names = list(runs)
    first = runs[names[0]]
    graphs = {k: v for k, v in ROBUSTNESS_GRAPHS.items() if v[0] in runs}
    key = {"checkpoints": {n: file_hash(runs[n].checkpoint) for n in names}, "grid": dict(grid), "graphs": graphs,
           "n_test": first.config.n_test, "seed": first.config.seed, "dataset": first.config.dataset,
           "device": device.type}
    return first.out_dir / f"robustness-{short_hash(key, 12)}.json", key


def sweep_runs(runs: Mapping[str, StudyRun], grid: Optional[dict] = None, *, device=None, progress: bool = False,
               verbose: bool = True) -> dict[str, list[dict]]:
    """The manifestation sweep of every run, computed once and cached beside its checkpoint.

    The cache file is ``sweep-<hash>.json`` where the hash covers the checkpoint file's hash, the
    grid, the test split, the device type and whether bf16 autocast is used (inference times and
    bf16 accuracy differ on a GPU).
    """
    out = {}
    for name, run in runs.items():
        cfg = run.config
        g = dict(grid) if grid is not None else sweep_grid(cfg.preset)
        dev = resolve_device(device) if device is not None else next(run.model.parameters()).device
        path, key = sweep_cache(run, g, dev)
        if path.is_file():
            cached = json.loads(path.read_text())
            out[name] = cached["rows"]
            if verbose:
                print(f"{run.label}: sweep loaded from {path} ({_provenance(cached)})")
            continue
        data = study_data(cfg, dev, with_train=False)
        t0 = time.perf_counter()
        rows = manifestation_sweep(run.model.to(dev), data.test_x, data.test_y, data.mean, data.std,
                                   amp=cfg.amp, progress=progress, **g)
        write_sweep(path, rows, key=key, run=name, preset=cfg.preset, n_test=len(data.test_y), environment=environment(dev),
                    seconds=time.perf_counter() - t0)
        if verbose:
            print(f"{run.label}: swept {len(rows)} evaluations on {len(data.test_y)} test images in "
                  f"{time.perf_counter() - t0:.1f} s (cached in {path})")
        out[name] = rows
    return out


# --------------------------------------------------------------------------- robustness, cached
ROBUSTNESS_GRAPHS = {"rk4_refined": ("rk4_refined", None, None), "euler_fixed": ("euler_fixed", None, None),
                     "euler_fixed on rk4_classic": ("euler_fixed", "rk4_classic", None)}
"""The graphs of the robustness study: each model on its own graph, and the Euler model on a
higher-order graph (RK4-classic at its own N_t)."""


def robustness_runs(runs: Mapping[str, StudyRun], grid: Optional[dict] = None, *, device=None, verbose: bool = True,
                    progress: bool = False) -> dict:
    """The robustness study (:mod:`cnet_lib.robustness`) of the preset's models on the same test
    images, computed once and cached beside the first run's checkpoint, keyed by a hash of both
    checkpoint files, the grid, the graphs, the test split and the device: ``{label: [Condition]}``."""
    names = list(runs)
    first = runs[names[0]]
    g = dict(grid) if grid is not None else robustness_grid(first.config.preset)
    graphs = {k: v for k, v in ROBUSTNESS_GRAPHS.items() if v[0] in runs}
    dev = resolve_device(device) if device is not None else next(first.model.parameters()).device
    path, key = robustness_cache(runs, g, dev)
    if path.is_file():
        cached = json.loads(path.read_text())
        if verbose:
            print(f"robustness study loaded from {path} ({_provenance(cached)})")
        return {label: conditions_from_json(rows) for label, rows in cached["study"].items()}
    data = study_data(first.config, dev, with_train=False)
    t0 = time.perf_counter()
    say = (lambda what: print(f"  {what}", flush=True)) if progress else None
    study = robustness_study({n: runs[n].model.to(dev) for n in names}, data.test_x, data.test_y, data.mean, data.std,
                             graphs=graphs, grid=g, progress=say)
    seconds = time.perf_counter() - t0
    atomic_write_text(path, json.dumps({"key": key, "seconds": seconds, "n_test": len(data.test_y),
                                        "environment": environment(dev), "created_utc": _utc_now(),
                                        "study": {k: conditions_to_json(v) for k, v in study.items()}}))
    if verbose:
        print(f"robustness study: {sum(len(c.correct) for v in study.values() for c in v)} evaluations on "
              f"{len(data.test_y)} test images in {seconds:.1f} s (cached in {path})")
    return study


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _provenance(cached: Mapping) -> str:
    """Where and when cached results were computed, in words."""
    env = cached.get("environment") or {}
    where = env.get("device_name") or env.get("device") or "an unrecorded machine"
    when = (cached.get("created_utc") or "")[:10] or "an unrecorded date"
    return f"computed on {where}, {when}, in {cached.get('seconds', 0):.0f} s"
