"""``cnet pack SRC_DIR OUT_DIR`` (or ``python -m cnet_lib pack``): write the compact copy of a pickled CIFAR folder (the
*pack*, :mod:`cnet_lib.images.data.cifar_pack`), which the library reads wherever it reads the pickles.

    python -m cnet_lib pack ../shared/data-large shared_pack --quality 90

``SRC_DIR`` is the folder that *contains* ``cifar-10-batches-py``; ``OUT_DIR`` gets ``cifar-10-webp/``,
and ``CNET_DATA_DIR=OUT_DIR`` then reads it (the same labels, order and train/test split; the pixels
within the error the command prints, measured on every image).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Optional, Sequence

from ..images.data.cifar_files import CifarFileError
from ..images.data.cifar_pack import write_pack
from .command_line import command_main

__all__ = ["SUMMARY", "FAULTS", "INTERRUPTED", "add_arguments", "run", "main"]

SUMMARY = "Write a compact copy of a pickled CIFAR folder (each image a lossy WebP) that the library reads in its place"


FAULTS = (CifarFileError,)
"""Said in one line besides the shared ones (:data:`cnet_lib.cli.command_line.FAULTS`)."""

INTERRUPTED = "interrupted; nothing was kept (the pack is renamed into place only when whole): run the same command again"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options: the source and destination folders, the data set, the WebP quality and effort."""
    p.add_argument("src_dir", help="the folder that contains cifar-10-batches-py (or cifar-100-python)")
    p.add_argument("out_dir", help="where the pack folder (cifar-10-webp or cifar-100-webp) is written")
    p.add_argument("--dataset", default="cifar10", help="cifar10 (default) or cifar100")
    p.add_argument("--quality", type=int, default=90, help="WebP quality, 1..100 (default 90)")
    p.add_argument("--method", type=int, default=6, help="WebP effort, 0..6 (default 6: the smallest files)")


def run(args: argparse.Namespace) -> int:
    """Write the pack and say how close it is to the source; 0 when done."""
    folder = write_pack(args.src_dir, args.out_dir, args.dataset, args.quality, args.method,
                        say=lambda line: print(line, flush=True))
    m = json.loads((folder / "manifest.json").read_text())
    e = m["error"]
    print(f"pack written to {folder}: {m['bytes'] / 2**20:.2f} MiB for {e['images']} images in {m['seconds']:.0f} s; "
          f"error against the source: max {e['max_abs']}, mean {e['mean_abs']:.3f} (of 255), PSNR {e['psnr_db']:.2f} dB")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command alone (:func:`cnet_lib.cli.command_line.command_main`); returns its exit status (0 done,
    1 an error said in one line, 2 a wrong option, 130 interrupted)."""
    return command_main(sys.modules[__name__], argv)
