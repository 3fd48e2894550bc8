"""``python -m cnet_lib book_plan [PRESET]``: what building the book will do, said before it starts.

Printed by ``scripts/book.sh``: the preset, for each image model whether it is loaded (cached or
shipped with the book) or trained, how long the build took where it was measured, and, when the build
trains (so that it takes long), the quicker ``smoke`` build instead.  The times are measurements, read from
where they were recorded (:func:`cnet_lib.book.measurements.expected_build`, machine named), not promises for
other machines.  The preset (when not given), the runs folder and the data folder come
from the environment's settings (:class:`cnet_lib.runtime.settings.Settings`).
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Optional, Sequence

import torch

from ..images.runs.image_presets import image_runs, is_finished, run_dir
from ..images.runs.shipped import shipped_run
from ..book.measurements import expected_build
from ..runtime.settings import Settings
from .. import pendulum
from .command_line import command_main

__all__ = ["SUMMARY", "INTERRUPTED", "add_arguments", "run", "plan", "main"]

SUMMARY = "What a book build of a preset would load or train, and how long it takes"


def _pendulum_line(name: str, settings: Settings) -> str:
    """What the build does with the pendulum's ODE-Nets: load the shipped study or the reader's own, or train it
    (all of a study's ODE-Nets at once, by the first chapter that needs them; the others load it)."""
    source, path = pendulum.study_source(pendulum.config_for(name), settings)
    if source == "shipped":
        return "   pendulum ODE-Nets: the study of this preset comes with the book: loaded"
    if source == "saved":
        return f"   pendulum ODE-Nets: already trained here ({path}): loaded"
    return "   pendulum ODE-Nets: trained all at once by the first chapter that needs them, then loaded by the others"


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
    lines.append(_pendulum_line(name, settings))
    lines.append(f"== expected time: {expected_build(name, bool(to_train))}")
    if to_train and name in ("gpu", "paper") and not torch.cuda.is_available():
        lines.append(f"== WARNING: the '{name}' preset trains for a GPU; on this CPU training would take many hours")
    if name != "smoke" and to_train:
        lines.append(f"== a quicker check instead: CNET_PRESET=smoke bash scripts/book.sh, {expected_build('smoke', False)} "
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
