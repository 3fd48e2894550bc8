"""Run-size presets: the four names, one check of a name, and a study's table looked up by it.

``smoke`` (CI: seconds), ``cpu`` (the default without a GPU: a chapter in minutes on 2 cores),
``gpu`` (the default with CUDA: a chapter in <= 30 min on a T4-class GPU), ``paper`` (the paper's
scale on the schedule of the authors' published command lines).  Which one a session runs is a setting (:class:`cnet_lib.runtime.settings.Settings`,
``ctx.preset`` in a chapter); each study keeps its own table of what a preset means for it.
"""
from __future__ import annotations

from typing import Mapping, TypeVar

__all__ = ["PRESETS", "preset_name", "select_preset"]

PRESETS = ("smoke", "cpu", "gpu", "paper")
T = TypeVar("T")


def preset_name(name: str) -> str:
    """``name`` stripped and lower-cased, after checking that it is one of :data:`PRESETS` (a
    ValueError names the valid ones otherwise)."""
    if not isinstance(name, str):
        raise TypeError(f"preset must be a name, one of {', '.join(PRESETS)}; got {name!r} (e.g. preset='smoke')")
    key = name.strip().lower()
    if key not in PRESETS:
        raise ValueError(f"unknown preset {key!r}; choose one of {', '.join(PRESETS)} (e.g. CNET_PRESET=smoke)")
    return key


def select_preset(table: Mapping[str, T], preset: str) -> T:
    """The entry of a study's preset ``table`` for ``preset`` (``ctx.preset`` in a chapter); the
    table must define all four presets."""
    key = preset_name(preset)
    missing = [p for p in PRESETS if p not in table]
    if missing:
        raise KeyError(f"preset table lacks {missing}; every study defines all of {PRESETS}")
    return table[key]
