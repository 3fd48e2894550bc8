"""The data sets the image study knows (CIFAR-10, CIFAR-100): where each lives, how its files are laid
out, and the errors of data that cannot be had.

A data set sits in a folder ``<data_dir>/<spec.folder>`` (``cifar-10-batches-py``, ``cifar-100-python``),
the layout torchvision downloads, or as its compact copy ``<data_dir>/<spec.pack_folder>``
(``cifar-10-webp``, :mod:`cnet_lib.images.data.cifar_pack`; read when the pickles are absent); ``data_dir`` is
the folder that *contains* it (a session's ``data_dir`` setting, :class:`cnet_lib.runtime.settings.Settings`).  Downloading is
:mod:`cnet_lib.images.data.download`, reading :mod:`cnet_lib.images.data.image_data`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from ...runtime.settings import default_data_dir

__all__ = ["DATASETS", "DatasetSpec", "DatasetNotFoundError", "DatasetChecksumError", "DataFolderError",
           "ARCHIVE_SIZE", "dataset_spec", "resolve_data_dir", "is_complete"]

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
    pack_folder: str = ""  # the compact copy's folder (cnet_lib.images.data.cifar_pack), read when the pickles are absent

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
        pack_folder="cifar-10-webp",
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
        pack_folder="cifar-100-webp",
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


ARCHIVE_SIZE = {"cifar10": "about 170 MB", "cifar100": "about 170 MB"}
"""The size of each published archive, in words (for the messages around a download)."""


def dataset_spec(name: str) -> DatasetSpec:
    """The :class:`DatasetSpec` of ``name`` (``cifar10``, ``CIFAR-10``, ``cifar_100``, ...); a ValueError
    names the known ones otherwise."""
    key = name.lower().replace("-", "").replace("_", "")
    if key not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")
    return DATASETS[key]


def resolve_data_dir(data_dir: Optional[PathLike] = None) -> Path:
    """``data_dir`` if given, else the default folder ``~/.cache/cnet_lib/data``
    (:func:`cnet_lib.runtime.settings.default_data_dir`).

    This is the directory that *contains* ``cifar-10-batches-py`` / ``cifar-100-python``.
    """
    return Path(default_data_dir() if data_dir is None else data_dir).expanduser()


def is_complete(folder: Path, spec: DatasetSpec) -> bool:
    """Whether ``folder`` holds every file of ``spec``."""
    return all((folder / f).is_file() for f in spec.files)
