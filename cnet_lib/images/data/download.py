"""Getting a data set onto the disk: downloaded once, MD5 checked, extracted atomically, one process at
a time.

:func:`ensure_dataset` returns the folder of a data set, downloading it first when it is missing (a
second process waits for the first one's copy, :func:`cnet_lib.runtime.files.folder_lock`), from the
published archive or from a mirror (``url``/``md5``: a session's ``cifar10_url``/``cifar10_md5``
setting, ``CNET_CIFAR10_URL``/``CNET_CIFAR10_MD5``; see :func:`dataset_source`).  When the data cannot
be had, :class:`cnet_lib.images.data.datasets.DatasetNotFoundError` says what to do, in Colab and on one's
own machine; a full or read-only disk gets :class:`cnet_lib.images.data.datasets.DataFolderError`.

Also here: a fake CIFAR in the standard layout for tests and for chapters without the real images
(:func:`fake_data_folder`).
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
from pathlib import Path
from typing import Optional, Union

import numpy as np

from ...runtime.checkpoint import file_digest
from ...runtime.files import (FolderNotWritable, NO_SPACE, folder_lock, is_write_refused, private_temp_dir, set_aside,
    write_problem)
from ...runtime.progress import progress_bar
from ...runtime.records import kind_of
from ...runtime.settings import ENVIRONMENT, check_mirror
from .cifar_files import CifarFileError, fix_advice
from .cifar_pack import is_pack
from .datasets import (ARCHIVE_SIZE, DataFolderError, DatasetChecksumError, DatasetNotFoundError, DATASETS,
    DatasetSpec, dataset_spec, is_complete, resolve_data_dir)

__all__ = ["dataset_source", "DownloadInterrupted", "ensure_dataset", "write_fake_cifar", "fake_data_folder"]


PathLike = Union[str, os.PathLike]


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


def dataset_source(name: str = "cifar10", url: Optional[str] = None, md5: Optional[str] = None) -> tuple[str, str]:
    """``(url, md5)`` that a download of ``name`` uses.

    By default the published archive (``DATASETS[name].url``) and its published MD5.  ``url`` (a
    session's ``cifar10_url`` setting, ``CNET_CIFAR10_URL``) names a mirror; its archive is checked
    against the published MD5 unless ``md5`` gives the MD5 of a different archive (a small test archive,
    say).  An MD5 without a URL is refused: the published archive is always checked against its
    published checksum (:func:`cnet_lib.runtime.settings.check_mirror`).
    """
    spec = dataset_spec(name)
    url, md5 = check_mirror(spec.name, url, md5, spec.url)
    if url is None:
        return spec.url, spec.md5
    return url, (md5 or spec.md5).lower()


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
    size = f"{ARCHIVE_SIZE.get(spec.name, 'a large archive')}, " if url == spec.url else ""
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
        if not is_complete(extracted, spec):
            raise DatasetChecksumError(
                f"{spec.archive} from {url} does not contain the expected files {spec.files} under {spec.folder}/")
        final = root / spec.folder
        if final.exists():  # an incomplete folder from elsewhere: keep it aside rather than delete user files
            final.rename(root / f"{spec.folder}.incomplete-{os.getpid()}")
        os.replace(extracted, final)
    print(f"... {spec.name} is in {root / spec.folder} ({time.perf_counter() - started:.0f} s).", flush=True)


def _what_to_do(spec: DatasetSpec, root: Path, url: str) -> str:
    """The sentences of a data error that say what to do (one paragraph: on one's own machine, then in Colab)."""
    return (
        f" Download {url} ({ARCHIVE_SIZE.get(spec.name, 'large')}) and extract it with `tar xzf {spec.archive} -C "
        f"{root}`, or give as data_dir (CNET_DATA_DIR, --data-dir) a folder that holds {spec.folder!r} (or that "
        f"folder itself), or set {ENVIRONMENT[f'{spec.name}_url']} to a mirror of the archive. In Google Colab, "
        "check that the runtime is connected and run the cell again (the download happens once per runtime), or "
        f"extract the archive to /content and run %env CNET_DATA_DIR=/content before the setup cell."
    )


def _check_partial(folder: Path, spec: DatasetSpec) -> None:
    """A data folder that holds some of the data set's files but not all of them, or one of them as something
    else than a file (a folder), is damaged, not absent: :class:`CifarFileError` names the file, instead of a
    download of the whole archive beside it."""
    present = [f for f in spec.files if os.path.lexists(folder / f)]
    if not present:
        return
    odd = next((f for f in present if not (folder / f).is_file()), None)
    if odd is not None:
        raise CifarFileError(f"{folder / odd} is {kind_of(os.lstat(folder / odd).st_mode)}, not a data file: "
                             f"{fix_advice(folder)}")
    missing = [f for f in spec.files if f not in present]
    raise CifarFileError(f"{folder} lacks {', '.join(missing)} ({len(present)} of its {len(spec.files)} files are "
                         f"there): {fix_advice(folder)}")


def ensure_dataset(name: str = "cifar10", data_dir: Optional[PathLike] = None, download: bool = True,
                   progress: bool = True, *, url: Optional[str] = None, md5: Optional[str] = None) -> Path:
    """The folder holding ``name``'s pickles, else its pack (``<data_dir>/cifar-10-webp``,
    :mod:`cnet_lib.images.data.cifar_pack`), downloading the pickles first when neither is there.

    The download comes from :func:`dataset_source` (``url``/``md5``, a session's mirror settings, else
    the published archive and MD5), is checked, and is extracted atomically.  A folder that holds some of the
    files but not all (or one of them as a folder) is damaged, not missing: :class:`CifarFileError` names the
    file and nothing is downloaded.  ``data_dir`` defaults
    to :func:`cnet_lib.images.data.datasets.resolve_data_dir`'s folder; it is the folder that holds
    ``cifar-10-batches-py``, or that folder itself (then its parent is the data folder).  When the data is missing
    and cannot be had, :class:`DatasetNotFoundError` says what to do in one paragraph, on one's own machine and in
    Colab.
    """
    spec = dataset_spec(name)
    root = resolve_data_dir(data_dir)
    if root.name == spec.folder:  # the data set's own folder was given: its parent is the data folder
        root = root.parent
    folder = root / spec.folder
    if is_complete(folder, spec):
        return folder
    if is_pack(root / spec.pack_folder):
        return root / spec.pack_folder
    _check_partial(folder, spec)
    src_url, src_md5 = dataset_source(spec.name, url, md5)
    if not download:
        raise DatasetNotFoundError(f"{spec.name} is not in {folder} (downloads are off here).{_what_to_do(spec, root, src_url)}")
    try:
        with folder_lock(folder, f"downloading {spec.name}"):  # a second process waits, then uses this copy
            if not is_complete(folder, spec):
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


# A fake CIFAR in the standard layout (class-coloured noise, no real images): for tests, and for the
# chapters when the real images cannot be had (written once, whole, into a folder only this user can
# write: :func:`fake_data_folder`).

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


def fake_data_folder(dataset: str, n_train: int, n_test: int) -> Path:
    """The folder of the fake data set: ``cnet_lib-fake-<dataset>-<n_train>-<n_test>`` in a folder only
    this user can write (:func:`cnet_lib.runtime.files.private_temp_dir`), written once, whole (into a
    fresh temporary folder, then renamed into place) and under a lock, so two notebooks never read
    a half-written copy."""
    fake = private_temp_dir() / f"cnet_lib-fake-{dataset}-{n_train}-{n_test}"
    with folder_lock(fake, f"writing a fake {dataset}"):
        try:
            ensure_dataset(dataset, fake, download=False)
        except DatasetNotFoundError:
            fake.mkdir(exist_ok=True)
            with tempfile.TemporaryDirectory(dir=fake, prefix=".writing-") as tmp:
                written = write_fake_cifar(tmp, n_train=n_train, n_test=n_test,
                                           num_classes=DATASETS[dataset].num_classes, seed=0)
                target = fake / written.name
                if target.exists():  # an incomplete copy: kept aside, never read
                    set_aside(target)
                os.replace(written, target)
    return fake
