"""The robustness study of the trained runs (:mod:`.robustness_measure`), computed once and cached beside the
first run's checkpoint (:func:`robustness_runs`, through :func:`cnet_lib.images.studies.study_cache.cached_study`).

The cache file ``robustness-<hash>.json`` is named by a hash of everything its numbers depend on: every
checkpoint's SHA-256 (recorded when the model was loaded or trained), the grid, the graphs, the test split,
the data set and the device type; it records that key.
"""
from __future__ import annotations

from typing import Mapping, Optional

from ...core.validation import check_int
from ...runtime.device import full_float32
from ..runs.image_presets import robustness_grid
from ..runs.run_folders import short_hash
from ..runs.study_inputs import study_data
from ..runs.study_run import StudyRun, study_device
from .checks import check_robustness_grid, check_study_inputs
from .robustness_measure import conditions_from_json, conditions_to_json, robustness_study
from .shipped_studies import announce_recompute, shipped_stand_ins
from .study_cache import Described, StudyFile, cached_study

__all__ = ["ROBUSTNESS_PREFIX", "ROBUSTNESS_GRAPHS", "robustness_cache", "robustness_runs"]

ROBUSTNESS_PREFIX = "robustness-"
"""The cache file's name starts with this (the ship command copies such files)."""

ROBUSTNESS_GRAPHS = {"rk4_refined": ("rk4_refined", None, None), "euler_fixed": ("euler_fixed", None, None),
                     "euler_fixed on rk4_classic": ("euler_fixed", "rk4_classic", None)}
"""The graphs of the robustness study: each model on its own graph, and the Euler model on a
higher-order graph (RK4-classic at its own N_t)."""

DESCRIBED = Described("the robustness study", "robustness study", "computing the robustness study")


def robustness_cache(runs: Mapping[str, StudyRun], grid: Mapping, device) -> tuple:
    """``(path, key)`` of the cached robustness study of ``runs`` over ``grid`` on ``device``; the
    file lives beside the first run's checkpoint."""
    names = list(runs)
    first = runs[names[0]]
    graphs = {k: v for k, v in ROBUSTNESS_GRAPHS.items() if v[0] in runs}
    key = {"checkpoints": {n: runs[n].checkpoint_digest[:12] for n in names}, "grid": dict(grid), "graphs": graphs,
           "n_test": first.config.n_test, "seed": first.config.seed, "dataset": first.config.dataset,
           "device": device.type}
    return first.out_dir / f"{ROBUSTNESS_PREFIX}{short_hash(key, 12)}.json", key


def robustness_runs(runs: Mapping[str, StudyRun], grid: Optional[dict] = None, *, device=None, verbose: bool = True,
                    progress: bool = False, batch_size: int = 500) -> dict:
    """The robustness study (:mod:`cnet_lib.cli.robustness`) of the preset's models on the same test
    images, computed once and cached beside the first run's checkpoint, keyed by both checkpoints'
    SHA-256, the grid, the graphs, the test split and the device: ``{label: [Condition]}``.  The grid
    is checked first (:func:`cnet_lib.images.studies.checks.check_robustness_grid`); ``device`` defaults to the
    session's (:func:`study_device`); ``batch_size`` is what to lower when the device runs out of memory."""
    names = check_study_inputs(runs)
    check_int("batch_size", batch_size, low=1, example=500)
    first = runs[names[0]]
    g = check_robustness_grid(grid if grid is not None else robustness_grid(first.config.preset))
    graphs = {k: v for k, v in ROBUSTNESS_GRAPHS.items() if v[0] in runs}
    dev = study_device(first, device)
    path, key = robustness_cache(runs, g, dev)

    def compute():
        announce_recompute(first, ROBUSTNESS_PREFIX, DESCRIBED.what)
        data = study_data(first.config, first.settings, dev, with_train=False)
        say = (lambda what: print(f"  {what}", flush=True)) if progress else None
        with full_float32():  # the chapter says float32: no TF32 convolutions on a GPU either
            study = robustness_study({n: runs[n].model.to(dev) for n in names}, data.test_x, data.test_y, data.mean,
                                     data.std, graphs=graphs, grid=g, batch_size=batch_size, progress=say)
        return study, {"n_test": len(data.test_y), "tf32": False,
                       "study": {k: conditions_to_json(v) for k, v in study.items()}}

    done = cached_study(StudyFile(path, key), compute, DESCRIBED, fields=("study",), device=dev, batch_size=batch_size,
                        read=lambda record: {label: conditions_from_json(rows) for label, rows in record["study"].items()},
                        also=shipped_stand_ins(first, ROBUSTNESS_PREFIX, key), verbose=verbose)
    if verbose and done.computed:
        print(f"robustness study: {sum(len(c.correct) for v in done.value.values() for c in v)} evaluations on "
              f"{done.record['n_test']} held-out images in {done.record['seconds']:.1f} s"
              + (" (kept for the next time)" if done.kept else ""))
    return done.value
