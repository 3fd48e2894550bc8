"""The studies of the trained runs, computed once and cached beside their checkpoints: the
manifestation sweeps (:func:`sweep_runs`) and the robustness study (:func:`robustness_runs`).

A cache file is named by a hash of what its numbers depend on: the checkpoint files (the SHA-256
recorded when each model was loaded or trained, so the numbers and the key always describe the same
model), the grid, the test split and the device type (the run folder already holds the data folder's
hash), and it records that key.  A cache a shipped model brought along is used the same way, and
the message says where it was computed.

The run folder is locked while a cache is looked up, computed and written: a second process waits
and then reads what the first one wrote.  A cache that is cut off, not JSON or of an older format is
set aside (``<name>.damaged-<time>``) and computed again; one that cannot be written (a read-only
runs folder, a full disk) is said so in one sentence, and the results are returned all the same.
"""
from __future__ import annotations

import json
import time
from typing import Mapping, Optional

from ..core.validation import check_int
from ..runtime.device import amp_dtype, environment, resolve_device
from ..runtime.files import shown_path
from ..runtime.json_cache import keyed, read_cache, write_cache
from ..runtime.locks import folder_lock
from ..runtime.memory import out_of_memory_hint
from .checks import check_robustness_grid, check_study_inputs
from .image_presets import robustness_grid, sweep_grid
from .manifestations import fit_grid, manifestation_sweep
from .robustness_conditions import conditions_from_json, conditions_to_json, robustness_study
from .run_folders import short_hash
from .study_inputs import study_data
from .study_run import StudyRun

__all__ = ["sweep_runs", "sweep_cache", "ROBUSTNESS_GRAPHS", "robustness_runs", "robustness_cache"]


def sweep_cache(run: StudyRun, grid: Mapping, device) -> tuple:
    """``(path, key)`` of the cached sweep of ``run`` over ``grid`` on ``device`` (a torch.device)."""
    cfg = run.config
    key = {"checkpoint": run.checkpoint_digest[:12], "grid": dict(grid), "n_test": cfg.n_test, "seed": cfg.seed,
           "dataset": cfg.dataset, "device": device.type, "amp": bool(cfg.amp and amp_dtype(device) is not None)}
    return run.out_dir / f"sweep-{short_hash(key, 12)}.json", key


def robustness_cache(runs: Mapping[str, StudyRun], grid: Mapping, device) -> tuple:
    """``(path, key)`` of the cached robustness study of ``runs`` over ``grid`` on ``device``; the
    file lives beside the first run's checkpoint."""
    names = list(runs)
    first = runs[names[0]]
    graphs = {k: v for k, v in ROBUSTNESS_GRAPHS.items() if v[0] in runs}
    key = {"checkpoints": {n: runs[n].checkpoint_digest[:12] for n in names}, "grid": dict(grid), "graphs": graphs,
           "n_test": first.config.n_test, "seed": first.config.seed, "dataset": first.config.dataset,
           "device": device.type}
    return first.out_dir / f"robustness-{short_hash(key, 12)}.json", key


def sweep_runs(runs: Mapping[str, StudyRun], grid: Optional[dict] = None, *, device=None, progress: bool = False,
               verbose: bool = True, batch_size: int = 500) -> dict[str, list[dict]]:
    """The manifestation sweep of every run, computed once and cached beside its checkpoint.

    The cache file is ``sweep-<hash>.json`` where the hash covers the checkpoint's SHA-256, the
    grid, the test split, the device type and whether bf16 autocast is used (inference times and
    bf16 accuracy differ on a GPU).  ``grid`` defaults to the preset's; compressions to an M at or
    above a model's own are left out for that model (:func:`cnet_lib.images.manifestations.fit_grid`), any
    other bad value is refused.  ``batch_size`` (images per evaluation batch, not part of the key)
    is what to lower when the device runs out of memory; the error says to what.
    """
    check_int("batch_size", batch_size, low=1, example=500)
    check_study_inputs(runs)
    out = {}
    for name, run in runs.items():
        cfg = run.config
        g = dict(grid) if grid is not None else sweep_grid(cfg.preset)
        dev = resolve_device(device) if device is not None else next(run.model.parameters()).device
        path, key = sweep_cache(run, g, dev)
        what = f"{run.label}: the sweep"
        with folder_lock(run.out_dir, f"sweeping {run.label}", required=False):
            cached = read_cache(path, what, keyed(key, "rows"))
            shipped_bf16 = _shipped_bf16_sweep(run, key, dev) if cached is None else None
            if shipped_bf16 is not None:
                cached = read_cache(shipped_bf16[0], what, keyed(shipped_bf16[1], "rows"))
            if cached is not None:
                out[name] = cached["rows"]
                if verbose:
                    shown = shipped_bf16[0] if shipped_bf16 is not None else path
                    print(f"{run.label}: sweep loaded from {shown_path(shown)} ({_provenance(cached)})"
                          + (BF16_NOTE if shipped_bf16 is not None else ""))
                continue
            data = study_data(cfg, run.settings, dev, with_train=False)
            t0 = time.perf_counter()
            with out_of_memory_hint(dev, f"sweeping {run.label}", batch_size):
                rows = manifestation_sweep(run.model.to(dev), data.test_x, data.test_y, data.mean, data.std,
                                           amp=cfg.amp, progress=progress, batch_size=batch_size, graphs=cfg.cuda_graphs,
                                           threads=cfg.threads, **fit_grid(g, run.model))
            seconds = time.perf_counter() - t0
            payload = {"key": key, "run": name, "preset": cfg.preset, "n_test": len(data.test_y),
                       "environment": environment(dev), "seconds": seconds, "created_utc": _utc_now(), "rows": rows}
            kept = write_cache(path, json.dumps(payload, indent=1), what)
        if verbose:
            print(f"{run.label}: swept {len(rows)} evaluations on {len(data.test_y)} test images in {seconds:.1f} s"
                  + (f" (cached in {shown_path(path)})" if kept else ""))
        out[name] = rows
    return out


BF16_NOTE = ("; computed with bf16 autocast, which this GPU lacks: the sweep shipped with the book is shown instead of "
             "minutes of recomputing it in float32; a model you train yourself is swept here")


def _shipped_bf16_sweep(run: StudyRun, key: Mapping, dev) -> Optional[tuple]:
    """``(path, key)`` of the sweep shipped with a model that was swept with bf16 autocast, for a CUDA GPU
    without bf16 (a T4), whose own key says float32; ``None`` for any other run or device."""
    if not (run.shipped and dev.type == "cuda" and not key["amp"] and run.config.amp):
        return None
    alt = {**key, "amp": True}
    return run.out_dir / f"sweep-{short_hash(alt, 12)}.json", alt


# --------------------------------------------------------------------------- robustness, cached
ROBUSTNESS_GRAPHS = {"rk4_refined": ("rk4_refined", None, None), "euler_fixed": ("euler_fixed", None, None),
                     "euler_fixed on rk4_classic": ("euler_fixed", "rk4_classic", None)}
"""The graphs of the robustness study: each model on its own graph, and the Euler model on a
higher-order graph (RK4-classic at its own N_t)."""


def robustness_runs(runs: Mapping[str, StudyRun], grid: Optional[dict] = None, *, device=None, verbose: bool = True,
                    progress: bool = False, batch_size: int = 500) -> dict:
    """The robustness study (:mod:`cnet_lib.cli.robustness`) of the preset's models on the same test
    images, computed once and cached beside the first run's checkpoint, keyed by both checkpoints'
    SHA-256, the grid, the graphs, the test split and the device: ``{label: [Condition]}``.  The grid
    is checked first (:func:`cnet_lib.images.checks.check_robustness_grid`); ``batch_size`` is what to
    lower when the device runs out of memory."""
    names = check_study_inputs(runs)
    check_int("batch_size", batch_size, low=1, example=500)
    first = runs[names[0]]
    g = check_robustness_grid(grid if grid is not None else robustness_grid(first.config.preset))
    graphs = {k: v for k, v in ROBUSTNESS_GRAPHS.items() if v[0] in runs}
    dev = resolve_device(device) if device is not None else next(first.model.parameters()).device
    path, key = robustness_cache(runs, g, dev)
    what = "the robustness study"
    with folder_lock(first.out_dir, "computing the robustness study", required=False):
        cached = read_cache(path, what, keyed(key, "study"))
        if cached is not None:
            try:
                study = {label: conditions_from_json(rows) for label, rows in cached["study"].items()}
            except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
                read_cache(path, what, lambda obj: f"its conditions cannot be read ({type(err).__name__}: {err})")
            else:
                if verbose:
                    print(f"robustness study loaded from {shown_path(path)} ({_provenance(cached)})")
                return study
        data = study_data(first.config, first.settings, dev, with_train=False)
        t0 = time.perf_counter()
        say = (lambda what: print(f"  {what}", flush=True)) if progress else None
        with out_of_memory_hint(dev, "computing the robustness study", batch_size):
            study = robustness_study({n: runs[n].model.to(dev) for n in names}, data.test_x, data.test_y, data.mean,
                                     data.std, graphs=graphs, grid=g, batch_size=batch_size, progress=say)
        seconds = time.perf_counter() - t0
        kept = write_cache(path, json.dumps({"key": key, "seconds": seconds, "n_test": len(data.test_y),
                                             "environment": environment(dev), "created_utc": _utc_now(),
                                             "study": {k: conditions_to_json(v) for k, v in study.items()}}), what)
    if verbose:
        print(f"robustness study: {sum(len(c.correct) for v in study.values() for c in v)} evaluations on "
              f"{len(data.test_y)} test images in {seconds:.1f} s" + (f" (cached in {shown_path(path)})" if kept else ""))
    return study


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _provenance(cached: Mapping) -> str:
    """Where and when cached results were computed, in words."""
    env = cached.get("environment") or {}
    where = env.get("device_name") or env.get("device") or "an unrecorded machine"
    when = (cached.get("created_utc") or "")[:10] or "an unrecorded date"
    return f"computed on {where}, {when}, in {cached.get('seconds', 0):.0f} s"
