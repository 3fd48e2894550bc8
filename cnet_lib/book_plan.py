"""What building the book will do, said before it starts: ``python -m cnet_lib.book_plan [PRESET]``.

Printed by ``scripts/book.sh``: the preset, for each image model whether it is loaded (cached or
shipped with the book) or trained, how long that took where it was measured, and how to get a
quick preview instead.  The times are measurements recorded in the README (machine named), not
promises for other machines.
"""
from __future__ import annotations

import sys
from typing import Optional, Sequence

import torch

from .images.presets import image_runs
from .images.runs import is_finished, run_dir, shipped_run
from .runtime.presets import preset_name

__all__ = ["MEASURED", "plan", "main"]

# Measured whole-book times (README, "Measured times" and "On a GPU"), by preset and situation.
MEASURED = {
    "smoke": "about 2 min on the project's 2-core CPU machine (measured)",
    "cpu": {"loaded": "about 2 min on the project's 2-core CPU machine (measured: 1 min 43 s with the shipped "
                      "image models, set-up included)",
            "trained": "about 50 min on the project's 2-core CPU machine (measured: 42 min to train both image "
                       "models, 6 min for their sweeps and robustness study, 2 min for the rest)"},
    "gpu": "minutes on an H100/H200-class GPU (both models trained in 101 s on an H200, measured); about half an "
           "hour on a T4 (an estimate, see the README)",
    "paper": "hours on a GPU (not measured)",
}


def plan(preset: Optional[str] = None) -> list[str]:
    """The lines to print before a build of ``preset``."""
    name = preset_name(preset)
    device = "a CUDA GPU" if torch.cuda.is_available() else "the CPU"
    lines = [f"== preset '{name}' on {device}"]
    to_train = []
    for run, cfg in image_runs(name).items():
        folder = run_dir(cfg)
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
    if name != "smoke":
        lines.append("== a 2-minute preview instead: CNET_PRESET=smoke bash scripts/book.sh (its numbers mean nothing)")
    return lines


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        lines = plan(argv[0] if argv else None)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
