"""The GPU paths, on a real CUDA device (every test is marked ``cuda``: skipped without a GPU).

Run on a GPU machine with ``pytest -m cuda`` (``bash scripts/gpu_check.sh`` does, with the
chapters).  Training, resume, sweeps, the ResNet map and the live app
run with the device given as ``cuda``, ``cuda:0`` and by default; graphed steps are compared
with eager ones.
"""
from __future__ import annotations

import copy

import pytest
import torch

from cnet_lib.images.data.batches import normalize
from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.images.data.image_data import load_dataset
from cnet_lib.images.runs.image_presets import image_runs
from cnet_lib.images.training.evaluation import Evaluator, evaluate
from cnet_lib.core.models import ContinuousNet, resnet_from_continuousnet
from cnet_lib.images.runs import run_store as RS, study_inputs as SI
from cnet_lib.runtime.cuda_graphs import graph_class
from cnet_lib.runtime.device import default_device, precision_for, resolve_device
from cnet_lib.runtime.settings import Settings
from cnet_lib.studies.manifestation import study as ST
from cnet_lib.cli import sweep as sweep_cli, train as train_cli
from cnet_lib.studies import manifestation as M, robustness
from cnet_lib import images as T

pytestmark = pytest.mark.cuda

GRID = dict(schemes=("euler", "rk4_classic"), n_steps=(1, 2, 4), compress=(1,), compress_schemes=("rk4_classic",))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_fake_cifar(root, n_train=256, n_test=128, seed=0)
    return str(root)


def _cfg(data_dir, **kw):
    base = dict(dataset="cifar10", data_dir=data_dir, channels=(4, 8, 8), batch_size=32, lr=0.05, lr_schedule="step",
                lr_milestones=(2,), scheme="rk4_classic", n_basis=1, refine_at=(1,), epochs=3, progress=False,
                eval_batch_size=32)
    return T.TrainConfig(**{**base, **kw})


def _close_states(a, b, rtol=1e-4, atol=1e-5):
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(
        torch.allclose(sa[k].float(), sb[k].float(), rtol=rtol, atol=atol) for k in sa if torch.is_tensor(sa[k]))


def test_default_device_is_cuda_and_indexed():
    assert default_device().type == "cuda" and default_device().index is not None
    assert resolve_device("cuda") == torch.zeros(1, device="cuda").device


@pytest.mark.parametrize("device", ["cuda", "cuda:0", None])
def test_training_on_every_spelling_of_the_device(data_dir, tmp_path, device):
    data = load_dataset("cifar10", data_dir, device="cuda")  # tensors report cuda:0
    res = T.train(_cfg(data_dir, device=device, out_dir=str(tmp_path / "run")), data=data)
    assert res.history[-1]["n_steps"] == [2, 2, 2]
    assert next(res.model.parameters()).device.type == "cuda"
    model, _ = T.load_model(tmp_path / "run", device=device)
    assert next(model.parameters()).is_cuda


def test_a_graphed_step_matches_an_eager_step():
    """From the same state, a replayed step computes what the eager step computes (float32)."""
    from cnet_lib.runtime.device import Precision
    from cnet_lib.images import SGDStep

    torch.manual_seed(0)
    base = ContinuousNet((4, 8, 8), n_basis=2, scheme="rk4_classic").cuda().train()
    x = torch.randn(16, 3, 32, 32, device="cuda")
    y = torch.randint(0, 10, (16,), device="cuda")
    results = {}
    for mode, gcls in (("eager", None), ("graph", graph_class(torch.device("cuda")))):
        model = copy.deepcopy(base)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        step = SGDStep(model, opt, Precision(), gcls)
        losses = [step(x, y)[0].item() for _ in range(4)]  # 2 warm-up steps, capture + replay, replay
        results[mode] = (losses, model)
    assert step.runner.captures == 1
    assert results["graph"][0] == pytest.approx(results["eager"][0], rel=1e-5)
    assert _close_states(results["eager"][1], results["graph"][1], rtol=1e-4, atol=1e-6)


def test_graphed_training_matches_eager(data_dir):
    """Whole runs, float32: the losses agree (GPU kernels are not bit-reproducible, and training
    amplifies the differences, so the weights are compared step by step above instead)."""
    assert graph_class(torch.device("cuda")) is not None
    eager = T.train(_cfg(data_dir, amp=False, cuda_graphs=False, device="cuda"))
    graphed = T.train(_cfg(data_dir, amp=False, cuda_graphs=True, device="cuda"))
    le, lg = [h["train_loss"] for h in eager.history], [h["train_loss"] for h in graphed.history]
    assert lg == pytest.approx(le, rel=1e-2)


def test_graphed_training_with_mixed_precision_learns(data_dir):
    res = T.train(_cfg(data_dir, device="cuda", epochs=4, refine_at=(1, 2)))
    losses = [h["train_loss"] for h in res.history]
    assert all(torch.isfinite(torch.tensor(losses))) and losses[-1] < losses[0]


def test_resume_on_the_gpu(data_dir, tmp_path):
    straight = T.train(_cfg(data_dir, device="cuda", amp=False, out_dir=str(tmp_path / "a")))
    T.train(_cfg(data_dir, device="cuda", amp=False, epochs=2, out_dir=str(tmp_path / "b")))
    resumed = T.train(_cfg(data_dir, device="cuda", amp=False, out_dir=str(tmp_path / "b"), resume=True))
    assert [h["n_basis"] for h in resumed.history] == [h["n_basis"] for h in straight.history]
    assert [h["train_loss"] for h in resumed.history] == pytest.approx([h["train_loss"] for h in straight.history],
                                                                        rel=1e-2)


def test_sweep_on_the_gpu(data_dir, tmp_path):
    T.train(_cfg(data_dir, device="cuda", out_dir=str(tmp_path / "run")))
    rows, meta = ST.sweep_checkpoint(tmp_path / "run", device="cuda:0", grid=GRID, progress=False)
    assert meta["environment"]["device"].startswith("cuda") and len(rows) == 1 + 6 + 1 + 1
    hist = T.load_model(tmp_path / "run", device="cuda")[1]["extra"]["history"]
    assert rows[0]["accuracy"] == pytest.approx(hist[-1]["test_acc"], abs=2 / 128)


def test_graphed_evaluation_matches_eager(data_dir):
    d = load_dataset("cifar10", data_dir, device="cuda")
    torch.manual_seed(0)
    model = ContinuousNet((4, 8, 8), n_basis=2, scheme="rk4_classic").cuda().eval()
    ev = Evaluator(precision_for("cuda", amp=False), graph_class(torch.device("cuda")), min_graph_batches=2)
    for scheme, n in (("rk4_classic", 2), ("euler", 4)):
        with model.manifested(scheme, n):
            assert ev(model, d.test_x, d.test_y, d.mean, d.std, 16)[0] == pytest.approx(
                evaluate(model, d.test_x, d.test_y, d.mean, d.std, 16, amp=False, graphs=False)[0], abs=1 / 128)
    assert ev._runner.captures == 2


def test_resnet_map_on_the_gpu():
    torch.manual_seed(0)
    model = ContinuousNet((4, 8), n_basis=3, scheme="euler").cuda().eval()
    with torch.no_grad():
        for b in model.blocks:
            b.skip_gain.fill_(0.3)
    resnet = resnet_from_continuousnet(model).eval()
    assert {p.device for p in resnet.parameters()} == {torch.zeros(1, device="cuda").device}
    x = torch.randn(8, 3, 32, 32, device="cuda")
    with torch.no_grad():
        assert torch.allclose(resnet(x), model(x), atol=1e-5)
    model64 = ContinuousNet((4,), n_basis=2, scheme="euler").cuda().double()
    assert {p.dtype for p in resnet_from_continuousnet(model64).parameters()} == {torch.float64}


def test_study_and_live_app_on_the_gpu(data_dir, tmp_path):
    settings = Settings(preset="smoke", runs_dir=tmp_path / "runs", data_dir=data_dir, device="cuda")
    runs = RS.trained_runs(settings, verbose=False)
    assert all(next(r.model.parameters()).is_cuda for r in runs.values())
    sweeps = ST.run(runs, GRID, verbose=False)
    app = M.live_app(runs, M.fig_sweep_explorer(sweeps), device="cuda", n_images=64, n_show=4)
    bundle = app._repr_mimebundle_()
    assert "text/html" in bundle
    run = runs["rk4_refined"]
    with torch.no_grad():
        d = SI.study_data(run.config, settings, device="cuda", with_train=False)
        assert run.model(normalize(d.test_x[:4], d.mean, d.std)).is_cuda
    study = robustness.run(runs, verbose=False)  # weight noise drawn on the CPU, added on the GPU
    assert set(study) == set(runs) | {"euler_fixed on rk4_classic"} and all(study.values())
