"""Writing the pack: a pickled CIFAR folder (``cifar-10-batches-py``) as ``cifar-10-webp`` (the layout is
in :mod:`cnet_lib.images.data.cifar_pack`), with the pixel error of the pack against its source measured on
every image while it is written.

Each image is its own lossy WebP file (Pillow, ``quality`` and ``method`` as given), so no pixel of one
image depends on another.  Tiled sheets of 32 × 32 tiles aligned to WebP's 16-pixel macroblocks are
about a third smaller, but WebP's loop filter smooths across every macroblock edge, tile edges
included, and mixes neighbouring images (measured on 2,000 images at quality 90: maximum error 93
against 37 per image, PSNR 36.8 against 39.1 dB; ``book/gpu.md``, *The data pack*).  The images of one source
file are stored one after the other with an offsets table rather than in a zip, whose headers would add
about 94 bytes per image (4.5 MiB for CIFAR-10's 50,000).

The pack is written into a temporary folder beside its destination and renamed into place when whole.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional, Union

import numpy as np

from ...core.validation import check_int
from ...runtime.checkpoint import file_digest
from .cifar_files import read_batch, read_class_names
from .cifar_pack import PACK_FORMAT, PACK_MANIFEST, check_webp_header, decode_webp
from .datasets import dataset_spec, is_complete

__all__ = ["encode_webp", "pixel_error", "write_pack"]

PathLike = Union[str, os.PathLike]


def encode_webp(image_hwc: np.ndarray, quality: int, method: int = 6) -> bytes:
    """One ``(32, 32, 3)`` uint8 image as a lossy WebP file (Pillow; ``quality`` 1..100, ``method`` 0..6:
    slower is smaller)."""
    from PIL import Image  # imported here: only a pack needs Pillow

    buf = io.BytesIO()
    Image.fromarray(image_hwc, "RGB").save(buf, "WEBP", quality=int(quality), method=int(method), lossless=False)
    return buf.getvalue()


def pixel_error(source: np.ndarray, decoded: np.ndarray) -> dict:
    """The error of ``decoded`` against ``source`` (uint8 arrays of one shape), per channel value:
    ``max_abs`` and ``mean_abs`` (0..255), ``psnr_db`` = 10 log10(255² / mean squared error) (infinite
    for identical arrays), ``sum_abs``, ``sum_sq`` and ``values`` (to pool several arrays)."""
    d = source.astype(np.int32) - decoded.astype(np.int32)
    sum_abs, sum_sq, values = int(np.abs(d).sum()), int((d * d).sum()), int(d.size)
    return {"max_abs": int(np.abs(d).max()) if d.size else 0, "mean_abs": sum_abs / max(values, 1),
            "psnr_db": _psnr(sum_sq, values), "sum_abs": sum_abs, "sum_sq": sum_sq, "values": values}


def _psnr(sum_sq: int, values: int) -> float:
    return float("inf") if sum_sq == 0 else float(10 * np.log10(255.0 ** 2 * values / sum_sq))


def _pooled(errors: list) -> dict:
    sum_abs, sum_sq, values = (sum(e[k] for e in errors) for k in ("sum_abs", "sum_sq", "values"))
    return {"max_abs": max(e["max_abs"] for e in errors), "mean_abs": sum_abs / values,
            "psnr_db": _psnr(sum_sq, values), "images": values // (3 * 32 * 32)}


def _write_batch(src: Path, dest: Path, source: str, spec, quality: int, method: int) -> tuple[dict, dict]:
    """Encode one source file into its three pack files; ``(batch entry, its pixel error)``."""
    images, labels = read_batch(src / source, spec.label_key, spec.num_classes)
    if spec.num_classes > 256:
        raise ValueError(f"{spec.name} has {spec.num_classes} classes: a pack stores labels as uint8 (at most 256)")
    hwc = images.transpose(0, 2, 3, 1)
    blobs = [encode_webp(np.ascontiguousarray(im), quality, method) for im in hwc]
    for i, blob in enumerate(blobs):  # what the reader will refuse must never be written
        problem = check_webp_header(blob)
        if problem:
            raise RuntimeError(f"Pillow's WebP encoder wrote image {i} of {source} that {problem}")
    decoded = np.stack([decode_webp(b) for b in blobs]) if blobs else np.zeros((0, 32, 32, 3), np.uint8)
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in blobs])]).astype("<u4")
    names = {"images": f"{source}.webps", "offsets": f"{source}.offsets", "labels": f"{source}.labels"}
    (dest / names["images"]).write_bytes(b"".join(blobs))
    (dest / names["offsets"]).write_bytes(offsets.tobytes())
    (dest / names["labels"]).write_bytes(labels.astype(np.uint8).tobytes())
    split = "train" if source in spec.train_files else "test"
    entry = {"source": source, "split": split, "count": int(len(labels)), **names}
    return entry, pixel_error(hwc, decoded)


def _codec(quality: int, method: int) -> dict:
    import PIL
    from PIL import features

    return {"name": "webp", "lossless": False, "quality": quality, "method": method, "pillow": PIL.__version__,
            "libwebp": features.version("webp")}


def write_pack(src_dir: PathLike, out_dir: PathLike, dataset: str = "cifar10", quality: int = 90, method: int = 6,
               say: Optional[Callable[[str], None]] = None) -> Path:
    """Write the pack of ``dataset`` from ``src_dir`` (the folder that *contains* ``cifar-10-batches-py``)
    into ``out_dir`` (it gets ``cifar-10-webp/``); returns the pack folder.  Every source file is read
    with the checks of :mod:`cnet_lib.images.data.cifar_files`; the manifest records the source files'
    SHA-256, the split and order, the codec and the pixel error on every image.  An existing pack
    folder is replaced only when the new one is whole.  ``say`` receives a line per source file."""
    spec = dataset_spec(dataset)
    check_int("quality", quality, low=1, high=100, example=90)
    check_int("method", method, low=0, high=6, example=6)
    src = Path(src_dir).expanduser() / spec.folder
    if not is_complete(src, spec):
        raise FileNotFoundError(f"{src} does not hold the pickled {spec.name} ({', '.join(spec.files)}): give the "
                                f"folder that contains {spec.folder!r} (e.g. ../shared/data-large)")
    out_root = Path(out_dir).expanduser()
    out_root.mkdir(parents=True, exist_ok=True)
    final = out_root / spec.pack_folder
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=out_root, prefix=f".{spec.pack_folder}-") as tmp:
        dest = Path(tmp) / spec.pack_folder
        dest.mkdir()
        batches, errors = [], []
        for source in spec.train_files + spec.test_files:
            entry, err = _write_batch(src, dest, source, spec, quality, method)
            batches.append(entry)
            errors.append(err)
            if say:
                say(f"{source}: {entry['count']} images, {(dest / entry['images']).stat().st_size / 2**20:.2f} MiB, "
                    f"max error {err['max_abs']}, PSNR {err['psnr_db']:.2f} dB")
        files = {f.name: file_digest(f) for f in sorted(dest.iterdir())}
        manifest = {
            "format": PACK_FORMAT, "dataset": spec.name, "class_names": read_class_names(src / spec.meta_file,
                                                                                         spec.names_key, spec.num_classes),
            "batches": batches, "codec": _codec(quality, method),
            "source": {"folder": spec.folder, "sha256": {f: file_digest(src / f) for f in spec.files}},
            "error": _pooled(errors), "bytes": sum((dest / f).stat().st_size for f in files),
            "seconds": round(time.perf_counter() - t0, 1), "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "files": files,
        }
        (dest / PACK_MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        if final.exists():
            shutil.rmtree(final)
        os.replace(dest, final)
    return final
