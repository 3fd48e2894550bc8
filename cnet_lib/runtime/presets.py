"""Run-size presets: one name, chosen once from the environment, read by every training cell.

``smoke`` (CI: seconds), ``cpu`` (default without a GPU: a chapter in minutes on 2 cores),
``gpu`` (default with CUDA: a chapter in <= 30 min on a T4-class GPU), ``paper`` (the seed
paper's schedules).  Each study module keeps its own table of what a preset means for it.
"""
from __future__ import annotations

import os
from typing import Mapping, Optional, TypeVar

import torch

__all__ = ["PRESETS", "preset_name", "select_preset"]

PRESETS = ("smoke", "cpu", "gpu", "paper")
T = TypeVar("T")


def preset_name(name: Optional[str] = None) -> str:
    """``name`` if given, else ``$CNET_PRESET``, else ``gpu`` with CUDA and ``cpu`` without."""
    if name is None:
        name = os.environ.get("CNET_PRESET") or ("gpu" if torch.cuda.is_available() else "cpu")
    name = name.strip().lower()
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)} (e.g. CNET_PRESET=smoke)")
    return name


def select_preset(table: Mapping[str, T], name: Optional[str] = None) -> T:
    """The entry of a study's preset ``table`` for the chosen preset."""
    key = preset_name(name)
    missing = [p for p in PRESETS if p not in table]
    if missing:
        raise KeyError(f"preset table lacks {missing}; every study defines all of {PRESETS}")
    return table[key]
