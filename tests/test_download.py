"""The real download path, end to end, against a local server: URL, MD5 check, extraction, and
the messages a reader gets in Colab or on a laptop when the data cannot be had."""
from __future__ import annotations

import pytest
from cifar_server import ARCHIVE, fake_cifar_tarball, serve

from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.images.data import datasets as DS, download as DL, image_data as ID
from cnet_lib.images.runs import study_inputs as SI
from cnet_lib.runtime.settings import Settings
from cnet_lib.images import image_runs


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    return fake_cifar_tarball(tmp_path_factory.mktemp("tarball"), n_train=300, n_test=100)


@pytest.fixture(autouse=True)
def local_server_without_proxy(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def mirror(url: str, md5=None, **changes) -> Settings:
    """The settings a session with ``CNET_CIFAR10_URL`` (and ``CNET_CIFAR10_MD5``) set would have."""
    env = {"CNET_CIFAR10_URL": url, **({"CNET_CIFAR10_MD5": md5} if md5 else {})}
    return Settings.from_environment(env, device="cpu", **changes)


def _what_to_do(msg: str) -> None:
    """One paragraph (issue 52: it was three, aimed at Colab): the archive and how to extract it, the folder to give
    (the one holding cifar-10-batches-py, or that folder itself), then Colab."""
    assert "\n" not in msg and msg.count(". ") <= 6, msg
    assert "In Google Colab" in msg and "%env CNET_DATA_DIR" in msg, msg
    assert "tar xzf" in msg and "CNET_DATA_DIR" in msg and "(or that folder itself)" in msg, msg
    assert msg.index("tar xzf") < msg.index("Colab"), "one's own machine first"
    assert "../shared" not in msg, "a path only this repository's CI knows means nothing to a reader"


def test_download_from_a_mirror_checks_md5_and_extracts(tmp_path, tarball, capsys):
    archive, md5 = tarball
    with serve({f"/{ARCHIVE}": archive.read_bytes()}) as (base, requests):
        source = mirror(f"{base}/{ARCHIVE}", md5).download_source("cifar10")
        folder = DL.ensure_dataset("cifar10", tmp_path / "data", progress=False, **source)
        assert folder == tmp_path / "data" / "cifar-10-batches-py"
        assert len(ID.read_split(folder, "cifar10", "test")[1]) == 100
        assert DL.ensure_dataset("cifar10", tmp_path / "data", **source) == folder
        assert requests == [f"/{ARCHIVE}"], "downloaded once, then read from disk"
    assert sorted(p.name for p in (tmp_path / "data").iterdir() if not p.name.endswith(".lock")) == [
        "cifar-10-batches-py"], "no temporary leftovers (the download's lock file may stay)"
    assert "Downloading cifar10" in capsys.readouterr().out, "a reader on a slow line is told what is happening"


def test_a_mirror_without_md5_is_checked_against_the_published_md5(tmp_path, tarball):
    archive, _ = tarball
    with serve({f"/{ARCHIVE}": archive.read_bytes()}) as (base, _requests):
        source = mirror(f"{base}/{ARCHIVE}").download_source("cifar10")
        assert DL.dataset_source("cifar10", **source) == (f"{base}/{ARCHIVE}", DS.DATASETS["cifar10"].md5)
        with pytest.raises(DS.DatasetChecksumError) as err:
            DL.ensure_dataset("cifar10", tmp_path / "data", progress=False, **source)
    assert isinstance(err.value, RuntimeError) and isinstance(err.value, DS.DatasetNotFoundError)
    assert "MD5" in str(err.value) and DS.DATASETS["cifar10"].md5 in str(err.value)
    _what_to_do(str(err.value))
    assert [p for p in (tmp_path / "data").iterdir() if not p.name.endswith(".lock")] == []


def test_the_published_archive_is_always_checked_against_its_published_md5():
    assert DL.dataset_source("cifar10") == (DS.DATASETS["cifar10"].url, DS.DATASETS["cifar10"].md5)
    with pytest.raises(ValueError, match="CNET_CIFAR10_URL"):
        DL.dataset_source("cifar10", md5="0" * 32)
    with pytest.raises(ValueError, match="CNET_CIFAR10_URL"):
        Settings.from_environment({"CNET_CIFAR10_MD5": "0" * 32})
    with pytest.raises(ValueError, match="32 hexadecimal"):
        DL.dataset_source("cifar10", url="http://127.0.0.1:9/x.tar.gz", md5="not-an-md5")
    assert DL.dataset_source("cifar10", url="http://h/a.tgz", md5="A" * 32) == ("http://h/a.tgz", "a" * 32)


@pytest.mark.parametrize("failure", ["missing", "truncated", "refused"])
def test_a_failed_download_says_what_to_do(tmp_path, tarball, failure):
    archive, md5 = tarball
    with serve({f"/{ARCHIVE}": archive.read_bytes()}, truncated=(f"/{ARCHIVE}",)) as (base, _requests):
        url = {"missing": f"{base}/nothing.tar.gz", "truncated": f"{base}/{ARCHIVE}",
               "refused": "http://127.0.0.1:9/cifar-10-python.tar.gz"}[failure]
        with pytest.raises(DS.DatasetNotFoundError) as err:
            DL.ensure_dataset("cifar10", tmp_path / "data", progress=False, url=url, md5=md5)
    msg = str(err.value)
    assert url in msg and str(tmp_path / "data") in msg
    _what_to_do(msg)
    assert not (tmp_path / "data" / "cifar-10-batches-py").exists()


def test_offline_error_says_what_to_do(tmp_path):
    with pytest.raises(DS.DatasetNotFoundError) as err:
        DL.ensure_dataset("cifar10", tmp_path / "nowhere", download=False)
    _what_to_do(str(err.value))


def test_the_data_sets_own_folder_is_accepted_as_data_dir(tmp_path, tarball):
    """Issue 52: a data_dir pointing at cifar-10-batches-py itself was told to nest it again; it is read as it is, and
    a download into it lands there, not one folder deeper."""
    folder = write_fake_cifar(tmp_path / "data", n_train=20, n_test=10)
    assert DL.ensure_dataset("cifar10", folder, download=False) == folder
    assert len(ID.load_dataset("cifar10", folder, progress=False).test_y) == 10
    archive, md5 = tarball
    with serve({f"/{ARCHIVE}": archive.read_bytes()}) as (base, _requests):
        fresh = tmp_path / "fresh" / "cifar-10-batches-py"
        assert DL.ensure_dataset("cifar10", fresh, progress=False, url=f"{base}/{ARCHIVE}", md5=md5) == fresh
    assert not (fresh / "cifar-10-batches-py").exists()


def test_smoke_downloads_only_from_a_mirror_it_was_given(tmp_path, tarball, capsys):
    """The smoke preset never fetches the 170 MB archive, but it does use the real download code
    when a mirror is named explicitly (that is how the Colab rehearsal gets its data)."""
    archive, md5 = tarball
    with serve({f"/{ARCHIVE}": archive.read_bytes()}) as (base, requests):
        folder = SI.study_data_dir(Settings(preset="smoke", data_dir=tmp_path / "plain"))
        assert "FAKE data" in capsys.readouterr().out and requests == []
        assert folder != tmp_path / "plain"
        with_mirror = mirror(f"{base}/{ARCHIVE}", md5, preset="smoke", data_dir=tmp_path / "mirror")
        assert SI.study_data_dir(with_mirror) == tmp_path / "mirror"
        assert "FAKE" not in capsys.readouterr().out and requests == [f"/{ARCHIVE}"]


def test_the_fake_data_note_says_what_to_do(tmp_path, capsys):
    SI.study_data_dir(Settings(preset="smoke", data_dir=tmp_path / "nothing-here"))
    out = capsys.readouterr().out
    assert "FAKE data" in out and "Google Colab" in out and "own machine" in out and "CNET_DATA_DIR" in out


def test_study_data_falls_back_to_fake_data_like_the_other_chapters(tmp_path, capsys):
    """refinement_training loads data from image_runs()' config (no data_dir): offline, under smoke,
    it must get the announced fake data set, not a DatasetNotFoundError or a download."""
    cfg = image_runs("smoke")["rk4_refined"]
    assert cfg.data_dir is None
    data = SI.study_data(cfg, Settings(preset="smoke", data_dir=tmp_path / "empty"), "cpu", with_train=False)
    assert len(data.test_y) == cfg.n_test and "FAKE data" in capsys.readouterr().out
    assert "cnet_lib-fake" in data.folder
