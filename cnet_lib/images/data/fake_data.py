"""A fake CIFAR in the standard layout (class-coloured noise, no real images): for tests, and for the
chapters when the real images cannot be had (written once, whole, into a folder only this user can
write: :func:`fake_data_folder`).
"""
from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path
from typing import Union

import numpy as np

from ...runtime.files import private_temp_dir, set_aside
from ...runtime.locks import folder_lock
from .datasets import DATASETS, DatasetNotFoundError
from .download import ensure_dataset

__all__ = ["write_fake_cifar", "fake_data_folder"]

PathLike = Union[str, os.PathLike]


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
