"""The data a study of the image runs reads: the preset's data set when it can be had, else an
announced fake one, loaded onto a device.

:func:`study_data_dir` makes sure the session's data folder (its ``data_dir`` setting) holds the data
set, downloading it (from the session's mirror when it names one) except under ``smoke``, which
downloads only from a mirror named explicitly: a quick check never fetches the full data set.  If the
data cannot be had (offline, a fresh machine, smoke), a small *fake* CIFAR in the standard layout is
written to a folder only this user can write (:func:`cnet_lib.images.data.download.fake_data_folder`) and a
message says so, and how to get the real images: the chapters then run, but their numbers describe the
fake data.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ...core.validation import check_int
from ...runtime.files import shown_path
from ...runtime.settings import Settings, select_preset
from ..data.batches import normalize
from ..data.datasets import DatasetNotFoundError, DATASETS, resolve_data_dir
from ..data.download import ensure_dataset, fake_data_folder
from ..data.image_data import ImageData, TEST_SUBSET_SEED, load_dataset
from ..training.train_config import TrainConfig
from .image_presets import IMAGE_PRESETS

__all__ = ["fake_sizes", "study_data_dir", "fake_data_note", "study_data", "sample_batch"]


def fake_sizes(preset: str) -> tuple[int, int]:
    """``(n_train, n_test)`` of the fake data set a preset falls back to (at least 100 and 50)."""
    d = select_preset(IMAGE_PRESETS, preset)["data"]
    return max(int(d.get("n_train") or 2000), 100), max(int(d.get("n_test") or 500), 50)


def study_data_dir(settings: Settings, dataset: str = "cifar10", verbose: bool = True) -> Path:
    """The folder holding ``dataset`` for the session's preset: its ``data_dir`` (downloaded into when
    missing, see the module docstring), else the announced fake data set's folder."""
    source = settings.download_source(dataset)
    download = settings.preset != "smoke" or source["url"] is not None
    root = resolve_data_dir(settings.data_dir)
    try:
        ensure_dataset(dataset, root, download=download, progress=False, **source)
        return root
    except DatasetNotFoundError as err:
        n_train, n_test = fake_sizes(settings.preset)
        fake = fake_data_folder(dataset, n_train, n_test)
        if verbose:
            print(fake_data_note(settings.preset, dataset, err, download, root, fake, n_train, n_test))
        return fake


def fake_data_note(preset: str, dataset: str, err: Exception, downloaded: bool, root: Path, fake: Path,
                   n_train: int, n_test: int) -> str:
    """The message printed when the chapters fall back to fake data: why, and how to get the real images."""
    head = (f"NOTE: Using FAKE data: {n_train} + {n_test} images of class-coloured noise written to {shown_path(fake)}.\n"
            f"      Every number below describes that fake data set, not {dataset.upper()}.")
    if downloaded:  # a real attempt failed: the error says what to do
        return f"{head}\n      Why: {err}"
    return (f"{head}\n      Why: the {preset} preset never downloads the full data set, and it is not in {shown_path(root)}.\n"
            "      For the real images: in Google Colab run `%env CNET_PRESET=cpu` (or gpu) before the setup cell "
            "(the data set is then downloaded once); on your own machine set CNET_DATA_DIR to the folder that "
            f"contains {DATASETS[dataset].folder}.")


_SAID: set = set()  # the small copies already announced in this session


def study_data(cfg: TrainConfig, settings: Settings, device=None, with_train: bool = True) -> ImageData:
    """The run's data (:func:`cnet_lib.images.data.image_data.load_dataset`) on ``device`` (default: the
    run's, else the session's).

    A configuration without ``data_dir`` (e.g. straight from :func:`cnet_lib.images.runs.image_presets.image_runs`)
    reads the folder :func:`study_data_dir` chooses for its preset, as
    :func:`cnet_lib.images.runs.run_store.trained_runs` does: the real data when it can be had, else the
    announced fake data set.  A copy of the data set smaller than the preset's subset (a course's copy of 1,000
    test images under the ``cpu`` preset's 2,000) is used whole, and a note says so once a session.
    """
    device = torch.device(device) if device is not None else torch.device(cfg.device or settings.device)
    data_dir = cfg.data_dir
    if data_dir is None:
        data_dir = study_data_dir(settings.replace(preset=cfg.preset), cfg.dataset)
    n_train = cfg.n_train if with_train else None
    data = load_dataset(cfg.dataset, data_dir, n_train, cfg.n_test, seed=cfg.seed, device=device, progress=False,
                        test_seed=TEST_SUBSET_SEED, up_to=True, **settings.download_source(cfg.dataset))
    for split, asked, have in (("training", n_train, len(data.train_y)), ("test", cfg.n_test, len(data.test_y))):
        if asked is not None and have < asked and (data.folder, split, asked) not in _SAID:
            _SAID.add((data.folder, split, asked))
            print(f"NOTE: the data set in {shown_path(Path(data.folder))} holds {have:,} {split} images, fewer than "
                  f"the {cfg.preset} preset's {asked:,}: the chapter uses all {have:,} of them (its numbers then "
                  f"differ a little from the book's, which come from {asked:,}).")
    return data


def sample_batch(cfg: TrainConfig, settings: Settings, n: int = 64, device=None) -> torch.Tensor:
    """The first ``n`` test images of the run's data (:func:`study_data`), normalised like the
    training data, on ``device`` (default: the run's, else the session's): a batch to push through a
    model (``n``: an integer >= 1)."""
    check_int("n", n, low=1, example=64)
    data = study_data(cfg, settings, device, with_train=False)
    return normalize(data.test_x[:n], data.mean, data.std)
