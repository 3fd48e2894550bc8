"""Device and dtype guards that a CPU-only CI can run (issue: the image chapters crashed on CUDA).

Two families of bug only showed on a GPU: devices compared without normalising their index
(``cuda`` against a tensor's ``cuda:0``), and model transforms that built new layers with the
default dtype and device.  Their CPU twins are an indexed device string, ``cpu:0``, and a float64
model.  The CUDA graph plumbing runs here too, through a stand-in graph that replays by calling
the captured step (:class:`cnet_lib.runtime.cuda_graphs.EagerGraph`).
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
from cnet_lib.images.runs import run_store as RS
from cnet_lib.runtime.checkpoint import load_checkpoint, save_checkpoint
from cnet_lib.runtime.device import resolve_device, same_device
from cnet_lib.runtime.settings import Settings
from cnet_lib.studies.manifestation import study as ST
from cnet_lib.cli import sweep as sweep_cli, train as train_cli
from cnet_lib.runtime import cuda_graphs as CG
from cnet_lib.studies import manifestation as M
from cnet_lib import images as T

GRID = dict(schemes=("euler", "rk4_classic"), n_steps=(1, 2), compress=(1,), compress_schemes=("rk4_classic",))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_fake_cifar(root, n_train=96, n_test=40, seed=0)
    return str(root)


def _state(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items() if torch.is_tensor(v)}


def _equal_states(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# ----------------------------------------------------------------------------- devices
def test_resolve_device_normalises_like_a_tensor():
    assert resolve_device("cpu:0") == torch.device("cpu") == torch.zeros(1, device="cpu:0").device
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    assert same_device("cpu:0", "cpu") and same_device(torch.zeros(1).device, "cpu:0")
    assert torch.device("cpu:0") != torch.device("cpu"), "the trap these helpers exist for"
    with pytest.raises(ValueError, match="not a torch device"):
        resolve_device("gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            resolve_device("cuda")


def test_checkpoint_loads_with_an_indexed_map_location(tmp_path):
    path = save_checkpoint(tmp_path / "ck.pt", {"w": torch.arange(3.0)}, {"a": 1})
    ck = load_checkpoint(path, map_location="cpu:0")
    assert torch.equal(ck["model"]["w"], torch.arange(3.0))


def test_pipeline_with_an_indexed_device_string(data_dir, tmp_path):
    """train -> checkpoint -> resume -> sweep -> study runs -> live app, all with device 'cpu:0'."""
    dev = "cpu:0"
    base = dict(dataset="cifar10", data_dir=data_dir, channels=(2, 4, 4), batch_size=32, lr=0.05, lr_schedule="constant",
                scheme="rk4_classic", n_basis=1, refine_at=(1,), device=dev, progress=False, n_train=64, n_test=32)
    data = load_dataset("cifar10", data_dir, 64, 32, device=dev)  # tensors report 'cpu'
    first = T.train(T.TrainConfig(**base, epochs=1, out_dir=str(tmp_path / "run")), data=data)
    resumed = T.train(T.TrainConfig(**base, epochs=2, out_dir=str(tmp_path / "run"), resume=True), data=data)
    assert len(first.history) == 1 and len(resumed.history) == 2 and resumed.history[1]["refined"]
    model, ck = T.load_model(tmp_path / "run", device=dev)
    assert _equal_states(_state(model), _state(resumed.model))
    rows, meta = ST.sweep_checkpoint(tmp_path / "run", device=dev, grid=GRID, progress=False)
    assert rows[0]["accuracy"] == pytest.approx(resumed.final_accuracy) and meta["environment"]["device"] == "cpu"

    settings = Settings(preset="smoke", runs_dir=tmp_path / "runs", data_dir=data_dir, device=dev)
    assert settings.device == torch.device("cpu")
    runs = RS.trained_runs(settings, verbose=False, n_train=64, n_test=32, channels=(2, 4, 4), batch_size=32)
    sweeps = ST.run(runs, GRID, device=dev, verbose=False)
    app = M.live_app(runs, M.fig_sweep_explorer(sweeps), device=dev, n_images=16, n_show=4)
    assert "text/html" in app._repr_mimebundle_()


# ----------------------------------------------------------------------------- dtypes
@pytest.fixture
def model64():
    torch.manual_seed(0)
    model = ContinuousNet(channels=(2, 4), n_basis=2, scheme="euler", skip_init=True).double().eval()
    with torch.no_grad():
        for b in model.blocks:
            b.skip_gain.fill_(0.5)
    return model


def test_every_model_transform_keeps_float64(model64):
    def dtypes(m):
        return {t.dtype for t in [*m.parameters(), *m.buffers()] if t.is_floating_point()}

    assert dtypes(model64) == {torch.float64}
    x = torch.randn(3, 3, 32, 32, dtype=torch.float64)
    resnet = resnet_from_continuousnet(model64).eval()
    assert dtypes(resnet) == {torch.float64}
    with torch.no_grad():
        assert torch.equal(resnet(x), model64(x)), "still the same network, bit for bit, in float64"
    assert dtypes(copy.deepcopy(model64).refine()) == {torch.float64}
    assert dtypes(copy.deepcopy(model64).project(1, "legendre")) == {torch.float64}
    with torch.no_grad(), model64.manifested("rk4_classic", 3):
        assert model64(x).dtype == torch.float64
    block = model64.blocks[0]
    assert block.gain(0.25).dtype == torch.float64 and block.theta(0.25)["conv1.weight"].dtype == torch.float64
    plain = ContinuousNet(channels=(2,), n_basis=1, skip_init=False).double()
    assert plain.blocks[0].gain(0.0).dtype == torch.float64
    assert ContinuousNet(channels=(2,), n_basis=1).double().blocks[0].skip_gain.dtype == torch.float64


def test_evaluation_runs_a_float64_model_in_float64(model64, data_dir):
    d = load_dataset("cifar10", data_dir, n_test=40)
    acc, _ = evaluate(model64, d.test_x, d.test_y, d.mean, d.std, batch_size=8)
    with torch.no_grad():
        pred = model64(normalize(d.test_x, d.mean, d.std).double()).argmax(1)
    assert acc == pytest.approx((pred == d.test_y).double().mean().item())


# ----------------------------------------------------------------------------- CUDA graph plumbing, on the CPU
def test_graph_key_compares_tensors_by_identity():
    a, b = torch.zeros(2), torch.zeros(2)
    assert CG.GraphKey(1, [a]) == CG.GraphKey(1, [a]) and CG.GraphKey(1, [a]) != CG.GraphKey(1, [b])
    assert CG.GraphKey(1, [a]) != CG.GraphKey(2, [a])
    m = ContinuousNet(channels=(2,), n_basis=1)
    x = torch.zeros(4, 3, 32, 32)
    k = CG.module_key(m, x)
    assert k == CG.module_key(m, x)
    assert k != CG.module_key(m, torch.zeros(5, 3, 32, 32)), "batch shape"
    with m.manifested("rk4_classic"):
        assert k != CG.module_key(m, x), "manifestation"
    assert k != CG.module_key(m.eval(), x), "train/eval mode"
    m.train()
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    k1 = CG.train_step_key(m, opt, x)
    opt.param_groups[0]["lr"] = 0.01
    assert CG.train_step_key(m, opt, x) != k1, "learning rate"
    k2 = CG.train_step_key(m, opt, x)
    m.refine(opt)
    assert CG.train_step_key(m, opt, x) != k2, "refinement replaces the Parameters"


def test_graphs_only_on_cuda_and_never_when_turned_off(tmp_path):
    assert CG.graph_class(torch.device("cpu")) is None
    assert CG.graphs_enabled(torch.device("cuda")) and not CG.graphs_enabled(torch.device("cuda"), requested=False)
    off = Settings.from_environment({"CNET_CUDA_GRAPHS": "0", "CNET_DATA_DIR": str(tmp_path)}, device="cpu")
    assert not off.cuda_graphs and Settings.from_environment({}).cuda_graphs
    cfgs = RS.run_configs(off.replace(preset="smoke"), verbose=False)
    assert all(not cfg.cuda_graphs and not CG.graphs_enabled(torch.device("cuda"), cfg.cuda_graphs)
               for cfg in cfgs.values()), "the session's setting reaches every run it trains"


def test_step_runner_warms_up_captures_and_recaptures():
    calls = []

    def body(x):
        calls.append(x.clone())
        return (x * 2,)

    r = CG.StepRunner(body, CG.EagerGraph, warmup=2)
    outs = [r("k", torch.tensor([float(i)]))[0].item() for i in range(5)]
    assert outs == [0.0, 2.0, 4.0, 6.0, 8.0] and r.captures == 1, "warm-up, warm-up, capture + replay, replay, replay"
    r("other key", torch.tensor([1.0]))
    r("other key", torch.tensor([1.0]))
    assert r.captures == 1
    assert r("other key", torch.tensor([3.0]))[0].item() == 6.0 and r.captures == 2
    assert r("other key", torch.tensor([4.0]), capture=False)[0].item() == 8.0 and not r.graphed
    eager = CG.StepRunner(body, None)
    assert eager("k", torch.tensor([5.0]))[0].item() == 10.0 and eager.captures == 0


def test_training_through_graphs_equals_eager_bit_for_bit(data_dir, tmp_path, monkeypatch):
    """The graphed loop (refinement, an lr step and resume included) does exactly the eager steps."""
    kw = dict(dataset="cifar10", data_dir=data_dir, channels=(2, 4, 4), batch_size=16, lr=0.05, lr_schedule="step",
              lr_milestones=(2,), scheme="rk4_classic", n_basis=1, refine_at=(1,), epochs=3, device="cpu",
              progress=False, n_train=64, n_test=32, eval_batch_size=8)
    eager = T.train(T.TrainConfig(**kw))
    captures = []

    class CountingGraph(CG.EagerGraph):
        def __init__(self, body, static_inputs):
            captures.append(tuple(t.shape for t in static_inputs))
            super().__init__(body, static_inputs)

    monkeypatch.setattr(CG, "graph_class", lambda device, requested=True: CountingGraph if requested else None)
    graphed = T.train(T.TrainConfig(**kw))
    assert _equal_states(_state(eager.model), _state(graphed.model))
    assert [h["train_loss"] for h in eager.history] == [h["train_loss"] for h in graphed.history]
    assert [h["test_acc"] for h in eager.history] == [h["test_acc"] for h in graphed.history]
    train_captures = [c for c in captures if len(c) == 2]
    assert len(train_captures) == 3, "captured at the start, after the refinement and after the lr step"
    assert len(captures) > 3, "the per-epoch evaluation (4 full batches) is graphed too"
    captures.clear()
    no_graphs = T.train(T.TrainConfig(**kw, cuda_graphs=False))
    assert not captures and _equal_states(_state(eager.model), _state(no_graphs.model))

    # an interrupted graphed run resumes to the same weights
    T.train(T.TrainConfig(**{**kw, "epochs": 2}, out_dir=str(tmp_path / "r")))
    resumed = T.train(T.TrainConfig(**kw, out_dir=str(tmp_path / "r"), resume=True))
    assert _equal_states(_state(eager.model), _state(resumed.model))


def test_graphed_evaluation_equals_eager(data_dir):
    d = load_dataset("cifar10", data_dir, n_test=40)
    torch.manual_seed(1)
    model = ContinuousNet(channels=(2, 4), n_basis=2, scheme="midpoint").eval()
    ev = Evaluator(graph_cls=CG.EagerGraph, min_graph_batches=2)
    eager = [evaluate(model, d.test_x, d.test_y, d.mean, d.std, batch_size=8)[0]]
    graphed = [ev(model, d.test_x, d.test_y, d.mean, d.std, batch_size=8)[0]]
    with model.manifested("rk4_38", 3):
        eager.append(evaluate(model, d.test_x, d.test_y, d.mean, d.std, batch_size=8)[0])
        graphed.append(ev(model, d.test_x, d.test_y, d.mean, d.std, batch_size=8)[0])
    assert eager == graphed and ev._runner.captures == 2
    assert not model.training


def test_capture_runs_with_the_garbage_collector_off(monkeypatch):
    """A collection during a capture can free an older graph, which invalidates the capture
    (seen on an H200): _CudaGraph collects first and keeps the collector off while capturing."""
    import contextlib
    import gc

    monkeypatch.setattr(torch.cuda, "CUDAGraph", lambda: object())
    monkeypatch.setattr(torch.cuda, "graph", lambda g: contextlib.nullcontext())
    seen = []
    CG._CudaGraph(lambda x: seen.append(gc.isenabled()) or (x,), (torch.zeros(1),))
    assert seen == [False] and gc.isenabled()
