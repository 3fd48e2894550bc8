"""``python -m cnet_lib pack SRC_DIR OUT_DIR``: write the compact copy of a pickled CIFAR folder (the
*pack*, :mod:`cnet_lib.images.cifar_pack`), which the library reads wherever it reads the pickles.

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

from ..images.cifar_files import CifarFileError
from ..images.pack_writer import write_pack

__all__ = ["SUMMARY", "main"]

SUMMARY = "Write a compact copy of a pickled CIFAR folder (each image a lossy WebP) that the library reads in its place"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command; returns its exit status (0 done, 1 an error said in one line, 2 a wrong option,
    130 interrupted)."""
    p = argparse.ArgumentParser(prog="python -m cnet_lib pack", description=SUMMARY + ".")
    p.add_argument("src_dir", help="the folder that contains cifar-10-batches-py (or cifar-100-python)")
    p.add_argument("out_dir", help="where the pack folder (cifar-10-webp or cifar-100-webp) is written")
    p.add_argument("--dataset", default="cifar10", help="cifar10 (default) or cifar100")
    p.add_argument("--quality", type=int, default=90, help="WebP quality, 1..100 (default 90)")
    p.add_argument("--method", type=int, default=6, help="WebP effort, 0..6 (default 6: the smallest files)")
    args = p.parse_args(argv)
    try:
        folder = write_pack(args.src_dir, args.out_dir, args.dataset, args.quality, args.method,
                            say=lambda line: print(line, flush=True))
    except (ValueError, TypeError, CifarFileError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted; nothing was kept (the pack is renamed into place only when whole): run the same "
              "command again", file=sys.stderr)
        return 130
    m = json.loads((folder / "manifest.json").read_text())
    e = m["error"]
    print(f"pack written to {folder}: {m['bytes'] / 2**20:.2f} MiB for {e['images']} images in {m['seconds']:.0f} s; "
          f"error against the source: max {e['max_abs']}, mean {e['mean_abs']:.3f} (of 255), PSNR {e['psnr_db']:.2f} dB")
    return 0
