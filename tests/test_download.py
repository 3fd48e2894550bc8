"""The real download path, end to end, against a local server: URL, MD5 check, extraction, and
the messages a reader gets in Colab or on a laptop when the data cannot be had."""
from __future__ import annotations

import pytest

from cifar_server import ARCHIVE, fake_cifar_tarball, serve
from cnet_lib.images import data as D
from cnet_lib.images import runs as R
from cnet_lib.train import image_runs


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    return fake_cifar_tarball(tmp_path_factory.mktemp("tarball"), n_train=300, n_test=100)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for key in ("CNET_CIFAR10_URL", "CNET_CIFAR10_MD5", "CNET_DATA_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def _what_to_do(msg: str) -> None:
    assert "In Google Colab" in msg and "%env CNET_DATA_DIR" in msg, msg
    assert "On your own machine" in msg and "CNET_DATA_DIR" in msg and "tar xzf" in msg, msg
    assert "../shared" not in msg, "a path only this repository's CI knows means nothing to a reader"


def test_download_from_a_mirror_checks_md5_and_extracts(tmp_path, tarball, monkeypatch, capsys):
    archive, md5 = tarball
    with serve({f"/{ARCHIVE}": archive.read_bytes()}) as (base, requests):
        monkeypatch.setenv("CNET_CIFAR10_URL", f"{base}/{ARCHIVE}")
        monkeypatch.setenv("CNET_CIFAR10_MD5", md5)
        folder = D.ensure_dataset("cifar10", tmp_path / "data", progress=False)
        assert folder == tmp_path / "data" / "cifar-10-batches-py"
        assert len(D.read_split(folder, "cifar10", "test")[1]) == 100
        assert D.ensure_dataset("cifar10", tmp_path / "data") == folder
        assert requests == [f"/{ARCHIVE}"], "downloaded once, then read from disk"
    assert sorted(p.name for p in (tmp_path / "data").iterdir() if not p.name.endswith(".lock")) == [
        "cifar-10-batches-py"], "no temporary leftovers (the download's lock file may stay)"
    assert "Downloading cifar10" in capsys.readouterr().out, "a reader on a slow line is told what is happening"


def test_a_mirror_without_md5_is_checked_against_the_published_md5(tmp_path, tarball, monkeypatch):
    archive, _ = tarball
    with serve({f"/{ARCHIVE}": archive.read_bytes()}) as (base, _requests):
        monkeypatch.setenv("CNET_CIFAR10_URL", f"{base}/{ARCHIVE}")
        assert D.dataset_source("cifar10") == (f"{base}/{ARCHIVE}", D.DATASETS["cifar10"].md5)
        with pytest.raises(D.DatasetChecksumError) as err:
            D.ensure_dataset("cifar10", tmp_path / "data", progress=False)
    assert isinstance(err.value, RuntimeError) and isinstance(err.value, D.DatasetNotFoundError)
    assert "MD5" in str(err.value) and D.DATASETS["cifar10"].md5 in str(err.value)
    _what_to_do(str(err.value))
    assert [p for p in (tmp_path / "data").iterdir() if not p.name.endswith(".lock")] == []


def test_the_published_archive_is_always_checked_against_its_published_md5(monkeypatch):
    assert D.dataset_source("cifar10") == (D.DATASETS["cifar10"].url, D.DATASETS["cifar10"].md5)
    monkeypatch.setenv("CNET_CIFAR10_MD5", "0" * 32)
    with pytest.raises(ValueError, match="CNET_CIFAR10_URL"):
        D.dataset_source("cifar10")
    monkeypatch.setenv("CNET_CIFAR10_URL", "http://127.0.0.1:9/x.tar.gz")
    monkeypatch.setenv("CNET_CIFAR10_MD5", "not-an-md5")
    with pytest.raises(ValueError, match="32 hexadecimal"):
        D.dataset_source("cifar10")
    assert D.dataset_source("cifar10", url="http://h/a.tgz", md5="A" * 32) == ("http://h/a.tgz", "a" * 32)


@pytest.mark.parametrize("failure", ["missing", "truncated", "refused"])
def test_a_failed_download_says_what_to_do(tmp_path, tarball, monkeypatch, failure):
    archive, md5 = tarball
    with serve({f"/{ARCHIVE}": archive.read_bytes()}, truncated=(f"/{ARCHIVE}",)) as (base, _requests):
        url = {"missing": f"{base}/nothing.tar.gz", "truncated": f"{base}/{ARCHIVE}",
               "refused": "http://127.0.0.1:9/cifar-10-python.tar.gz"}[failure]
        monkeypatch.setenv("CNET_CIFAR10_URL", url)
        monkeypatch.setenv("CNET_CIFAR10_MD5", md5)
        with pytest.raises(D.DatasetNotFoundError) as err:
            D.ensure_dataset("cifar10", tmp_path / "data", progress=False)
    msg = str(err.value)
    assert url in msg and str(tmp_path / "data") in msg
    _what_to_do(msg)
    assert not (tmp_path / "data" / "cifar-10-batches-py").exists()


def test_offline_error_says_what_to_do(tmp_path):
    with pytest.raises(D.DatasetNotFoundError) as err:
        D.ensure_dataset("cifar10", tmp_path / "nowhere", download=False)
    _what_to_do(str(err.value))


def test_smoke_downloads_only_from_a_mirror_it_was_given(tmp_path, tarball, monkeypatch, capsys):
    """The smoke preset never fetches the 170 MB archive, but it does use the real download code
    when a mirror is named explicitly (that is how the Colab rehearsal gets its data)."""
    archive, md5 = tarball
    with serve({f"/{ARCHIVE}": archive.read_bytes()}) as (base, requests):
        folder = R.study_data_dir("smoke", tmp_path / "plain")
        assert "FAKE data" in capsys.readouterr().out and requests == []
        assert folder != tmp_path / "plain"
        monkeypatch.setenv("CNET_CIFAR10_URL", f"{base}/{ARCHIVE}")
        monkeypatch.setenv("CNET_CIFAR10_MD5", md5)
        assert R.study_data_dir("smoke", tmp_path / "mirror") == tmp_path / "mirror"
        assert "FAKE" not in capsys.readouterr().out and requests == [f"/{ARCHIVE}"]


def test_the_fake_data_note_says_what_to_do(tmp_path, capsys):
    R.study_data_dir("smoke", tmp_path / "nothing-here")
    out = capsys.readouterr().out
    assert "FAKE data" in out and "Google Colab" in out and "own machine" in out and "CNET_DATA_DIR" in out


def test_study_data_falls_back_to_fake_data_like_the_other_chapters(tmp_path, monkeypatch, capsys):
    """refinement_training loads data from image_runs()' config (no data_dir): offline, under smoke,
    it must get the announced fake data set, not a DatasetNotFoundError or a download."""
    monkeypatch.setenv("CNET_DATA_DIR", str(tmp_path / "empty"))
    cfg = image_runs("smoke")["rk4_refined"]
    assert cfg.data_dir is None
    data = R.study_data(cfg, "cpu", with_train=False)
    assert len(data.test_y) == cfg.n_test and "FAKE data" in capsys.readouterr().out
    assert "cnet_lib-fake" in data.folder
