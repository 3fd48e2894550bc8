"""Checks of the image study's inputs before any model is evaluated, in the style of
:mod:`cnet_lib.core.validation`: a robustness grid, the runs given to a study or a live app, and
image counts.

A robustness grid (:func:`cnet_lib.images.runs.image_presets.robustness_grid`, ``--sigmas`` and friends in
``python -m cnet_lib robustness``) names noise levels, seeds, bit widths and formats.
:func:`check_robustness_grid` refuses what would fail later or mean nothing: a level that is not a
finite number >= 0, a seed or a bit width that is not an integer, fewer than 2 bits, and a random
perturbation without a seed to draw it with (an empty seed list).  Keys it does not know are left
to the study.  :func:`check_study_inputs` refuses an empty set of runs and image counts below 1.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

from ...core.validation import check_float, check_int, check_ints
from .robustness_perturbations import FLOAT_FORMATS, QUANTIZATION_SCHEMES

__all__ = ["check_robustness_grid", "check_study_inputs"]

_LEVELS = {"sigmas": ("seeds", "weight noise"), "input_noise": ("noise_seeds", "input noise")}


def _levels(name: str, values: Any) -> list:
    try:
        items = list(values)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of numbers, got {values!r} (e.g. {name}=(0.1, 0.3))") from None
    return [check_float(f"{name}[{i}]", v, low=0, example=0.1) for i, v in enumerate(items)]


def check_robustness_grid(grid: Mapping[str, Any]) -> dict:
    """``grid`` as a dict, after checking every key it holds among ``sigmas``, ``seeds``,
    ``input_noise``, ``noise_seeds``, ``bits``, ``quantization`` and ``float_formats``; a TypeError or
    ValueError names the key otherwise."""
    grid = dict(grid)
    for levels, (seeds, what) in _LEVELS.items():
        if levels in grid:
            _levels(levels, grid[levels])
        if seeds in grid:
            check_ints(seeds, grid[seeds], example=(0, 1, 2))
        if grid.get(levels) and seeds in grid and not list(grid[seeds]):
            raise ValueError(f"{seeds} is empty, but {what} is drawn at random for every level of {levels}: give at "
                             f"least one seed (e.g. {seeds}=(0, 1, 2)), or no levels ({levels}=())")
    if "bits" in grid:
        check_ints("bits", grid["bits"], low=2, example=(8, 4))
    for key, known in (("quantization", QUANTIZATION_SCHEMES), ("float_formats", tuple(FLOAT_FORMATS))):
        for i, value in enumerate(grid.get(key, ())):
            if value not in known:
                raise ValueError(f"{key}[{i}] must be one of {', '.join(known)}, got {value!r} (e.g. {key}={known!r})")
    return grid


def check_study_inputs(runs: Mapping, n_images: Optional[int] = None, n_show: Optional[int] = None) -> list:
    """The names of ``runs`` (a non-empty mapping of trained runs), after checking ``n_images`` (the
    test images evaluated: an integer >= 1) and ``n_show`` (the images shown: from 1 to ``n_images``)."""
    if not isinstance(runs, Mapping) or not runs:
        raise ValueError(f"runs must be the trained runs, {{name: StudyRun}} (e.g. "
                         f"runs=images.trained_runs(ctx.settings)), got {runs!r:.60}")
    if n_images is not None:
        check_int("n_images", n_images, low=1, example=1000)
    if n_show is not None:
        check_int("n_show", n_show, low=1, high=n_images, example=12)
    return list(runs)
