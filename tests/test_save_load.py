"""Saving and loading a model (issue 52, item 3): one documented pair, ``cnet_lib.save_model`` and
``cnet_lib.load_model``, that keeps the graph (scheme, N_t, basis, M, adaptive options) and reads the book's own
checkpoints (a training run's, a shipped model's, a file ``save_checkpoint`` wrote with a model's config); weights-only
loading, atomic writes, clear errors."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

import cnet_lib
from cnet_lib import CheckpointError, ContinuousNet, load_model, save_model
from cnet_lib.images.training import train_state as TS
from cnet_lib.runtime import checkpoint as C

SHIPPED = Path(cnet_lib.__file__).parent / "shipped"


def _model(**kw) -> ContinuousNet:
    torch.manual_seed(0)
    kw = {"channels": (4, 8, 8), "n_basis": 2, "scheme": "rk4_classic", **kw}
    model = ContinuousNet(**kw)
    with torch.no_grad():  # skip gains away from zero: every block shows in the logits
        for block in model.blocks:
            block.skip_gain.uniform_(0.5, 1.0)
    return model.eval()


@pytest.mark.parametrize("change", ["none", "refine", "manifest", "project", "adaptive"])
def test_save_and_load_keep_the_graph(tmp_path, change):
    model = _model()
    if change == "refine":
        model.refine()
    elif change == "manifest":
        model.manifest(["rk4_38", "midpoint", "euler"], [3, 5, 2])
    elif change == "project":
        model.refine().project(3, basis="legendre", n_steps=5)
    elif change == "adaptive":
        model.manifest("dopri5", rtol=1e-3, atol=1e-4)
    x = torch.randn(2, 3, 8, 8)
    path = save_model(model, tmp_path / "model.pt", extra={"note": "hello", "step": torch.tensor(3)})
    assert path == tmp_path / "model.pt" and not list(tmp_path.glob(".*.tmp")), "written through a temporary file"
    loaded, ck = load_model(path, with_checkpoint=True)
    assert not loaded.training and loaded.manifestation == model.manifestation
    assert loaded.config() == model.config() and ck["extra"]["note"] == "hello"
    torch.testing.assert_close(loaded(x), model(x), rtol=1e-6, atol=1e-6)
    # the book's image loader reads it too
    book_model, _ = TS.load_model(path, "cpu")
    torch.testing.assert_close(book_model(x), model(x), rtol=1e-6, atol=1e-6)


def test_float64_models_come_back_exact_and_in_float64(tmp_path):
    model = _model().double()
    x = torch.randn(2, 3, 8, 8, dtype=torch.float64)
    loaded = load_model(save_model(model, tmp_path / "m.pt"))
    assert next(loaded.parameters()).dtype == torch.float64
    assert torch.equal(loaded(x), model(x))


def test_half_precision_storage(tmp_path):
    model = _model()
    loaded = load_model(save_model(model, tmp_path / "m.pt", weights="bfloat16"))
    assert next(loaded.parameters()).dtype == torch.float32
    x = torch.randn(2, 3, 8, 8)
    torch.testing.assert_close(loaded(x), model(x), rtol=0.1, atol=0.1)


def test_the_book_checkpoints_load():
    """A model shipped with the book (a training checkpoint's weights, float16) loads with cnet_lib.load_model, in
    the manifestation it was trained in."""
    ckpt = SHIPPED / "cpu-rk4_refined" / "checkpoint.pt"
    model = load_model(ckpt)
    book, ck = TS.load_model(ckpt, "cpu")
    assert model.manifestation == book.manifestation == [tuple(m) for m in ck["extra"]["manifestation"]]
    assert model.manifestation[0][0] == "rk4_classic"
    x = torch.randn(2, 3, 32, 32)
    assert torch.equal(model(x), book(x))
    assert load_model(ckpt.parent).manifestation == model.manifestation  # a run folder


def test_a_file_save_checkpoint_wrote_with_a_model_config_loads(tmp_path):
    """Issue 52: images.load_model refused a file that save_checkpoint wrote."""
    model = _model()
    C.save_checkpoint(tmp_path / "c.pt", model.state_dict(), model.config())
    x = torch.randn(2, 3, 8, 8)
    torch.testing.assert_close(load_model(tmp_path / "c.pt")(x), model(x), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(TS.load_model(tmp_path / "c.pt", "cpu")[0](x), model(x), rtol=1e-6, atol=1e-6)
    # a config saved by an older cnet_lib (no scheme, no N_t): loaded with Euler, and said so
    old = {k: v for k, v in model.config().items() if k not in ("scheme", "n_steps", "rtol", "atol", "max_steps", "norm")}
    C.save_checkpoint(tmp_path / "old.pt", model.state_dict(), old)
    with pytest.warns(UserWarning, match=r"does not say which scheme and N_t.*model.manifest"):
        assert load_model(tmp_path / "old.pt").manifestation[0] == ("euler", 2)


def test_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        load_model(tmp_path / "nothing.pt")
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(CheckpointError, match="empty"):
        load_model(tmp_path / "empty.pt")
    C.save_checkpoint(tmp_path / "other.pt", {"w": torch.ones(2)}, {"lr": 0.1})
    with pytest.raises(CheckpointError, match="holds no model configuration.*save_model"):
        load_model(tmp_path / "other.pt")
    with pytest.raises(TypeError, match="save_model saves a ContinuousNet"):
        save_model(torch.nn.Linear(2, 2), tmp_path / "linear.pt")
    C.save_checkpoint(tmp_path / "future.pt", _model().state_dict(), {**_model().config(), "wings": 2})
    with pytest.raises(CheckpointError, match="another version of cnet_lib"):
        load_model(tmp_path / "future.pt")
    # a file that asks to run code on loading is refused (weights_only=True)
    torch.save({"format": 1, "config": {}, "model": {}, "extra": {"x": Path("a")}}, tmp_path / "evil.pt")
    with pytest.raises(CheckpointError, match="could run code"):
        load_model(tmp_path / "evil.pt")


def test_the_save_load_pair_is_public_and_documented():
    assert {"save_model", "load_model", "CheckpointError"} <= set(cnet_lib.__all__)
    assert "Example" in save_model.__doc__ and "save_model" in ContinuousNet.__doc__
