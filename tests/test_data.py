"""The image data (cnet_lib.images.data.datasets, download, image_data, batches, fake_data): standard-layout loaders,
download/offline behaviour, batched augmentation, subsets."""
import hashlib
import os
import pickle
import shutil
import tarfile
import urllib.error
from pathlib import Path

import pytest
import torch
from smoke_data import SHARED_DATA as SHARED

from cnet_lib.images.data import batches as B, datasets as DS, download as DL, download as FD, image_data as ID
from cnet_lib.runtime.settings import Settings


@pytest.fixture(scope="module")
def fake10(tmp_path_factory):
    root = tmp_path_factory.mktemp("fake10")
    FD.write_fake_cifar(root, n_train=60, n_test=30, num_classes=10, seed=3)
    return root


def test_fake_cifar10_has_the_standard_layout(fake10):
    folder = fake10 / "cifar-10-batches-py"
    assert sorted(p.name for p in folder.iterdir()) == sorted(DS.DATASETS["cifar10"].files)
    with open(folder / "data_batch_1", "rb") as f:
        d = pickle.load(f, encoding="latin1")
    assert d["data"].dtype.name == "uint8" and d["data"].shape == (12, 3072)
    assert len(d["labels"]) == 12
    x, y = ID.read_split(folder, "cifar10", "train")
    assert x.shape == (60, 3, 32, 32) and x.dtype == torch.uint8 and y.dtype == torch.int64
    # CHW row-major: row i of the pickle is image i, channel-major
    assert torch.equal(x[0].flatten(), torch.from_numpy(d["data"][0]))
    assert torch.bincount(y, minlength=10).tolist() == [6] * 10


def test_load_dataset_reads_the_sessions_data_dir(fake10, monkeypatch):
    settings = Settings.from_environment({"CNET_DATA_DIR": str(fake10)})
    monkeypatch.setenv("CNET_DATA_DIR", "/nowhere")  # the library itself never reads it
    data = ID.load_dataset("cifar10", settings.data_dir)
    assert len(data.train_x) == 60 and len(data.test_x) == 30 and data.num_classes == 10
    assert data.classes == [f"class_{i}" for i in range(10)]
    assert data.train_x.dtype == torch.uint8 and data.device.type == "cpu"


def test_fake_cifar100_layout(tmp_path):
    folder = FD.write_fake_cifar(tmp_path, n_train=200, n_test=100, num_classes=100)
    assert folder.name == "cifar-100-python"
    data = ID.load_dataset("cifar100", tmp_path, n_train=100, seed=1)
    assert data.num_classes == 100 and len(data.train_y) == 100 and len(data.test_y) == 100
    assert torch.bincount(data.train_y, minlength=100).tolist() == [1] * 100


def test_offline_copy():
    folder = SHARED / "cifar-10-batches-py"
    if not folder.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"CI must provide the offline CIFAR-10 copy at {folder}")
        pytest.skip(f"offline copy not present at {folder}")
    data = ID.load_dataset("cifar10", SHARED, download=False)
    assert data.train_x.shape == (5000, 3, 32, 32) and data.test_x.shape == (1000, 3, 32, 32)
    assert torch.bincount(data.test_y, minlength=10).tolist() == [100] * 10
    assert data.classes[0] == "airplane" and data.classes[-1] == "truck"
    sub = ID.load_dataset("cifar10", SHARED, n_train=500, n_test=200, seed=0)
    assert torch.bincount(sub.train_y, minlength=10).tolist() == [50] * 10


def test_missing_directory_offline_gives_a_clear_error(tmp_path, monkeypatch):
    def offline(url, dest, progress=True):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(DL, "_download", offline)
    with pytest.raises(DS.DatasetNotFoundError) as err:
        DL.ensure_dataset("cifar10", tmp_path / "nowhere")
    msg = str(err.value)
    assert "cifar-10-batches-py" in msg and "CNET_DATA_DIR" in msg and "nowhere" in msg
    with pytest.raises(DS.DatasetNotFoundError, match="CNET_DATA_DIR"):
        DL.ensure_dataset("cifar10", tmp_path / "nowhere", download=False)
    assert not (tmp_path / "nowhere" / "cifar-10-batches-py").exists()


def _tarball(tmp_path) -> Path:
    src = tmp_path / "src"
    FD.write_fake_cifar(src, 20, 10)
    archive = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src / "cifar-10-batches-py", arcname="cifar-10-batches-py")
    return archive


def test_download_checks_md5_and_extracts_atomically(tmp_path, monkeypatch):
    archive = _tarball(tmp_path)
    md5 = hashlib.md5(archive.read_bytes()).hexdigest()
    monkeypatch.setattr(DL, "_download", lambda url, dest, progress=True: shutil.copy(archive, dest))
    root = tmp_path / "data"
    # wrong checksum: refused, nothing left behind
    with pytest.raises(RuntimeError, match="MD5"):
        DL.ensure_dataset("cifar10", root)
    assert [p.name for p in root.iterdir() if not p.name.endswith(".lock")] == []  # the download's lock may stay
    # right checksum: extracted into place
    spec = DS.DATASETS["cifar10"]
    monkeypatch.setitem(DS.DATASETS, "cifar10", DS.DatasetSpec(**{**spec.__dict__, "md5": md5}))
    folder = DL.ensure_dataset("cifar10", root, progress=False)
    assert folder == root / "cifar-10-batches-py"
    assert len(ID.read_split(folder, "cifar10", "test")[1]) == 10
    assert sorted(p.name for p in root.iterdir() if not p.name.endswith(".lock")) == ["cifar-10-batches-py"]


def _naive(x, dy, dx, fl, pad=4):
    xp = torch.nn.functional.pad(x, (pad,) * 4)
    out = []
    for i in range(len(x)):
        r = xp[i, :, dy[i] : dy[i] + 32, dx[i] : dx[i] + 32]
        out.append(r.flip(-1) if fl[i] else r)
    return torch.stack(out)


def test_augment_is_crop_and_flip_and_deterministic(fake10):
    x, _ = ID.read_split(fake10 / "cifar-10-batches-py", "cifar10", "train")
    x = x[:16]
    a = B.augment(x, torch.Generator().manual_seed(5))
    assert a.shape == x.shape and a.dtype == torch.uint8
    assert torch.equal(a, B.augment(x, torch.Generator().manual_seed(5)))
    assert not torch.equal(a, B.augment(x, torch.Generator().manual_seed(6)))
    g = torch.Generator().manual_seed(5)
    dy, dx = torch.randint(0, 9, (16,), generator=g), torch.randint(0, 9, (16,), generator=g)
    fl = torch.rand(16, generator=g) < 0.5
    assert torch.equal(a, _naive(x, dy, dx, fl))
    assert torch.equal(B.augment(x, g, pad=0, flip=False), x)


def test_iterate_batches_covers_and_normalises(fake10):
    data = ID.load_dataset("cifar10", fake10)
    g = torch.Generator().manual_seed(0)
    seen = torch.cat([yb for _, yb in B.iterate_batches(data.train_x, torch.arange(60), 16, data.mean, data.std, g,
                                                        shuffle=True)])
    assert sorted(seen.tolist()) == list(range(60)) and seen.tolist() != list(range(60))
    batches = list(B.iterate_batches(data.train_x, data.train_y, 16, data.mean, data.std, g, shuffle=True,
                                     train_augment=True, drop_last=True))
    assert len(batches) == B.n_batches(60, 16, drop_last=True) == 3
    assert all(xb.shape == (16, 3, 32, 32) and xb.dtype == torch.float32 for xb, _ in batches)
    xb, _ = next(B.iterate_batches(data.test_x, data.test_y, 30, data.mean, data.std))
    expect = (data.test_x.float() / 255 - data.mean.view(1, 3, 1, 1)) / data.std.view(1, 3, 1, 1)
    torch.testing.assert_close(xb, expect)
    unlabelled = list(B.iterate_batches(data.test_x, None, 30, data.mean, data.std))  # images only: yb is None
    assert all(yb is None for _, yb in unlabelled)
    torch.testing.assert_close(unlabelled[0][0], expect[:30])
    with pytest.raises(ValueError, match="Generator"):
        next(B.iterate_batches(data.test_x, data.test_y, 8, data.mean, data.std, shuffle=True))


def test_cutout_sets_one_clipped_square_to_the_mean_and_leaves_the_rest_as_without_it(fake10):
    """cutout=0 draws nothing more (the batches of a run without it, bit for bit); cutout=s sets an s x s square
    around a drawn centre (cut off at the image's edge) to 0 after normalisation, i.e. the mean colour, and
    every other pixel is the batch without cutout; two ranks' shards put together are one process's batch."""
    data = ID.load_dataset("cifar10", fake10)

    def batches(cutout, shard=None):
        g = torch.Generator().manual_seed(3)
        return list(B.iterate_batches(data.train_x, data.train_y, 16, data.mean, data.std, g, shuffle=True,
                                      train_augment=True, drop_last=True, cutout=cutout, shard=shard))

    plain, cut = batches(0), batches(8)
    g = torch.Generator().manual_seed(3)
    old = list(B.iterate_batches(data.train_x, data.train_y, 16, data.mean, data.std, g, shuffle=True,
                                 train_augment=True, drop_last=True))
    assert all(torch.equal(a[0], b[0]) for a, b in zip(plain, old))
    for (xp, yp), (xc, yc) in zip(plain, cut):
        assert torch.equal(yp, yc)
        changed = (xp != xc).any(1)  # (B, H, W)
        assert torch.all(xc.permute(0, 2, 3, 1)[changed] == 0)
        for img in changed:
            rows, cols = img.any(1).nonzero().flatten(), img.any(0).nonzero().flatten()
            assert 1 <= len(rows) <= 8 and 1 <= len(cols) <= 8
            assert img[rows.min():rows.max() + 1, cols.min():cols.max() + 1].all()  # one rectangle
    params = torch.tensor([[0, 0], [0, 0], [0, 0], [0, 31], [0, 16]])  # centres (0, 0) and (31, 16)
    mask = B.cutout_mask(params, 8, 32, 32)[:, 0]
    assert mask[0].eq(0).sum() == 16 and mask[0, :4, :4].eq(0).all()  # the corner's square: 4 x 4 left
    assert mask[1].eq(0).sum() == 8 * 5 and mask[1, 27:, 12:20].eq(0).all()
    halves = [batches(8, shard=(r, 2)) for r in (0, 1)]
    assert all(torch.equal(torch.cat([a[0], b[0]]), c[0]) for a, b, c in zip(*halves, cut))


def test_balanced_subset():
    labels = torch.arange(1000) % 10
    idx = ID.balanced_subset(labels, 200, seed=0)
    assert len(idx) == 200 and len(set(idx.tolist())) == 200
    assert torch.bincount(labels[idx], minlength=10).tolist() == [20] * 10
    assert torch.equal(idx, ID.balanced_subset(labels, 200, seed=0))
    assert not torch.equal(idx, ID.balanced_subset(labels, 200, seed=1))
    counts = torch.bincount(labels[ID.balanced_subset(labels, 205, seed=2)], minlength=10)
    assert counts.sum() == 205 and counts.max() - counts.min() == 1
    skewed = torch.cat([torch.zeros(3, dtype=torch.long), torch.ones(50, dtype=torch.long)])
    assert torch.bincount(skewed[ID.balanced_subset(skewed, 20)]).tolist() == [3, 17]
    with pytest.raises(ValueError, match="subset of 2000"):
        ID.balanced_subset(labels, 2000)


def test_unknown_dataset_name():
    with pytest.raises(ValueError, match="cifar10"):
        ID.load_dataset("mnist")


def test_a_copy_smaller_than_the_presets_subset_is_used_whole_and_said(tmp_path, capsys):
    """Issue 54: a course's copy of CIFAR-10 (1,000 test images) under the cpu preset, which measures its shipped
    models on 2,000, stopped five of eight student copies ("cannot take a subset of 2000 from 1000 examples").
    A run's studies now take every image such a copy holds, and say so once; a copy large enough gives the
    preset's subset, the same images as before."""
    from cnet_lib.images.runs.image_presets import image_runs
    from cnet_lib.images.runs.study_inputs import study_data

    FD.write_fake_cifar(tmp_path, n_train=100, n_test=60, seed=0)
    settings = Settings(preset="cpu", data_dir=str(tmp_path), device="cpu")
    cfg = image_runs("cpu", data_dir=str(tmp_path))["euler_fixed"]
    assert cfg.n_test == 2000
    data = study_data(cfg, settings, with_train=False)
    assert len(data.test_y) == 60
    said = capsys.readouterr().out
    assert "holds 60 test images, fewer than the cpu preset's 2,000: the chapter uses all 60" in said, said
    study_data(cfg, settings, with_train=False)
    assert "fewer than" not in capsys.readouterr().out, "said once"
    smaller = image_runs("smoke", data_dir=str(tmp_path), n_test=20)["euler_fixed"]
    subset = study_data(smaller, Settings(preset="smoke", data_dir=str(tmp_path), device="cpu"), with_train=False)
    same = ID.load_dataset("cifar10", tmp_path, None, 20, test_seed=ID.TEST_SUBSET_SEED, progress=False)
    assert torch.equal(subset.test_y, same.test_y) and torch.equal(subset.test_x, same.test_x)
    with pytest.raises(ValueError, match="cannot take a subset of 2000 from 60"):
        ID.load_dataset("cifar10", tmp_path, None, 2000, progress=False)  # asked for directly, it is an error still
