"""cnet_lib.images.studies.sweep_measure and ``cnet sweep``: rows for every manifestation, compression and the blocks-as-identity baseline."""
import json

import pytest
import torch

from cnet_lib.cli import sweep as sweep_cli
from cnet_lib.images.studies import sweep_measure as S
from cnet_lib.report import sweep_report as SR
from cnet_lib.cli import train as train_cli
from cnet_lib import images as T
from cnet_lib.images.runs.image_presets import image_runs
from cnet_lib.images.data.fake_data import write_fake_cifar
from cnet_lib.images.data.image_data import load_dataset
from cnet_lib.core.models import ContinuousNet


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_fake_cifar(root, n_train=64, n_test=40, seed=1)
    return root, load_dataset("cifar10", root)


def _model(skip_init):
    torch.manual_seed(0)
    return ContinuousNet((4, 8, 8), n_basis=4, scheme="rk4_classic", skip_init=skip_init).eval()


def test_sweep_rows(data):
    _, d = data
    model = _model(skip_init=False)
    before = {k: v.clone() for k, v in model.state_dict().items() if torch.is_tensor(v)}
    rows = S.manifestation_sweep(model, d.test_x, d.test_y, d.mean, d.std, schemes=("euler", "rk4_classic"),
                                 n_steps=(1, 2, 4), compress=(1, 2), compress_schemes=("rk4_38", "euler"),
                                 batch_size=16, progress=False)
    kinds = [r["kind"] for r in rows]
    # 1 trained + 2 schemes x 3 N_t + 2 schemes x 2 compressions + identity
    assert kinds == ["trained"] + ["manifestation"] * 6 + ["compressed"] * 4 + ["identity"]
    assert [(r["scheme"], r["n_steps"]) for r in rows[1:7]] == [(s, n) for s in ("euler", "rk4_classic") for n in (1, 2, 4)]
    assert [r.get("is_trained") for r in rows[1:7]] == [False] * 5 + [True]
    assert rows[6]["accuracy"] == rows[0]["accuracy"]
    assert [(r["scheme"], r["n_basis"], r["n_steps"]) for r in rows[7:11]] == [
        ("rk4_38", 1, 1), ("rk4_38", 2, 2), ("euler", 1, 1), ("euler", 2, 2)]
    full = rows[0]["n_parameters"]
    ident = rows[-1]
    assert rows[7]["n_parameters"] < rows[8]["n_parameters"] < full
    assert ident["n_parameters"] < rows[7]["n_parameters"] and ident["units"] == 0 and ident["scheme"] is None
    assert [r["units"] for r in rows[1:4]] == [3, 6, 12] and rows[0]["units"] == 4 * 4 * 3
    assert all(0 <= r["accuracy"] <= 1 and r["seconds"] > 0 for r in rows)
    # M = 4 and 8 are not compressions of an M = 4 model: refused, not dropped (issue 18)
    with pytest.raises(ValueError, match="compress holds M = 4, 8, but the model has M = 4"):
        S.manifestation_sweep(model, d.test_x, d.test_y, d.mean, d.std, compress=(1, 4, 8), progress=False)
    # the model is left as it was
    assert model.manifestation == [("rk4_classic", 4)] * 3
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items() if torch.is_tensor(v))


def test_skip_init_model_is_the_identity_everywhere(data):
    # s(t) = 0 at initialisation: every manifestation and compression computes the same function
    _, d = data
    rows = S.manifestation_sweep(_model(skip_init=True), d.test_x, d.test_y, d.mean, d.std, schemes=("euler", "rk4_38"),
                                 n_steps=(1, 3), compress=(2,), batch_size=40, progress=False)
    assert len({r["accuracy"] for r in rows}) == 1


def test_table_and_figure(data):
    _, d = data
    rows = S.manifestation_sweep(_model(skip_init=False), d.test_x, d.test_y, d.mean, d.std, schemes=("euler", "midpoint"),
                                 n_steps=(1, 2), compress=(2,), progress=False)
    table = SR.sweep_table(rows)
    assert "identity" in table and "manifestation" in table and table.count("\n") >= len(rows)
    from cnet_lib.draw import fig_accuracy_vs_nt

    fig = fig_accuracy_vs_nt({"model": rows})
    names = [t.name for t in fig.data]
    assert names[:2] == ["euler", "midpoint"] and any("trained" in n for n in names) and any("compressed" in n for n in names)
    assert len(fig.layout.shapes) == 1 and fig.layout.shapes[0].line.dash == "dash"


def test_sweep_checkpoint_and_command_line(data, tmp_path):
    root, _ = data
    cfg = T.TrainConfig(dataset="cifar10", data_dir=str(root), channels=(4, 8, 8), batch_size=32, lr=0.05,
                        lr_schedule="constant", scheme="rk4_classic", n_basis=1, refine_at=(1,), epochs=2,
                        device="cpu", progress=False, out_dir=str(tmp_path / "run"))
    res = T.train(cfg)
    out = tmp_path / "sweep.json"
    html = tmp_path / "sweep.html"
    argv = [str(tmp_path / "run" / "checkpoint.pt"), "--schemes", "euler", "rk4_38", "--n-steps", "1", "2",
            "--compress", "1", "--out", str(out), "--html", str(html), "--quiet", "--device", "cpu"]
    assert sweep_cli.main(argv) == 0
    payload = json.loads(out.read_text())
    rows = payload["rows"]
    assert payload["n_test"] == 40 and payload["environment"]["device"] == "cpu" and payload["epochs_trained"] == 2
    assert [r["kind"] for r in rows].count("manifestation") == 4 and rows[-1]["kind"] == "identity"
    assert rows[0]["accuracy"] == pytest.approx(res.history[-1]["test_acc"])  # same model, same test images
    assert "<html>" in html.read_text()
    assert sweep_cli.main([str(tmp_path / "nothing.pt"), "--quiet"]) == 1
