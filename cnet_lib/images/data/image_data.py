"""A data set in memory: its splits as uint8 tensors on the training device, optionally a
class-balanced seeded subset (:func:`load_dataset`).

Files are read without running code from them and checked (:mod:`cnet_lib.images.data.cifar_files`); a
missing data set is downloaded first (:func:`cnet_lib.images.data.download.ensure_dataset`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

import numpy as np
import torch

from ...core.validation import check_int
from .cifar_files import read_batch, read_class_names
from .cifar_pack import is_pack, read_pack_batch, read_pack_class_names
from .datasets import DatasetSpec, dataset_spec
from .download import ensure_dataset

__all__ = ["ImageData", "TEST_SUBSET_SEED", "read_split", "balanced_subset", "load_dataset"]

PathLike = Union[str, os.PathLike]
TEST_SUBSET_SEED = 1
"""The seed of a training run's test subset whatever its training seed (``seed + 1`` of seed 0, so runs
of seed 0 keep the subset they always had)."""


def read_split(folder: PathLike, name: str = "cifar10", split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
    """Images ``(N, 3, 32, 32)`` uint8 and labels ``(N,)`` int64 of one split, on the CPU, from a folder of
    pickles (``cifar-10-batches-py``) or a pack (``cifar-10-webp``): the same files in the same order.

    Every file is read without running code from it and checked
    (:func:`cnet_lib.images.data.cifar_files.read_batch`, :func:`cnet_lib.images.data.cifar_pack.read_pack_batch`): a
    damaged one raises :class:`CifarFileError`."""
    spec = dataset_spec(name)
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    files = spec.train_files if split == "train" else spec.test_files
    xs, ys = [], []
    packed = is_pack(folder)
    for fname in files:
        x, y = (read_pack_batch(folder, fname, spec.num_classes) if packed
                else read_batch(Path(folder) / fname, spec.label_key, spec.num_classes))
        xs.append(x)
        ys.append(y)
    return torch.from_numpy(np.concatenate(xs)), torch.from_numpy(np.concatenate(ys))


def _class_names(folder: Path, spec: DatasetSpec) -> list[str]:
    if is_pack(folder):
        return read_pack_class_names(folder, spec.num_classes)
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
        """The device the images are on."""
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
    *,
    url: Optional[str] = None,
    md5: Optional[str] = None,
    test_seed: Optional[int] = None,
    up_to: bool = False,
) -> ImageData:
    """Load ``name`` onto ``device`` (default CPU), optionally a class-balanced seeded subset.

    ``n_train`` / ``n_test``: integers >= 1, or ``None`` for the whole split (with ``up_to``, a split that
    holds fewer images than asked for is taken whole: a small copy of the data set); the training subset is
    drawn with ``seed``, the test subset with ``test_seed`` (default ``seed + 1``; a run's studies pass
    :data:`TEST_SUBSET_SEED`, so that every training seed is measured on the same test images).  A missing data set is
    downloaded into ``data_dir`` first, from ``url``/``md5`` when given (a mirror: a session's
    :meth:`cnet_lib.runtime.settings.Settings.download_source`), see
    :func:`cnet_lib.images.data.download.ensure_dataset`.  A damaged data file raises
    :class:`cnet_lib.images.data.cifar_files.CifarFileError` (one sentence: the file, what is wrong, what to do)."""
    spec = dataset_spec(name)
    for arg, value in (("n_train", n_train), ("n_test", n_test)):
        if value is not None:
            check_int(arg, value, low=1, example=2000)
    check_int("seed", seed, example=0)
    test_seed = seed + 1 if test_seed is None else check_int("test_seed", test_seed, example=1)
    folder = ensure_dataset(spec.name, data_dir, download=download, progress=progress, url=url, md5=md5)
    device = torch.device("cpu") if device is None else torch.device(device)
    tx, ty = read_split(folder, spec.name, "train")
    vx, vy = read_split(folder, spec.name, "test")
    if n_train is not None and n_train != len(tx) and not (up_to and n_train > len(tx)):
        i = balanced_subset(ty, n_train, seed, spec.num_classes)
        tx, ty = tx[i], ty[i]
    if n_test is not None and n_test != len(vx) and not (up_to and n_test > len(vx)):
        i = balanced_subset(vy, n_test, test_seed, spec.num_classes)
        vx, vy = vx[i], vy[i]
    return ImageData(
        name=spec.name,
        train_x=tx.to(device), train_y=ty.to(device), test_x=vx.to(device), test_y=vy.to(device),
        num_classes=spec.num_classes, classes=_class_names(folder, spec),
        mean=torch.tensor(spec.mean, device=device), std=torch.tensor(spec.std, device=device),
        folder=str(folder),
    )
