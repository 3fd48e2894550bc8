"""CIFAR-10 / CIFAR-100 as uint8 tensors on the training device, with batched augmentation.

Files are read from the standard python-pickle layout that torchvision downloads:
``<data_dir>/cifar-10-batches-py`` (``data_batch_1..5``, ``test_batch``, ``batches.meta``) and
``<data_dir>/cifar-100-python`` (``train``, ``test``, ``meta``), with an unpickler that runs no
code and checks every file (:mod:`cnet_lib.images.cifar_files`).  ``data_dir`` is an argument,
else ``$CNET_DATA_DIR``, else ``~/.cache/cnet_lib/data``.  A missing folder is downloaded (MD5
checked, extracted atomically, one process at a time: a second one waits and then uses the first
one's copy) when the machine is online, from the published archive or from the mirror named by
``$CNET_CIFAR10_URL`` (``$CNET_CIFAR10_MD5`` for an archive other than the published one; see
:func:`dataset_source`); otherwise :class:`DatasetNotFoundError` says what to do, in Colab and on
one's own machine.

The input pipeline keeps the whole split as one ``uint8`` tensor ``(N, 3, 32, 32)`` on the
training device; random crop (zero pad 4) + horizontal flip + normalisation are done for a
whole batch at once with tensor indexing (no per-image Python).  All randomness comes from
one CPU :class:`torch.Generator`, so a run is reproducible and resumable from its state.
"""
from __future__ import annotations

import http.client
import os
import pickle
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Union

import numpy as np
import torch

from ..core.validation import check_int
from ..runtime.checkpoint import file_digest
from ..runtime.files import FolderNotWritable, NO_SPACE, is_write_refused, write_problem
from ..runtime.locks import folder_lock
from ..runtime.progress import progress_bar
from .cifar_files import CifarFileError, read_batch, read_class_names

__all__ = [
    "DATASETS",
    "DatasetSpec",
    "DatasetNotFoundError",
    "DatasetChecksumError",
    "DataFolderError",
    "CifarFileError",
    "dataset_source",
    "custom_source",
    "ImageData",
    "resolve_data_dir",
    "ensure_dataset",
    "read_split",
    "balanced_subset",
    "load_dataset",
    "normalize",
    "augment",
    "draw_augmentation",
    "apply_augmentation",
    "iterate_batches",
    "write_fake_cifar",
]

PathLike = Union[str, os.PathLike]


@dataclass(frozen=True)
class DatasetSpec:
    """Where a dataset lives and how its pickles are laid out."""

    name: str
    folder: str
    url: str
    archive: str
    md5: str  # of the archive, as published on https://www.cs.toronto.edu/~kriz/cifar.html
    train_files: tuple[str, ...]
    test_files: tuple[str, ...]
    meta_file: str
    label_key: str
    names_key: str
    num_classes: int
    mean: tuple[float, float, float]  # per-channel statistics of the training split, in [0, 1]
    std: tuple[float, float, float]

    @property
    def files(self) -> tuple[str, ...]:
        return self.train_files + self.test_files + (self.meta_file,)


DATASETS: dict[str, DatasetSpec] = {
    "cifar10": DatasetSpec(
        name="cifar10",
        folder="cifar-10-batches-py",
        url="https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
        archive="cifar-10-python.tar.gz",
        md5="c58f30108f718f92721af3b95e74349a",
        train_files=tuple(f"data_batch_{i}" for i in range(1, 6)),
        test_files=("test_batch",),
        meta_file="batches.meta",
        label_key="labels",
        names_key="label_names",
        num_classes=10,
        mean=(0.4914, 0.4822, 0.4465),
        std=(0.2470, 0.2435, 0.2616),
    ),
    "cifar100": DatasetSpec(
        name="cifar100",
        folder="cifar-100-python",
        url="https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
        archive="cifar-100-python.tar.gz",
        md5="eb9058c3a382ffc7106e4002c42a8d85",
        train_files=("train",),
        test_files=("test",),
        meta_file="meta",
        label_key="fine_labels",
        names_key="fine_label_names",
        num_classes=100,
        mean=(0.5071, 0.4865, 0.4409),
        std=(0.2673, 0.2564, 0.2762),
    ),
}


class DatasetNotFoundError(FileNotFoundError):
    """The dataset is not on disk and could not be had; the message says what to do, in Colab
    and on one's own machine."""


class DatasetChecksumError(DatasetNotFoundError, RuntimeError):
    """A downloaded archive is not the expected one (wrong MD5, unreadable, files missing)."""


class DataFolderError(DatasetNotFoundError):
    """The data folder cannot take the download: the disk is full, or it cannot be written."""

    def __str__(self) -> str:  # the sentence alone, without "[Errno 28]"
        return self.strerror or super().__str__()


def _folder_problem(err: OSError, root: Path, doing: str, archive: str) -> DataFolderError:
    """The one sentence for a download that failed because of the disk, not of the archive."""
    if err.errno in NO_SPACE:
        return DataFolderError(
            err.errno, f"the disk holding {root} is full: {doing} {archive} stopped there, and nothing was kept "
            "(the archive itself is not at fault). Free about 400 MB on that disk, or set CNET_DATA_DIR "
            "(data_dir= / --data-dir) to a folder on a disk with room, then run again")
    return DataFolderError(
        err.errno, f"cannot write to {root} ({write_problem(err)}) while {doing} {archive}; nothing was kept. Set "
        "CNET_DATA_DIR (data_dir= / --data-dir) to a folder you can write to, then run again")


def _spec(name: str) -> DatasetSpec:
    key = name.lower().replace("-", "").replace("_", "")
    if key not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")
    return DATASETS[key]


def resolve_data_dir(data_dir: Optional[PathLike] = None) -> Path:
    """``data_dir`` if given, else ``$CNET_DATA_DIR``, else ``~/.cache/cnet_lib/data``.

    This is the directory that *contains* ``cifar-10-batches-py`` / ``cifar-100-python``.
    """
    if data_dir is None:
        data_dir = os.environ.get("CNET_DATA_DIR") or Path.home() / ".cache" / "cnet_lib" / "data"
    return Path(data_dir).expanduser()


def _complete(folder: Path, spec: DatasetSpec) -> bool:
    return all((folder / f).is_file() for f in spec.files)


# --------------------------------------------------------------------------- download
# Where a download comes from: the published archive unless $CNET_<NAME>_URL names a mirror.
URL_ENV = "CNET_{name}_URL"  # e.g. CNET_CIFAR10_URL: a mirror of the archive (or a test archive)
MD5_ENV = "CNET_{name}_MD5"  # e.g. CNET_CIFAR10_MD5: the MD5 of the archive at that URL
_ARCHIVE_SIZE = {"cifar10": "about 170 MB", "cifar100": "about 170 MB"}


def _env_names(spec: DatasetSpec) -> tuple[str, str]:
    key = spec.name.upper()
    return URL_ENV.format(name=key), MD5_ENV.format(name=key)


def dataset_source(name: str = "cifar10", url: Optional[str] = None, md5: Optional[str] = None) -> tuple[str, str]:
    """``(url, md5)`` that a download of ``name`` uses.

    By default the published archive (``DATASETS[name].url``) and its published MD5.  ``url``,
    else ``$CNET_CIFAR10_URL`` (``$CNET_CIFAR100_URL``), names a mirror; its archive is checked
    against the published MD5 unless ``md5``, else ``$CNET_CIFAR10_MD5``, gives the MD5 of a
    different archive (a small test archive, say).  An MD5 without a URL is refused: the
    published archive is always checked against its published checksum.
    """
    spec = _spec(name)
    url_env, md5_env = _env_names(spec)
    given_url = url or os.environ.get(url_env) or None
    given_md5 = md5 or os.environ.get(md5_env) or None
    if given_md5 is not None and given_url is None:
        raise ValueError(
            f"{md5_env} (or md5=) only applies together with {url_env} (or url=): the published archive "
            f"{spec.url} is always checked against its published MD5. Unset {md5_env}, or set {url_env} "
            "to the URL of the archive whose MD5 it is."
        )
    if given_md5 is not None and not (len(given_md5) == 32 and all(ch in "0123456789abcdef" for ch in given_md5.lower())):
        raise ValueError(f"{md5_env} must be 32 hexadecimal digits (the output of md5sum), got {given_md5!r}")
    if given_url is None:
        return spec.url, spec.md5
    return given_url, (given_md5 or spec.md5).lower()


def custom_source(name: str = "cifar10") -> bool:
    """True when ``$CNET_<NAME>_URL`` names a download source other than the published archive."""
    url_env, _ = _env_names(_spec(name))
    return bool(os.environ.get(url_env))


class DownloadInterrupted(OSError):
    """The connection closed before the whole archive arrived."""


def _download(url: str, dest: Path, progress: bool = True) -> None:
    """Stream ``url`` to ``dest`` (a temporary name; the caller renames it).

    Raises :class:`DownloadInterrupted` when fewer bytes arrive than the server announced.
    """
    with urllib.request.urlopen(url, timeout=30) as resp, open(dest, "wb") as out:
        total = int(resp.headers.get("Content-Length") or 0) or None
        done = 0
        with progress_bar(total=total, unit="B", unit_scale=True, desc=f"download {Path(url).name}", disable=not progress,
                          leave=True) as bar:
            for chunk in iter(lambda: resp.read(1 << 20), b""):
                out.write(chunk)
                done += len(chunk)
                bar.update(len(chunk))
    if total is not None and done != total:
        raise DownloadInterrupted(f"the connection closed after {done} of {total} bytes")


def _safe_extract(tar: tarfile.TarFile, dest: Path) -> None:
    if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4 / 3.12
        tar.extractall(dest, filter="data")
        return
    root = dest.resolve()
    for member in tar.getmembers():
        target = (dest / member.name).resolve()
        if root not in target.parents and target != root or member.issym() or member.islnk():
            raise RuntimeError(f"refusing to extract suspicious archive member {member.name!r}")
    tar.extractall(dest)


def _fetch(spec: DatasetSpec, root: Path, progress: bool = True, url: Optional[str] = None,
           md5: Optional[str] = None) -> None:
    """Download ``url`` (default: the published archive), check its MD5, and extract it into
    ``root/spec.folder`` atomically: nothing is left behind when any step fails."""
    url = url or spec.url
    md5 = md5 or spec.md5
    root.mkdir(parents=True, exist_ok=True)
    size = f"{_ARCHIVE_SIZE.get(spec.name, 'a large archive')}, " if url == spec.url else ""
    print(f"Downloading {spec.name} ({size}once) from {url} into {root} ...", flush=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=root, prefix=f".{spec.folder}-") as tmp:
        tmp = Path(tmp)
        archive = tmp / spec.archive
        try:
            _download(url, archive, progress)
        except OSError as err:
            if err.errno in NO_SPACE or is_write_refused(err):
                raise _folder_problem(err, root, "downloading", spec.archive) from err
            raise
        got = file_digest(archive, "md5")
        if got != md5:
            raise DatasetChecksumError(
                f"{spec.archive} from {url} has MD5 {got}, expected {md5}: the download is corrupt or "
                "incomplete (a dropped connection), or the file changed upstream. Nothing was kept; run "
                "the cell again to retry."
            )
        try:
            with tarfile.open(archive, "r:gz") as tar:
                _safe_extract(tar, tmp / "x")
        except OSError as err:
            if err.errno in NO_SPACE or is_write_refused(err):
                raise _folder_problem(err, root, "unpacking", spec.archive) from err
            raise DatasetChecksumError(f"{spec.archive} from {url} is not a readable .tar.gz archive ({err})") from err
        except (tarfile.TarError, EOFError) as err:
            raise DatasetChecksumError(f"{spec.archive} from {url} is not a readable .tar.gz archive ({err})") from err
        extracted = tmp / "x" / spec.folder
        if not _complete(extracted, spec):
            raise DatasetChecksumError(
                f"{spec.archive} from {url} does not contain the expected files {spec.files} under {spec.folder}/")
        final = root / spec.folder
        if final.exists():  # an incomplete folder from elsewhere: keep it aside rather than delete user files
            final.rename(root / f"{spec.folder}.incomplete-{os.getpid()}")
        os.replace(extracted, final)
    print(f"... {spec.name} is in {root / spec.folder} ({time.perf_counter() - started:.0f} s).", flush=True)


def _what_to_do(spec: DatasetSpec, root: Path, url: str) -> str:
    """The lines of a data error that say what to do, in Colab and on one's own machine."""
    folder = root / spec.folder
    url_env, _ = _env_names(spec)
    return (
        f"\n  - In Google Colab: check that the runtime is connected (the download is "
        f"{_ARCHIVE_SIZE.get(spec.name, 'large')} and happens once per runtime) and run the cell again. Or put "
        f"{spec.archive} on your Google Drive, mount it (from google.colab import drive; drive.mount('/content/drive')), "
        f"extract it to the runtime's disk (!tar xzf /content/drive/MyDrive/{spec.archive} -C /content) and run "
        f"%env CNET_DATA_DIR=/content before the setup cell. %env CNET_PRESET=smoke runs the chapters on a small "
        "fake data set instead."
        f"\n  - On your own machine: download {url} (with a browser if Python cannot reach it) and extract it with "
        f"`tar xzf {spec.archive} -C {root}` so that {folder / spec.files[0]} exists; or set CNET_DATA_DIR (or "
        f"data_dir= / --data-dir) to the folder that contains {spec.folder!r}; or set {url_env} to a mirror "
        "of the archive."
    )


def ensure_dataset(name: str = "cifar10", data_dir: Optional[PathLike] = None, download: bool = True,
                   progress: bool = True, *, url: Optional[str] = None, md5: Optional[str] = None) -> Path:
    """The folder holding ``name``'s pickles, downloading it first if it is missing.

    The download comes from :func:`dataset_source` (``url``/``md5`` or ``$CNET_CIFAR10_URL`` /
    ``$CNET_CIFAR10_MD5``, else the published archive and MD5), is checked, and is extracted
    atomically.  When the data is missing and cannot be had, :class:`DatasetNotFoundError`
    says what to do in Colab and on one's own machine.
    """
    spec = _spec(name)
    root = resolve_data_dir(data_dir)
    folder = root / spec.folder
    if _complete(folder, spec):
        return folder
    src_url, src_md5 = dataset_source(spec.name, url, md5)
    if not download:
        raise DatasetNotFoundError(f"{spec.name} is not in {folder} (downloads are off here).{_what_to_do(spec, root, src_url)}")
    try:
        with folder_lock(folder, f"downloading {spec.name}"):  # a second process waits, then uses this copy
            if not _complete(folder, spec):
                _fetch(spec, root, progress, src_url, src_md5)
    except FolderNotWritable as err:
        raise DataFolderError(err.errno, f"{err}: set CNET_DATA_DIR (data_dir= / --data-dir) to a folder you can "
                              "write to, then run again") from None
    except DataFolderError:
        raise
    except DatasetNotFoundError as err:
        raise type(err)(f"{err}{_what_to_do(spec, root, src_url)}") from err
    except (urllib.error.URLError, OSError, TimeoutError, http.client.HTTPException) as err:
        raise DatasetNotFoundError(
            f"{spec.name} is not in {folder} and downloading it from {src_url} failed "
            f"({type(err).__name__}: {err}).{_what_to_do(spec, root, src_url)}"
        ) from err
    return folder


# --------------------------------------------------------------------------- reading
def read_split(folder: PathLike, name: str = "cifar10", split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
    """Images ``(N, 3, 32, 32)`` uint8 and labels ``(N,)`` int64 of one split, on the CPU.

    Every file is read without running code from it and checked
    (:func:`cnet_lib.images.cifar_files.read_batch`): a damaged one raises :class:`CifarFileError`."""
    spec = _spec(name)
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    files = spec.train_files if split == "train" else spec.test_files
    xs, ys = [], []
    for fname in files:
        x, y = read_batch(Path(folder) / fname, spec.label_key, spec.num_classes)
        xs.append(x)
        ys.append(y)
    return torch.from_numpy(np.concatenate(xs)), torch.from_numpy(np.concatenate(ys))


def _class_names(folder: Path, spec: DatasetSpec) -> list[str]:
    return read_class_names(folder / spec.meta_file, spec.names_key, spec.num_classes)


def balanced_subset(labels: torch.Tensor, n: int, seed: int = 0, num_classes: Optional[int] = None) -> torch.Tensor:
    """Sorted indices of ``n`` examples, as equal a number per class as possible, drawn with ``seed``.

    Each class gets ``n // C`` examples and ``n % C`` randomly chosen classes one more; a class
    with too few examples gives what it has and the rest is taken from the others.
    """
    labels = torch.as_tensor(labels).cpu()
    if not 0 < n <= len(labels):
        raise ValueError(f"cannot take a subset of {n} from {len(labels)} examples; use 1 <= n <= {len(labels)}")
    C = int(labels.max()) + 1 if num_classes is None else num_classes
    g = torch.Generator().manual_seed(int(seed))
    pools = [torch.nonzero(labels == c).flatten() for c in range(C)]
    pools = [p[torch.randperm(len(p), generator=g)] for p in pools]
    quota = torch.full((C,), n // C, dtype=torch.long)
    quota[torch.randperm(C, generator=g)[: n % C]] += 1
    sizes = torch.tensor([len(p) for p in pools])
    take = torch.minimum(quota, sizes)
    short = n - int(take.sum())
    while short > 0:  # hand the shortfall to classes with examples left, one at a time
        room = torch.nonzero(sizes > take).flatten()
        c = room[torch.randint(len(room), (1,), generator=g)].item()
        take[c] += 1
        short -= 1
    idx = torch.cat([p[: int(k)] for p, k in zip(pools, take)])
    return torch.sort(idx).values


@dataclass
class ImageData:
    """One dataset in memory: uint8 images and int64 labels on ``device``, plus its statistics."""

    name: str
    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor
    num_classes: int
    classes: list[str]
    mean: torch.Tensor  # (3,) float32 on device, in [0, 1] units
    std: torch.Tensor
    folder: str

    @property
    def device(self) -> torch.device:
        return self.train_x.device

    def __repr__(self) -> str:
        return (f"ImageData({self.name}: {len(self.train_x)} train / {len(self.test_x)} test images, "
                f"{self.num_classes} classes, on {self.device}, from {self.folder})")


def load_dataset(
    name: str = "cifar10",
    data_dir: Optional[PathLike] = None,
    n_train: Optional[int] = None,
    n_test: Optional[int] = None,
    seed: int = 0,
    device: Union[str, torch.device, None] = None,
    download: bool = True,
    progress: bool = True,
) -> ImageData:
    """Load ``name`` onto ``device`` (default CPU), optionally a class-balanced seeded subset.

    ``n_train`` / ``n_test``: integers >= 1, or ``None`` for the whole split.  A damaged data file
    raises :class:`CifarFileError` (one sentence: the file, what is wrong, what to do)."""
    spec = _spec(name)
    for arg, value in (("n_train", n_train), ("n_test", n_test)):
        if value is not None:
            check_int(arg, value, low=1, example=2000)
    check_int("seed", seed, example=0)
    folder = ensure_dataset(spec.name, data_dir, download=download, progress=progress)
    device = torch.device("cpu") if device is None else torch.device(device)
    tx, ty = read_split(folder, spec.name, "train")
    vx, vy = read_split(folder, spec.name, "test")
    if n_train is not None and n_train != len(tx):
        i = balanced_subset(ty, n_train, seed, spec.num_classes)
        tx, ty = tx[i], ty[i]
    if n_test is not None and n_test != len(vx):
        i = balanced_subset(vy, n_test, seed + 1, spec.num_classes)
        vx, vy = vx[i], vy[i]
    return ImageData(
        name=spec.name,
        train_x=tx.to(device), train_y=ty.to(device), test_x=vx.to(device), test_y=vy.to(device),
        num_classes=spec.num_classes, classes=_class_names(folder, spec),
        mean=torch.tensor(spec.mean, device=device), std=torch.tensor(spec.std, device=device),
        folder=str(folder),
    )


# --------------------------------------------------------------------------- batched transforms
def normalize(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """uint8 ``(B, 3, H, W)`` -> float32, (x/255 - mean) / std per channel."""
    scale = (1.0 / (255.0 * std)).view(1, -1, 1, 1)
    shift = (mean / std).view(1, -1, 1, 1)
    return x.float() * scale - shift


def draw_augmentation(batch: int, generator: torch.Generator, pad: int = 4, flip: bool = True) -> torch.Tensor:
    """The random crop offsets and flips of one batch, drawn on the CPU from ``generator``.

    Returns an int64 tensor ``(3, batch)``: rows ``dy``, ``dx`` (in ``0..2*pad``) and ``flip``
    (0 or 1).  Drawing them on the CPU makes results independent of the device.
    """
    dy = torch.randint(0, 2 * pad + 1, (batch,), generator=generator)
    dx = torch.randint(0, 2 * pad + 1, (batch,), generator=generator)
    fl = torch.rand(batch, generator=generator) < 0.5 if flip else torch.zeros(batch, dtype=torch.bool)
    return torch.stack([dy, dx, fl.long()])


def apply_augmentation(x: torch.Tensor, params: torch.Tensor, pad: int = 4) -> torch.Tensor:
    """Crop ``x`` ``(B, C, H, W)`` from its zero-padded copy at the offsets of ``params`` and flip
    the images marked there (see :func:`draw_augmentation`), with one gather on ``x``'s device."""
    B, C, H, W = x.shape
    dev = x.device
    params = params.to(dev)
    dy, dx, fl = params[0], params[1], params[2].bool()
    xp = torch.nn.functional.pad(x, (pad, pad, pad, pad))
    rows = dy[:, None] + torch.arange(H, device=dev)  # (B, H)
    ar = torch.arange(W, device=dev)
    cols = dx[:, None] + torch.where(fl[:, None], W - 1 - ar, ar)  # (B, W): flip = read columns backwards
    b = torch.arange(B, device=dev)[:, None, None]
    out = xp.permute(0, 2, 3, 1)[b, rows[:, :, None], cols[:, None, :]]  # (B, H, W, C)
    return out.permute(0, 3, 1, 2).contiguous()


def augment(x: torch.Tensor, generator: torch.Generator, pad: int = 4, flip: bool = True) -> torch.Tensor:
    """Random crop of the zero-padded image (pad ``pad``) and random horizontal flip, batched.

    ``x`` is ``(B, C, H, W)`` (any dtype, any device); the random offsets and flips are drawn
    on the CPU from ``generator`` (so results do not depend on the device) and applied with one
    gather.  Returns a tensor of ``x``'s dtype and shape.
    """
    return apply_augmentation(x, draw_augmentation(len(x), generator, pad, flip), pad)


def iterate_batches(
    x: torch.Tensor,
    y: torch.Tensor,
    batch_size: int,
    mean: torch.Tensor,
    std: torch.Tensor,
    generator: Optional[torch.Generator] = None,
    shuffle: bool = False,
    train_augment: bool = False,
    drop_last: bool = False,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield normalised float batches ``(xb, yb)`` from uint8 ``x`` on its own device.

    With ``shuffle`` the order is a permutation drawn from ``generator`` (CPU); with
    ``train_augment`` every batch is randomly cropped and flipped.  ``drop_last`` drops a final
    partial batch (never the only batch).

    All random numbers of the pass are drawn when it starts, in the order a batch-by-batch
    loop would draw them (the permutation, then each batch's :func:`draw_augmentation`), and
    reach the device in one copy: a GPU never waits for a per-batch host-to-device copy, and
    the results are those of :func:`augment` batch by batch, bit for bit.
    """
    n = len(x)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if (shuffle or train_augment) and generator is None:
        raise ValueError("shuffle / train_augment need a torch.Generator (e.g. torch.Generator().manual_seed(0))")
    order = torch.randperm(n, generator=generator) if shuffle else None
    stop = n - n % batch_size if drop_last and n >= batch_size else n
    starts = range(0, stop, batch_size)
    aug = None
    if train_augment:
        aug = torch.cat([draw_augmentation(min(batch_size, n - s), generator) for s in starts], dim=1)
        aug = aug.to(x.device)
    if order is not None:
        order = order.to(x.device)
    for s in starts:
        if order is None:
            xb, yb = x[s : s + batch_size], y[s : s + batch_size]
        else:
            i = order[s : s + batch_size]
            xb, yb = x[i], y[i]
        if aug is not None:
            xb = apply_augmentation(xb, aug[:, s : s + len(xb)])
        yield normalize(xb, mean, std), yb


def n_batches(n: int, batch_size: int, drop_last: bool = False) -> int:
    """How many batches :func:`iterate_batches` yields for ``n`` examples."""
    return n // batch_size if drop_last and n >= batch_size else -(-n // batch_size)


# --------------------------------------------------------------------------- synthetic data
def write_fake_cifar(
    data_dir: PathLike,
    n_train: int = 100,
    n_test: int = 50,
    num_classes: int = 10,
    seed: int = 0,
) -> Path:
    """Write a tiny dataset in the exact standard layout; returns the dataset folder.

    ``num_classes=10`` writes ``cifar-10-batches-py`` (training images spread over the five
    ``data_batch_*`` files), ``num_classes=100`` writes ``cifar-100-python``.  Each class has its
    own mean colour plus noise, so a small model can learn it.  Labels cycle through the classes
    and are then shuffled (balanced to within one).
    """
    if num_classes not in (10, 100):
        raise ValueError(f"num_classes must be 10 (CIFAR-10 layout) or 100 (CIFAR-100 layout), got {num_classes}")
    spec = DATASETS["cifar10" if num_classes == 10 else "cifar100"]
    rng = np.random.default_rng(seed)
    colours = rng.integers(40, 216, size=(num_classes, 3))

    def make(n: int) -> tuple[np.ndarray, list[int]]:
        labels = rng.permutation(np.arange(n) % num_classes)
        img = colours[labels][:, :, None, None] + rng.normal(0, 30, size=(n, 3, 32, 32))
        return np.clip(img, 0, 255).astype(np.uint8).reshape(n, 3072), [int(v) for v in labels]

    folder = Path(data_dir) / spec.folder
    folder.mkdir(parents=True, exist_ok=True)

    def dump(obj: dict, fname: str) -> None:
        with open(folder / fname, "wb") as f:
            pickle.dump(obj, f, protocol=2)

    x, y = make(n_train)
    parts = np.array_split(np.arange(n_train), len(spec.train_files))
    for fname, idx in zip(spec.train_files, parts):
        dump({"batch_label": f"fake {fname}", spec.label_key: [y[i] for i in idx], "data": x[idx],
              "filenames": [f"fake_{i}.png" for i in idx]}, fname)
    x, y = make(n_test)
    dump({"batch_label": "fake test", spec.label_key: y, "data": x,
          "filenames": [f"fake_test_{i}.png" for i in range(n_test)]}, spec.test_files[0])
    names = [f"class_{c}" for c in range(num_classes)]
    dump({spec.names_key: names, "num_cases_per_batch": max(1, n_train // len(spec.train_files)), "num_vis": 3072},
         spec.meta_file)
    return folder
