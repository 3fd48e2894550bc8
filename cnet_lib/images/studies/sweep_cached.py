"""The manifestation sweeps of the trained runs (:mod:`.sweep_measure`), computed once and cached beside each
run's checkpoint (:func:`sweep_runs`, through :func:`cnet_lib.images.studies.study_cache.cached_study`).

A sweep's cache file ``sweep-<hash>.json`` is named by a hash of what its numbers depend on: the checkpoint
(the SHA-256 recorded when the model was loaded or trained, so the numbers and the key always describe the
same model), the grid, the test split, the device type and whether bf16 autocast is used (the run folder
already holds the data folder's hash), and it records that key.  A cache a shipped model brought along is
used the same way, and the message says where it was computed.
"""
from __future__ import annotations

from typing import Mapping, Optional

from ...core.validation import check_int
from ...runtime.device import amp_dtype
from ..runs.image_presets import sweep_grid
from ..runs.run_folders import short_hash
from ..runs.study_inputs import study_data
from ..runs.study_run import StudyRun, study_device
from .checks import check_study_inputs
from .shipped_studies import announce_recompute, shipped_stand_ins
from .study_cache import Described, StudyFile, cached_study
from .sweep_measure import check_grid_keys, checked_rows, fit_grid, manifestation_sweep

__all__ = ["SWEEP_PREFIX", "BF16_NOTE", "sweep_cache", "sweep_runs"]

SWEEP_PREFIX = "sweep-"
"""The cache file's name starts with this (the ship command copies such files)."""

BF16_NOTE = ("; computed with bf16 autocast, which this GPU lacks: the sweep shipped with the book is shown instead of "
             "minutes of recomputing it in float32; a model you train yourself is swept here")
"""Said after "loaded from ..." when a GPU without bf16 shows the bf16 sweep a shipped model brought along."""


def sweep_cache(run: StudyRun, grid: Mapping, device) -> tuple:
    """``(path, key)`` of the cached sweep of ``run`` over ``grid`` on ``device`` (a torch.device)."""
    cfg = run.config
    key = {"checkpoint": run.checkpoint_digest[:12], "grid": dict(grid), "n_test": cfg.n_test, "seed": cfg.seed,
           "dataset": cfg.dataset, "device": device.type, "amp": bool(cfg.amp and amp_dtype(device) is not None)}
    return run.out_dir / f"{SWEEP_PREFIX}{short_hash(key, 12)}.json", key


def _shipped_bf16_sweep(run: StudyRun, key: Mapping, dev) -> tuple:
    """The sweep shipped with a model that was swept with bf16 autocast, for a CUDA GPU without bf16 (a T4),
    whose own key says float32: ``(StudyFile,)``; none for any other run or device."""
    if not (run.shipped and dev.type == "cuda" and not key["amp"] and run.config.amp):
        return ()
    alt = {**key, "amp": True}
    return (StudyFile(run.out_dir / f"{SWEEP_PREFIX}{short_hash(alt, 12)}.json", alt, BF16_NOTE),)


def _shipped_sweeps(run: StudyRun, key: Mapping, dev) -> tuple:
    """Every sweep shipped with ``run`` that measured what ``key`` asks for, on whatever device it ran
    (:func:`cnet_lib.images.studies.shipped_studies.shipped_stand_ins`), the bf16 one for a GPU without bf16 first."""
    first = _shipped_bf16_sweep(run, key, dev)
    return first + tuple(f for f in shipped_stand_ins(run, SWEEP_PREFIX, key) if f.path not in {g.path for g in first})


def sweep_runs(runs: Mapping[str, StudyRun], grid: Optional[dict] = None, *, device=None, progress: bool = False,
               verbose: bool = True, batch_size: int = 500) -> dict[str, list[dict]]:
    """The manifestation sweep of every run, computed once and cached beside its checkpoint.

    The cache file is ``sweep-<hash>.json`` where the hash covers the checkpoint's SHA-256, the
    grid, the test split, the device type and whether bf16 autocast is used (inference times and
    bf16 accuracy differ on a GPU).  ``grid`` defaults to the preset's; compressions to an M at or
    above a model's own are left out for that model (:func:`cnet_lib.images.studies.sweep_measure.fit_grid`),
    any other bad value is refused.  ``device`` defaults to the session's (:func:`study_device`).
    ``batch_size`` (images per evaluation batch, not part of the key) is what to lower when the device runs
    out of memory; the error says to what.
    """
    check_int("batch_size", batch_size, low=1, example=500)
    check_study_inputs(runs)
    out = {}
    for name, run in runs.items():
        cfg = run.config
        g = check_grid_keys(grid) if grid is not None else sweep_grid(cfg.preset)
        dev = study_device(run, device)
        path, key = sweep_cache(run, g, dev)

        def compute(run=run, name=name, cfg=cfg, g=g, dev=dev):
            announce_recompute(run, SWEEP_PREFIX, f"{run.label}: the sweep")
            data = study_data(cfg, run.settings, dev, with_train=False)
            rows = manifestation_sweep(run.model.to(dev), data.test_x, data.test_y, data.mean, data.std,
                                       amp=cfg.amp, progress=progress, batch_size=batch_size, graphs=cfg.cuda_graphs,
                                       threads=cfg.threads, **fit_grid(g, run.model))
            return rows, {"run": name, "preset": cfg.preset, "n_test": len(data.test_y), "rows": rows}

        described = Described(f"{run.label}: the sweep", f"{run.label}: sweep", f"sweeping {run.label}")
        done = cached_study(StudyFile(path, key), compute, described, fields=("rows",), device=dev,
                            batch_size=batch_size, read=lambda record: checked_rows(record["rows"]),
                            also=_shipped_sweeps(run, key, dev), verbose=verbose, indent=1)
        if verbose and done.computed:
            print(f"{run.label}: swept {len(done.value)} evaluations on {done.record['n_test']} held-out images in "
                  f"{done.record['seconds']:.1f} s" + (" (kept for the next time)" if done.kept else ""))
        out[name] = done.value
    return out
