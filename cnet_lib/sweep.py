"""Command line: evaluate a trained ContinuousNet on other manifestations, compressed, and without
its blocks (:mod:`cnet_lib.images.sweep`).

    python -m cnet_lib.sweep runs/smoke-rk4_refined/checkpoint.pt --out sweep.json --html sweep.html
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from .images.figures import fig_accuracy_vs_nt
from .images.sweep import sweep_checkpoint, sweep_table, write_sweep
from .runtime.checkpoint import CheckpointSaveError
from .runtime.memory import is_out_of_memory, out_of_memory_message

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m cnet_lib.sweep",
                                description="Evaluate a trained ContinuousNet on other manifestations, compressed, and without its blocks.")
    p.add_argument("checkpoint", help="checkpoint.pt written by cnet_lib.train (or its out-dir)")
    p.add_argument("--data-dir", help="directory containing cifar-10-batches-py (default: the run's, else $CNET_DATA_DIR)")
    p.add_argument("--n-test", type=int, help="test images (default: the run's subset)")
    p.add_argument("--schemes", nargs="+")
    p.add_argument("--n-steps", type=int, nargs="+", help="N_t values")
    p.add_argument("--compress", type=int, nargs="*", help="M values to project θ onto")
    p.add_argument("--compress-schemes", nargs="+")
    p.add_argument("--batch-size", type=int, default=500)
    p.add_argument("--device")
    p.add_argument("--out", help="JSON file for the rows (default: sweep.json beside the checkpoint)")
    p.add_argument("--html", help="also write the plotly figure to this HTML file")
    p.add_argument("--quiet", action="store_true")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    ckpt = Path(args.checkpoint)
    given = {k: getattr(args, k) for k in ("schemes", "n_steps", "compress", "compress_schemes") if getattr(args, k) is not None}
    try:  # the grid: what is given, the rest from the default grid (sweep_checkpoint)
        rows, meta = sweep_checkpoint(ckpt, args.data_dir, args.n_test, args.device, given or None, args.batch_size,
                                      progress=not args.quiet)
    except (ValueError, TypeError, RuntimeError, OSError, MemoryError) as err:
        if is_out_of_memory(err) and not str(err).startswith("out of memory on"):
            err = out_of_memory_message(args.device or "the device", "sweeping", args.batch_size)
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted; nothing was written (the rows are written once, when the sweep ends): run the same "
              "command again", file=sys.stderr)
        return 130
    print(sweep_table(rows))
    out = Path(args.out) if args.out else (ckpt if ckpt.is_dir() else ckpt.parent) / "sweep.json"
    try:
        write_sweep(out, rows, **meta)
    except CheckpointSaveError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"rows written to {out}")
    if args.html:  # the command line sits above the layers: it may draw
        name = ckpt.parent.name if ckpt.is_file() else ckpt.name
        fig_accuracy_vs_nt({name: rows}).write_html(args.html, include_plotlyjs=True)  # self-contained, works offline
        print(f"figure written to {args.html}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
