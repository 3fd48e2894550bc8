"""Test helpers: the smoke preset's two image runs at a tiny size, trained once per test module on fake data,
and a fresh copy of their runs root for each test that changes something (tests/test_file_faults.py,
tests/test_shared_files.py).  A test module imports the fixtures it uses by name."""
from __future__ import annotations

import shutil

import pytest

from cnet_lib.images.data import download as FD
from cnet_lib.images.runs import run_store as RS
from cnet_lib.runtime.settings import Settings

TINY = dict(n_train=64, n_test=32, batch_size=32, channels=(2, 4, 4))
GRID = dict(schemes=("euler",), n_steps=(1, 2), compress=(1,), compress_schemes=("euler",))


def smoke_runs(root, data_dir, **kw):
    """``trained_runs`` of the smoke preset at the :data:`TINY` size, its runs root ``root``, on the CPU."""
    return RS.trained_runs(Settings(preset="smoke", runs_dir=root, data_dir=data_dir, device="cpu"), **TINY, **kw)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    FD.write_fake_cifar(root, n_train=100, n_test=40, seed=0)
    return str(root)


@pytest.fixture(scope="module")
def trained(data_dir, tmp_path_factory):
    """Both smoke runs, trained once into a runs root that tests copy before changing anything."""
    root = tmp_path_factory.mktemp("runs")
    smoke_runs(root, data_dir, verbose=False)
    return root


@pytest.fixture
def runs_copy(trained, tmp_path):
    root = tmp_path / "runs"
    shutil.copytree(trained, root)
    return root
