"""``python -m cnet_lib book_plan [PRESET]``: what building the book will do, said before it starts.

Printed by ``scripts/book.sh``: the preset, for each image model whether it is loaded (cached or
shipped with the book) or trained, how long the build took where it was measured, and, when the build
trains (so that it takes long), the quicker ``smoke`` build instead.  The times are measurements recorded in the README (machine named), not
promises for other machines.  The preset (when not given), the runs folder and the data folder come
from the environment's settings (:class:`cnet_lib.runtime.settings.Settings`).
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Optional, Sequence

import torch

from ..book.chapter_cards import BUILDS, GPU_PRESET_ON_CPU, GPU_RUN
from ..images.runs.image_presets import image_runs
from ..images.runs.run_folders import is_finished, run_dir
from ..images.runs.shipped import shipped_run
from ..runtime.progress import duration
from ..runtime.settings import Settings
from .command_line import command_main

__all__ = ["SUMMARY", "INTERRUPTED", "add_arguments", "run", "MEASURED", "plan", "main"]

SUMMARY = "What a book build of a preset would load or train, and how long it takes"


_ON_CPU = sum(GPU_PRESET_ON_CPU["seconds"].values()) + sum(p[1] for p in GPU_PRESET_ON_CPU["parts"].values())

MEASURED = {
    "smoke": f"about {duration(BUILDS['smoke']['build_seconds'])} on {BUILDS['smoke']['machine']} (measured)",
    "cpu": {"loaded": f"about {duration(BUILDS['cpu']['build_seconds'])} on {BUILDS['cpu']['machine']} (measured, with "
                      "the image models that ship with the book" + "".join(
                          f"; {name} not executed in that build, not measured" for name in
                          BUILDS["cpu"].get("not_executed", [])) + ")",
            "trained": "about 50 min on the project's 2-core CPU machine (measured: 42 min to train both image "
                       "models, 6 min for their sweeps and robustness study, 2 min for the rest)"},
    "gpu": {"loaded": "not measured as a whole (measured: the image chapters with the shipped models at most "
                      f"{duration(sum(GPU_RUN['seconds'].values()))} on {GPU_RUN['machine']}, run side by side; the "
                      "pendulum chapters and the adaptive chapter's pendulum cells, which run on the CPU, "
                      f"{duration(_ON_CPU)} on {GPU_PRESET_ON_CPU['machine']} alone)",
            "trained": "minutes on an H100/H200-class GPU (both models trained in 88 s on an H100, measured); about "
                       "26 min on a T4 (an estimate, see the README)"},
    "paper": "hours on a GPU (not measured)",
}
"""Measured whole-book times, by preset and situation: the builds of
:data:`cnet_lib.book.chapter_cards.BUILDS` (``benchmarks/bench_book.py``) and the README's *Measured times*
and *On a GPU*."""


def plan(settings: Settings) -> list[str]:
    """The lines to print before a build with ``settings`` (its preset, runs folder and data folder)."""
    name = settings.preset
    device = "a CUDA GPU" if torch.cuda.is_available() else "the CPU"
    lines = [f"== preset '{name}' on {device}"]
    to_train = []
    for run, cfg in image_runs(name).items():
        cfg = dataclasses.replace(cfg, data_dir=str(settings.data_dir))
        folder = run_dir(cfg, settings.runs_dir)
        if is_finished(folder, cfg):
            lines.append(f"   {run}: already trained here ({folder}): loaded, not trained")
        elif shipped_run(cfg) is not None:
            lines.append(f"   {run}: a trained model ships with the book for this preset: loaded, not trained")
        else:
            to_train.append(run)
            lines.append(f"   {run}: will be TRAINED ({cfg.epochs} epochs on {cfg.n_train or 'all'} images, "
                         f"{cfg.scheme}, N_t up to {cfg.final_n_steps()})")
    measured = MEASURED[name]
    if isinstance(measured, dict):
        measured = measured["trained" if to_train else "loaded"]
    lines.append(f"== expected time: {measured}")
    if name in ("gpu", "paper") and not torch.cuda.is_available():
        lines.append(f"== WARNING: the '{name}' preset is sized for a GPU; on this CPU it would take many hours")
    if name != "smoke" and (to_train or name in ("gpu", "paper")):
        lines.append(f"== a quicker check instead: CNET_PRESET=smoke bash scripts/book.sh, {MEASURED['smoke']} "
                     "(every chapter run tiny: its numbers mean nothing)")
    return lines


INTERRUPTED = "interrupted; nothing was written"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options: the preset."""
    p.add_argument("preset", nargs="?", help="smoke, cpu, gpu or paper (default: $CNET_PRESET, else gpu with "
                   "CUDA, else cpu)")


def run(args: argparse.Namespace) -> int:
    """Print the plan; 0."""
    print("\n".join(plan(Settings.from_environment(preset=args.preset))), flush=True)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command alone (:func:`cnet_lib.cli.command_line.command_main`); returns its exit status (0, or 1
    with an error said in one line)."""
    return command_main(sys.modules[__name__], argv)
