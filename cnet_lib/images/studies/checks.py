"""Checks of the image study's inputs before any model is evaluated, in the style of
:mod:`cnet_lib.core.validation`: :func:`check_study_inputs` refuses an empty set of runs and image counts below 1.
(A robustness grid is checked by :func:`cnet_lib.studies.robustness.study.check_grid`.)
"""
from __future__ import annotations

from typing import Mapping, Optional

from ...core.validation import check_int

__all__ = ["check_study_inputs"]


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
