"""``cnet sweep`` (or ``python -m cnet_lib sweep``): evaluate a trained ContinuousNet on other manifestations, compressed, and
without its blocks (:func:`cnet_lib.studies.manifestation.sweep_checkpoint`).

    python -m cnet_lib sweep runs/smoke-rk4_refined/checkpoint.pt --out sweep.json --html sweep.html

The device, the data folder (when neither ``--data-dir`` nor the run names one), CUDA graphs and CPU
threads come from the environment's settings (:class:`cnet_lib.runtime.settings.Settings`).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..runtime.device import out_of_memory_hint
from ..runtime.settings import Settings
from ..studies.manifestation import fig_accuracy_vs_nt, sweep_checkpoint, sweep_table, write_sweep
from .command_line import command_main

__all__ = ["SUMMARY", "INTERRUPTED", "add_arguments", "run", "main"]

SUMMARY = "Evaluate a trained ContinuousNet on other manifestations, compressed, and without its blocks"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options: the checkpoint, the grid (any part of it), where the rows and the figure go."""
    p.add_argument("checkpoint", help="checkpoint.pt written by python -m cnet_lib train (or its out-dir)")
    p.add_argument("--data-dir", help="directory containing cifar-10-batches-py (default: the run's, else "
                   "$CNET_DATA_DIR, else ~/.cache/cnet_lib/data)")
    p.add_argument("--n-test", type=int, help="test images (default: the run's subset)")
    p.add_argument("--schemes", nargs="+")
    p.add_argument("--n-steps", type=int, nargs="+", help="N_t values")
    p.add_argument("--compress", type=int, nargs="*", help="M values to project θ onto")
    p.add_argument("--compress-schemes", nargs="+")
    p.add_argument("--batch-size", type=int, default=500)
    p.add_argument("--device", help="e.g. cpu, cuda (default: $CNET_DEVICE, else CUDA when available)")
    p.add_argument("--out", help="JSON file for the rows (default: sweep.json beside the checkpoint)")
    p.add_argument("--html", help="also write the plotly figure to this HTML file")
    p.add_argument("--quiet", action="store_true")


INTERRUPTED = ("interrupted; nothing was written (the rows are written once, when the sweep ends): run the same "
               "command again")


def run(args: argparse.Namespace) -> int:
    """Sweep, print the rows, write them (and the figure); 0 when done."""
    ckpt = Path(args.checkpoint)
    given = {k: getattr(args, k) for k in ("schemes", "n_steps", "compress", "compress_schemes") if getattr(args, k) is not None}
    with out_of_memory_hint(args.device or "the device", "sweeping", args.batch_size):
        # the grid: what is given, the rest from the default grid (sweep_checkpoint)
        rows, meta = sweep_checkpoint(ckpt, Settings.from_environment(), data_dir=args.data_dir, n_test=args.n_test,
                                      device=args.device, grid=given or None, batch_size=args.batch_size,
                                      progress=not args.quiet)
    print(sweep_table(rows))
    out = Path(args.out) if args.out else (ckpt if ckpt.is_dir() else ckpt.parent) / "sweep.json"
    write_sweep(out, rows, **meta)
    print(f"rows written to {out}")
    if args.html:
        name = ckpt.parent.name if ckpt.is_file() else ckpt.name
        fig_accuracy_vs_nt({name: rows}).write_html(args.html, include_plotlyjs=True)  # self-contained, works offline
        print(f"figure written to {args.html}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command alone (:func:`cnet_lib.cli.command_line.command_main`); returns its exit status (0 done,
    1 an error said in one line, 2 a wrong option, 130 interrupted)."""
    return command_main(sys.modules[__name__], argv)
