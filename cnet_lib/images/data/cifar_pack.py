"""A compact copy of CIFAR read back: the *pack* (``cifar-10-webp/``, ``cifar-100-webp/``), written by
``python -m cnet_lib pack`` (:mod:`cnet_lib.images.data.cifar_pack`).

A pack keeps every source file of the pickled data set (``data_batch_1`` ... ``test_batch``, or ``train``
and ``test``) as three files of its own, in the source's order:

* ``<source>.webps``: its images, each a separate lossy WebP file of 32 × 32 pixels, one after the other;
* ``<source>.offsets``: N + 1 little-endian uint32, where image i is ``webps[offsets[i]:offsets[i + 1]]``;
* ``<source>.labels``: N uint8, the labels exactly as in the source;

and a ``manifest.json`` with the data set, the class names, which source file belongs to which split
(the split and the order are the source's), the SHA-256 of every source file and of every pack file, the
codec and the pixel error of the pack against its source measured when it was written.

Reading holds no code: JSON, raw bytes, and images.  Before any image is decoded, every file of a batch
is checked against the SHA-256 its manifest records, the offsets must rise within the file, and each
image must be a lossy WebP (a ``VP8 `` chunk: the lossless decoder is never called) whose frame header
says 32 × 32 pixels.  A pack that fails any check raises
:class:`cnet_lib.images.data.cifar_files.CifarFileError` with one sentence: the file, what is wrong, what to
do (write or copy the pack again).

Also here: writing the pack from a pickled CIFAR folder, with its pixel error measured (what ``python -m cnet_lib
pack`` runs).
"""
from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional, Union

import numpy as np

from ...core.validation import check_int
from ...runtime.checkpoint import file_digest
from ...runtime.records import DamagedRecord, load_json
from .cifar_files import CifarFileError, read_batch, read_class_names
from .datasets import dataset_spec, is_complete

__all__ = ["PACK_FORMAT", "PACK_MANIFEST", "is_pack", "read_pack_manifest", "read_pack_batch", "read_pack_class_names",
           "pack_fix_advice", "check_webp_header", "decode_webp", "encode_webp", "pixel_error", "write_pack"]


PathLike = Union[str, os.PathLike]
PACK_FORMAT = "cnet_lib CIFAR pack, lossy WebP per image, version 1"
PACK_MANIFEST = "manifest.json"
SIDE = 32


def pack_fix_advice(folder: Path) -> str:
    """What to do about a damaged pack ``folder``."""
    return (f"replace the folder {folder} with a good copy (write it again with `python -m cnet_lib pack SRC_DIR "
            f"{folder.parent}` from a folder holding the pickled data set, or copy it again from where it came)")


def is_pack(folder: PathLike) -> bool:
    """Whether ``folder`` is a pack folder (it holds a ``manifest.json``)."""
    return (Path(folder) / PACK_MANIFEST).is_file()


def _manifest_error(folder: Path, what: str) -> CifarFileError:
    return CifarFileError(f"{folder / PACK_MANIFEST} {what}: {pack_fix_advice(folder)}")


def read_pack_manifest(folder: PathLike) -> dict:
    """The manifest of the pack ``folder``, after checking its format, its batch list and that every
    file it names is a plain name inside the folder; :class:`CifarFileError` otherwise."""
    folder = Path(folder)
    try:
        manifest = load_json(folder / PACK_MANIFEST, 16 << 20)  # never through a link, never blocking, bounded
    except DamagedRecord as err:
        raise _manifest_error(folder, f"cannot be read: {err}") from None
    except OSError as err:
        raise _manifest_error(folder, f"cannot be read ({type(err).__name__}: {str(err)[:100]})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != PACK_FORMAT:
        raise _manifest_error(folder, f"is not the manifest of a pack (its format must be {PACK_FORMAT!r})")
    files, batches = manifest.get("files"), manifest.get("batches")
    if not isinstance(files, dict) or not isinstance(batches, list) or not batches:
        raise _manifest_error(folder, "lists no files or no batches")
    for name in files:
        if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
            raise _manifest_error(folder, f"names {name!r}, which is not a file of its folder")
    for batch in batches:
        if not isinstance(batch, dict) or not all(batch.get(k) in files for k in ("images", "offsets", "labels")):
            raise _manifest_error(folder, f"has a batch entry without its three files: {str(batch)[:80]}")
    return manifest


def _batch_entry(folder: Path, manifest: dict, source: str) -> dict:
    for batch in manifest["batches"]:
        if batch.get("source") == source:
            return batch
    raise CifarFileError(f"the pack {folder} holds no batch {source!r} (it holds "
                         f"{[b.get('source') for b in manifest['batches']]}): {pack_fix_advice(folder)}")


def _checked_bytes(folder: Path, name: str, digest: str) -> bytes:
    """The bytes of ``folder/name`` after checking them against ``digest`` (SHA-256)."""
    path = folder / name
    try:
        if file_digest(path) != digest:
            raise CifarFileError(f"{path} does not match the SHA-256 its pack's manifest records (it is damaged or "
                                 f"was changed): {pack_fix_advice(folder)}")
        return path.read_bytes()
    except OSError as err:
        raise CifarFileError(f"{path} cannot be read ({err.strerror or err}): {pack_fix_advice(folder)}") from None


def check_webp_header(blob: bytes) -> str:
    """``""`` when ``blob`` is one lossy WebP file of 32 × 32 pixels (RIFF size = its length, a ``VP8 ``
    chunk, the VP8 start code and a 32 × 32 frame), else what it is not, in words.  Only such files are
    handed to the decoder."""
    if len(blob) < 30 or blob[:4] != b"RIFF" or blob[8:12] != b"WEBP":
        return "is not a WebP file"
    if int.from_bytes(blob[4:8], "little") + 8 != len(blob):
        return "has a RIFF size that is not its length"
    if blob[12:16] != b"VP8 ":
        return f"is not a lossy WebP image (its chunk is {blob[12:16]!r}, not b'VP8 ')"
    if blob[23:26] != b"\x9d\x01\x2a":
        return "lacks the VP8 start code"
    width, height = (int.from_bytes(blob[i:i + 2], "little") & 0x3FFF for i in (26, 28))
    if (width, height) != (SIDE, SIDE):
        return f"is {width} × {height} pixels, not {SIDE} × {SIDE}"
    return ""


def decode_webp(blob: bytes) -> np.ndarray:
    """The ``(32, 32, 3)`` uint8 RGB pixels of one checked WebP file (:func:`check_webp_header`)."""
    from PIL import Image  # imported here: only a pack needs Pillow

    with Image.open(io.BytesIO(blob), formats=["WEBP"]) as im:
        im.load()
        rgb = im if im.mode == "RGB" else im.convert("RGB")
        out = np.asarray(rgb, dtype=np.uint8)
    if out.shape != (SIDE, SIDE, 3):
        raise ValueError(f"decoded to shape {out.shape}")
    return out


@lru_cache(maxsize=8)
def _decoded(folder: str, source: str, stamp: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The images ``(N, 3, 32, 32)`` and labels of one batch, decoded once per process while the
    batch's files keep their size and modification time (``stamp``)."""
    folder_p = Path(folder)
    manifest = read_pack_manifest(folder_p)
    batch = _batch_entry(folder_p, manifest, source)
    files = manifest["files"]
    data, raw_offsets, raw_labels = (_checked_bytes(folder_p, batch[k], files[batch[k]])
                                     for k in ("images", "offsets", "labels"))
    offsets = np.frombuffer(raw_offsets, dtype="<u4").astype(np.int64)
    labels = np.frombuffer(raw_labels, dtype=np.uint8).astype(np.int64)
    n = len(labels)
    where = folder_p / batch["images"]
    if len(offsets) != n + 1 or offsets[0] != 0 or offsets[-1] != len(data) or np.any(np.diff(offsets) <= 0):
        raise CifarFileError(f"{folder_p / batch['offsets']} does not cut {where} into {n} images (one per label): "
                             f"{pack_fix_advice(folder_p)}")
    images = np.empty((n, SIDE, SIDE, 3), dtype=np.uint8)
    for i in range(n):
        blob = data[offsets[i]:offsets[i + 1]]
        problem = check_webp_header(blob)
        if problem:
            raise CifarFileError(f"image {i} of {where} {problem}: {pack_fix_advice(folder_p)}")
        try:
            images[i] = decode_webp(blob)
        except (OSError, ValueError, SyntaxError) as err:
            raise CifarFileError(f"image {i} of {where} cannot be decoded ({err}): {pack_fix_advice(folder_p)}") from None
    images = np.ascontiguousarray(images.transpose(0, 3, 1, 2))
    images.flags.writeable = labels.flags.writeable = False
    return images, labels


def read_pack_batch(folder: PathLike, source: str, num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(images, labels)`` of the source file ``source`` (e.g. ``data_batch_1``) from the pack
    ``folder``: images ``(N, 3, 32, 32)`` uint8 (CHW, as the pickles hold them), labels ``(N,)``
    int64, in the source's order, after the checks of the module docstring and a check that every
    label lies in ``0 .. num_classes - 1``.  Decoded once per process (the arrays are read-only)."""
    folder = Path(folder)
    manifest = read_pack_manifest(folder)
    batch = _batch_entry(folder, manifest, source)
    stamp = tuple((lambda s: (s.st_size, s.st_mtime_ns))((folder / batch[k]).stat())
                  for k in ("images", "offsets", "labels") if (folder / batch[k]).is_file())
    images, labels = _decoded(str(folder.resolve()), source, stamp)
    if labels.size and int(labels.max()) >= num_classes:
        raise CifarFileError(f"{folder / batch['labels']} has the label {int(labels.max())}, outside 0..{num_classes - 1} "
                             f"({num_classes} classes): {pack_fix_advice(folder)}")
    return images, labels


def read_pack_class_names(folder: PathLike, num_classes: int) -> list[str]:
    """The class names the pack ``folder`` records, checked: one string per class."""
    folder = Path(folder)
    names = read_pack_manifest(folder).get("class_names")
    if not isinstance(names, list) or len(names) != num_classes or not all(isinstance(n, str) for n in names):
        raise _manifest_error(folder, f"must list {num_classes} class names, got {str(names)[:60]!r}")
    return names


# Writing the pack: a pickled CIFAR folder (``cifar-10-batches-py``) as ``cifar-10-webp`` (the layout is
# in :mod:`cnet_lib.images.data.cifar_pack`), with the pixel error of the pack against its source measured on
# every image while it is written.
#
# Each image is its own lossy WebP file (Pillow, ``quality`` and ``method`` as given), so no pixel of one
# image depends on another.  Tiled sheets of 32 × 32 tiles aligned to WebP's 16-pixel macroblocks are
# about a third smaller, but WebP's loop filter smooths across every macroblock edge, tile edges
# included, and mixes neighbouring images (measured on 2,000 images at quality 90: maximum error 93
# against 37 per image, PSNR 36.8 against 39.1 dB; ``book/gpu.md``, *The data pack*).  The images of one source
# file are stored one after the other with an offsets table rather than in a zip, whose headers would add
# about 94 bytes per image (4.5 MiB for CIFAR-10's 50,000).
#
# The pack is written into a temporary folder beside its destination and renamed into place when whole.

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
