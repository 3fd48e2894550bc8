"""The data pack (``python -m cnet_lib pack``, :mod:`cnet_lib.images.data.cifar_pack`): written from the offline
CIFAR-10 copy, read wherever the pickles are read, with the same labels, order and split, the pixels within
a stated error, and every damage refused in one sentence before any image is decoded."""
from __future__ import annotations

import io
import json
import shutil

import numpy as np
import pytest
import torch
from smoke_data import SHARED_DATA

from cnet_lib.images.data.cifar_files import CifarFileError
from cnet_lib.images.data.cifar_pack import pixel_error, write_pack
from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.images.data import cifar_pack as CP, download as DL, image_data as ID
from cnet_lib.runtime.checkpoint import file_digest
from cnet_lib.cli import pack as pack_cli

# bounds on the small offline copy at quality 90 (measured there: max 45, mean 2.09, PSNR 39.1 dB), and the
# largest mean error of one image (8: two unrelated photographs differ by far more)
BOUNDS = {"offline": dict(max_abs=64, mean_abs=3.0, psnr_db=37.0, per_image=8),
          # without the offline copy the fake images are uniform noise, which lossy WebP keeps far less well
          # (measured: max 134, mean 18.3, PSNR 20.6 dB); two unrelated noise images differ by about 85 on average
          "fake": dict(max_abs=160, mean_abs=25.0, psnr_db=18.0, per_image=40)}


def _bounds(source) -> dict:
    return BOUNDS["offline" if source == SHARED_DATA else "fake"]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """The folder that contains the pickled CIFAR-10: the offline copy, else a fake one."""
    if (SHARED_DATA / "cifar-10-batches-py").is_dir():
        return SHARED_DATA
    root = tmp_path_factory.mktemp("fake")
    write_fake_cifar(root, n_train=500, n_test=100)
    return root


@pytest.fixture(scope="module")
def packed(source, tmp_path_factory):
    root = tmp_path_factory.mktemp("pack")
    lines = []
    folder = write_pack(source, root, quality=90, say=lines.append)
    assert folder == root / "cifar-10-webp" and len(lines) == 6
    return root


def test_the_pack_holds_the_same_labels_order_and_split_within_the_error_bound(source, packed):
    ref = ID.load_dataset("cifar10", source, download=False, progress=False)
    got = ID.load_dataset("cifar10", packed, download=False, progress=False)
    assert got.folder.endswith("cifar-10-webp") and got.classes == ref.classes
    for split in ("train", "test"):
        rx, ry = getattr(ref, f"{split}_x"), getattr(ref, f"{split}_y")
        gx, gy = getattr(got, f"{split}_x"), getattr(got, f"{split}_y")
        assert torch.equal(gy, ry), f"{split}: labels or their order differ"
        assert gx.shape == rx.shape and gx.dtype == torch.uint8
        err = pixel_error(rx.numpy(), gx.numpy())
        b = _bounds(source)
        assert err["max_abs"] <= b["max_abs"] and err["mean_abs"] <= b["mean_abs"] and err["psnr_db"] >= b["psnr_db"], (
            split, err)
        per_image = (gx.double() - rx.double()).abs().mean(dim=(1, 2, 3))
        assert per_image.max() < b["per_image"], "an image far from its source: the order is off or images bled into each other"
    manifest = json.loads((packed / "cifar-10-webp" / "manifest.json").read_text())
    assert manifest["error"]["max_abs"] == max(pixel_error(getattr(ref, f"{s}_x").numpy(),
                                                           getattr(got, f"{s}_x").numpy())["max_abs"] for s in ("train", "test"))
    assert [b["source"] for b in manifest["batches"]] == [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    assert [b["split"] for b in manifest["batches"]] == ["train"] * 5 + ["test"]
    src = source / "cifar-10-batches-py"
    assert manifest["source"]["sha256"] == {f.name: file_digest(f) for f in src.iterdir()}


def test_a_subset_is_the_same_images_as_from_the_pickles(source, packed):
    ref = ID.load_dataset("cifar10", source, n_train=100, n_test=50, seed=3, download=False, progress=False)
    got = ID.load_dataset("cifar10", packed, n_train=100, n_test=50, seed=3, download=False, progress=False)
    assert torch.equal(ref.train_y, got.train_y) and torch.equal(ref.test_y, got.test_y)
    assert (ref.test_x.double() - got.test_x.double()).abs().max() <= _bounds(source)["max_abs"]


def test_pickles_are_read_first_and_the_pack_where_they_are_absent(source, packed, tmp_path):
    both = tmp_path / "both"
    shutil.copytree(source / "cifar-10-batches-py", both / "cifar-10-batches-py")
    shutil.copytree(packed / "cifar-10-webp", both / "cifar-10-webp")
    assert DL.ensure_dataset("cifar10", both, download=False).name == "cifar-10-batches-py"
    assert DL.ensure_dataset("cifar10", packed, download=False).name == "cifar-10-webp"


def _copy(packed, tmp_path):
    shutil.copytree(packed / "cifar-10-webp", tmp_path / "cifar-10-webp")
    return tmp_path / "cifar-10-webp"


def _reseal(folder, name):
    """Record ``name``'s new SHA-256 in the manifest, as a forged or rewritten pack would."""
    m = json.loads((folder / "manifest.json").read_text())
    m["files"][name] = file_digest(folder / name)
    (folder / "manifest.json").write_text(json.dumps(m))


def _lossless_webp() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(buf, "WEBP", lossless=True)
    return buf.getvalue()


@pytest.mark.parametrize("damage, says", [
    ("flip", "does not match the SHA-256"),
    ("lossless", "is not a lossy WebP image"),
    ("offsets", "does not cut"),
    ("labels", "outside 0..9"),
    ("manifest", "is not the manifest of a pack"),
    ("missing", "cannot be read"),
])
def test_a_damaged_pack_gets_one_sentence_and_no_decoding(packed, tmp_path, monkeypatch, damage, says):
    folder = _copy(packed, tmp_path)
    webps = folder / "test_batch.webps"
    if damage == "flip":
        data = bytearray(webps.read_bytes())
        data[len(data) // 2] ^= 0xFF
        webps.write_bytes(bytes(data))
    elif damage == "lossless":  # the first image replaced by a lossless one: the decoder must never see it
        data, offsets = webps.read_bytes(), np.frombuffer((folder / "test_batch.offsets").read_bytes(), "<u4")
        blob = _lossless_webp()
        webps.write_bytes(blob + data[offsets[1]:])
        (folder / "test_batch.offsets").write_bytes((offsets.astype(np.int64) - int(offsets[1]) + len(blob))
                                                    .clip(0).astype("<u4").tobytes())
        _reseal(folder, "test_batch.webps")
        _reseal(folder, "test_batch.offsets")
    elif damage == "offsets":
        (folder / "test_batch.offsets").write_bytes((folder / "test_batch.offsets").read_bytes()[:-4])
        _reseal(folder, "test_batch.offsets")
    elif damage == "labels":
        (folder / "test_batch.labels").write_bytes(b"\x0c" * len((folder / "test_batch.labels").read_bytes()))
        _reseal(folder, "test_batch.labels")
    elif damage == "manifest":
        (folder / "manifest.json").write_text(json.dumps({"format": "something else"}))
    else:
        webps.unlink()
    decoded = []
    monkeypatch.setattr(CP, "decode_webp", lambda blob: decoded.append(blob) or np.zeros((32, 32, 3), np.uint8))
    with pytest.raises(CifarFileError) as err:
        ID.read_split(folder, "cifar10", "test")
    message = str(err.value)
    assert says in message and "python -m cnet_lib pack" in message and "\n" not in message
    if damage in ("flip", "lossless", "manifest", "missing"):
        assert not decoded, "an image was decoded before the pack was checked"


def test_the_command_line_writes_a_pack_and_says_what_is_wrong(tmp_path, capsys):
    src = tmp_path / "src"
    write_fake_cifar(src, n_train=20, n_test=10)
    assert pack_cli.main([str(src), str(tmp_path / "out"), "--quality", "80"]) == 0
    out = capsys.readouterr().out
    assert "pack written to" in out and "PSNR" in out
    assert CP.is_pack(tmp_path / "out" / "cifar-10-webp")
    assert pack_cli.main([str(tmp_path / "nowhere"), str(tmp_path / "out2")]) == 1
    assert "error: " in capsys.readouterr().err and not (tmp_path / "out2" / "cifar-10-webp").exists()
    assert pack_cli.main([str(src), str(tmp_path / "out3"), "--quality", "0"]) == 1
    assert "quality must be an integer >= 1" in capsys.readouterr().err
