"""Training (cnet_lib.images.training.train_config, train_loop, train_state) and cnet_lib.runtime.checkpoint: refinement
training, resume, refusal of other configs, NaN stop, the learning-rate schedule."""
import json
import math
import os

import pytest
import torch

from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.images.runs.image_presets import image_runs
from cnet_lib.images.training.train_state import start_or_resume
from cnet_lib.core.models import count_parameters
from cnet_lib.images.training import train_config as TC, train_loop as TL, train_state as TS
from cnet_lib.runtime.device import Precision
from cnet_lib.cli import train as train_cli
from cnet_lib.runtime import checkpoint as C
from cnet_lib import images as T


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_fake_cifar(root, n_train=96, n_test=32, seed=0)
    return str(root)


def tiny(data_dir, **kw):
    base = dict(dataset="cifar10", data_dir=data_dir, channels=(4, 8, 8), batch_size=32, lr=0.05,
                lr_schedule="constant", scheme="rk4_classic", n_basis=1, refine_at=(1,), epochs=2, device="cpu",
                progress=False, seed=0)
    return T.TrainConfig(**{**base, **kw})


def _state(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items() if torch.is_tensor(v)}


def test_smoke_run_with_refinement_in_the_middle(data_dir, tmp_path):
    cfg = tiny(data_dir, out_dir=str(tmp_path / "run"))
    res = T.train(cfg)
    h = res.history
    assert [r["n_basis"] for r in h] == [[1, 1, 1], [2, 2, 2]]
    assert [r["n_steps"] for r in h] == [[1, 1, 1], [2, 2, 2]]
    assert [r["refined"] for r in h] == [False, True]
    # the blocks' parameters double, nothing else changes
    block_params = sum(count_parameters(b) for b in T.build_model(cfg).blocks)
    assert h[1]["n_parameters"] - h[0]["n_parameters"] == block_params
    assert h[1]["n_parameters"] == res.model.n_parameters()
    assert all(math.isfinite(r["train_loss"]) and 0 <= r["test_acc"] <= 1 and r["train_seconds"] > 0 for r in h)
    # results file: preset/seed/device/versions/timings
    results = json.loads((tmp_path / "run" / TS.RESULTS).read_text())
    assert results["seed"] == 0 and results["epochs_done"] == 2 and len(results["history"]) == 2
    assert results["environment"]["device"] == "cpu" and results["environment"]["torch"] == str(torch.__version__)
    assert results["train_seconds_total"] > 0
    # the checkpoint is readable with weights_only and rebuilds the trained model
    model, ck = T.load_model(tmp_path / "run", device="cpu")
    assert ck["extra"]["epoch"] == 2 and model.manifestation == [("rk4_classic", 2)] * 3
    ref = _state(res.model)
    assert all(torch.equal(ref[k], v) for k, v in _state(model).items())


def test_resume_gives_the_same_weights_as_an_uninterrupted_run(data_dir, tmp_path):
    # M = N_t: 1 -> 2 (after epoch 1) -> 4 (after epoch 2).  The "interrupted" run stops after epoch 2:
    # resuming must replay the first refinement before loading, then do the second one itself.
    kw = dict(refine_at=(1, 2), epochs=3)
    straight = T.train(tiny(data_dir, **kw, out_dir=str(tmp_path / "a")))
    T.train(tiny(data_dir, **{**kw, "epochs": 2}, out_dir=str(tmp_path / "b")))
    resumed = T.train(tiny(data_dir, **kw, out_dir=str(tmp_path / "b"), resume=True))
    assert [r["n_basis"][0] for r in resumed.history] == [1, 2, 4]
    a, b = _state(straight.model), _state(resumed.model)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a), [k for k in a if not torch.equal(a[k], b[k])]
    assert [r["train_loss"] for r in resumed.history] == [r["train_loss"] for r in straight.history]
    # a finished run resumes to a plain load: no training, same weights
    again = T.train(tiny(data_dir, **kw, out_dir=str(tmp_path / "b"), resume=True))
    assert len(again.history) == 3 and all(torch.equal(b[k], v) for k, v in _state(again.model).items())


def test_checkpoint_from_another_configuration_is_refused(data_dir, tmp_path):
    out = str(tmp_path / "run")
    T.train(tiny(data_dir, epochs=1, out_dir=out))
    with pytest.raises(C.CheckpointMismatchError) as err:
        T.train(tiny(data_dir, channels=(4, 8, 16), out_dir=out, resume=True))
    msg = str(err.value)
    assert "channels" in msg and "[4, 8, 8]" in msg and "[4, 8, 16]" in msg and "out" in msg
    with pytest.raises(FileExistsError, match="resume"):
        T.train(tiny(data_dir, out_dir=out))


def test_save_and_load_checkpoint(tmp_path):
    path = tmp_path / "ck.pt"
    C.save_checkpoint(path, {"w": torch.arange(3.0)}, {"a": 1, "b": (1, 2)}, extra={"h": [{"x": 1.5}]})
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"]  # no temporary left behind
    ck = C.load_checkpoint(path, expected_config={"a": 1, "b": [1, 2]})
    assert torch.equal(ck["model"]["w"], torch.arange(3.0)) and ck["extra"]["h"] == [{"x": 1.5}]
    with pytest.raises(C.CheckpointMismatchError, match=r"a: checkpoint has 1, this run has 2"):
        C.load_checkpoint(path, expected_config={"a": 2, "b": [1, 2]})
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        C.load_checkpoint(tmp_path / "missing.pt")
    torch.save({"format": 1, "model": {}, "obj": torch.nn.Linear(1, 1)}, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match=r"was not loaded: it asks for torch\.nn\.modules\.linear\.Linear while being"):
        C.load_checkpoint(tmp_path / "bad.pt")


def test_nan_loss_stops_with_a_clear_error(data_dir):
    with pytest.raises(TL.TrainingDiverged, match=r"epoch 1, step \d+.*lower the learning rate"):
        T.train(tiny(data_dir, lr=1e12, scheme="euler", refine_at=(), epochs=3))


def test_learning_rate_schedules():
    step = T.TrainConfig(lr=0.1, lr_schedule="step", lr_milestones=(2, 4), lr_decay=0.1, epochs=6)
    assert [round(TC.learning_rate(step, e), 6) for e in range(6)] == [0.1, 0.1, 0.01, 0.01, 0.001, 0.001]
    cos = T.TrainConfig(lr=0.1, lr_schedule="cosine", epochs=4)
    assert TC.learning_rate(cos, 0) == pytest.approx(0.1) and TC.learning_rate(cos, 2) == pytest.approx(0.05)
    assert "epochs" in cos.identity() and "epochs" not in step.identity()
    with pytest.raises(ValueError, match="refine_at"):
        T.TrainConfig(refine_at=(3, 1))
    with pytest.raises(ValueError, match="lr_schedule"):
        T.TrainConfig(lr_schedule="linear")


def test_onecycle_schedule_rises_then_falls_in_straight_lines():
    cfg = T.TrainConfig(lr=0.4, lr_schedule="onecycle", warmup_epochs=3, epochs=10)
    factors = [TC.lr_factor(cfg, e) for e in range(10)]
    assert factors == [0.25, 0.5, 0.75, 1.0, 6 / 7, 5 / 7, 4 / 7, 3 / 7, 2 / 7, 1 / 7]
    assert max(factors) == 1.0 and all(f > 0 for f in factors)
    assert "epochs" in cfg.identity()  # the cycle's shape depends on it
    with pytest.raises(ValueError, match="warmup_epochs"):
        T.TrainConfig(lr_schedule="onecycle", warmup_epochs=10, epochs=10)


def test_recipe_fields_keep_old_identities_and_reach_the_optimizer_and_loss(data_dir):
    """nesterov, label_smoothing, warmup_epochs and cutout are left out of a run's identity at their defaults (every
    checkpoint and shipped model from before them keeps its hash), are in it otherwise, and are used."""
    plain = T.TrainConfig()
    assert not {"nesterov", "label_smoothing", "warmup_epochs", "cutout"} & set(plain.identity())
    recipe = T.TrainConfig(nesterov=True, label_smoothing=0.1, lr_schedule="onecycle", warmup_epochs=2, cutout=8)
    assert {"nesterov", "label_smoothing", "warmup_epochs", "cutout"} <= set(recipe.identity())
    for bad, match in ((dict(label_smoothing=1.0), "label_smoothing"), (dict(nesterov="yes"), "nesterov"),
                       (dict(cutout=-1), "cutout"), (dict(cutout=32), "cutout"),
                       (dict(nesterov=True, momentum=0.0), "nesterov"), (dict(warmup_epochs=-1), "warmup_epochs")):
        with pytest.raises(ValueError, match=match):
            T.TrainConfig(**bad)
    res = T.train(tiny(data_dir, nesterov=True, label_smoothing=0.2, refine_at=(), epochs=1))
    smooth, sharp = (T.SGDStep(res.model, torch.optim.SGD(res.model.parameters(), lr=0.0), Precision(),
                               label_smoothing=ls) for ls in (0.2, 0.0))
    x, y = torch.randn(8, 3, 32, 32), torch.arange(8) % 10
    assert smooth(x, y)[0].item() != pytest.approx(sharp(x, y)[0].item())
    model = T.build_model(tiny(data_dir))
    state = start_or_resume(tiny(data_dir, nesterov=True), model, None, torch.device("cpu"), torch.Generator())
    assert state.optimizer.param_groups[0]["nesterov"] is True


def _closed_form(cfg, epoch):
    """The rate the loop set by hand before it used torch.optim.lr_scheduler (the same expressions, verbatim)."""
    if cfg.lr_schedule == "constant":
        return cfg.lr
    if cfg.lr_schedule == "step":
        return cfg.lr * cfg.lr_decay ** sum(epoch >= m for m in cfg.lr_milestones)
    if cfg.lr_schedule == "onecycle":
        w = cfg.warmup_epochs
        return cfg.lr * ((epoch + 1) / (w + 1) if epoch <= w else (cfg.epochs - epoch) / (cfg.epochs - w))
    return 0.5 * cfg.lr * (1.0 + math.cos(math.pi * epoch / max(cfg.epochs, 1)))


SCHEDULES = [dict(lr_schedule="constant", lr=0.05, epochs=5),
             dict(lr_schedule="step", lr=0.1, lr_milestones=(1, 2, 3, 4, 5), lr_decay=0.1, epochs=7),
             dict(lr_schedule="step", lr=0.3, lr_milestones=(2, 4, 6, 8), lr_decay=0.3, epochs=10),
             dict(lr_schedule="step", lr=0.1, lr_milestones=(30, 60, 90), lr_decay=0.1, epochs=120),
             dict(lr_schedule="cosine", lr=0.1, epochs=9), dict(lr_schedule="cosine", lr=0.07, epochs=200),
             dict(lr_schedule="onecycle", lr=0.4, warmup_epochs=6, epochs=40)]


@pytest.mark.parametrize("kw", SCHEDULES, ids=[f"{k['lr_schedule']}-{k['epochs']}" for k in SCHEDULES])
def test_the_lr_scheduler_gives_the_closed_form_rates_to_the_bit(kw):
    """torch.optim.lr_scheduler.LambdaLR over lr_factor sets exactly the rates of the closed form, epoch after
    epoch and when a resumed run builds it at a later epoch from an optimizer state that carries another rate."""
    cfg = T.TrainConfig(**kw)
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=cfg.lr, momentum=0.9)
    sched = TC.lr_scheduler(cfg, opt)
    for epoch in range(cfg.epochs):
        assert opt.param_groups[0]["lr"] == _closed_form(cfg, epoch) == TC.learning_rate(cfg, epoch), epoch
        opt.step()
        sched.step()
    for start in range(1, cfg.epochs):
        resumed = torch.optim.SGD([p], lr=cfg.lr, momentum=0.9)
        resumed.load_state_dict({**opt.state_dict(), "param_groups": [{**opt.state_dict()["param_groups"][0], "lr": 9.0}]})
        TC.lr_scheduler(cfg, resumed, start)
        assert resumed.param_groups[0]["lr"] == _closed_form(cfg, start), start


def test_multistep_lr_would_not_be_exact():
    """Why the schedule is a LambdaLR: MultiStepLR multiplies the rate at each milestone, which drifts from
    lr * decay**k in the last bit after a few milestones."""
    cfg = T.TrainConfig(lr=0.1, lr_schedule="step", lr_milestones=(1, 2, 3, 4), lr_decay=0.1, epochs=5)
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=cfg.lr)
    multi = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=list(cfg.lr_milestones), gamma=cfg.lr_decay)
    rates = []
    for _ in range(cfg.epochs):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        multi.step()
    assert rates[4] != _closed_form(cfg, 4) == TC.learning_rate(cfg, 4)


def test_presets_table():
    for name in ("smoke", "cpu", "gpu", "paper"):
        runs = image_runs(name)
        assert {"rk4_refined", "euler_fixed"} <= set(runs)
        assert all(c.preset == name and c.run_name == r for r, c in runs.items())
    paper = image_runs("paper")
    rk4, euler, wide = paper["rk4_refined"], paper["euler_fixed"], paper["cifar100_wide_refined"]
    assert rk4.channels == (16, 32, 64) and rk4.scheme == "rk4_classic" and rk4.refine_at == (20, 40, 60, 70, 80)
    assert rk4.final_n_steps() == 32 and euler.final_n_steps() == 32 and euler.refine_at == ()
    assert wide.dataset == "cifar100" and wide.channels == (64, 128, 256) and wide.final_n_steps() == 8
    assert all(c.lr == 0.1 and c.momentum == 0.9 and c.weight_decay == 5e-4 and c.batch_size == 128
               for c in paper.values())
    smoke = image_runs("smoke")["rk4_refined"]
    assert smoke.refine_at and smoke.refine_at[0] < smoke.epochs
    runs = image_runs("smoke", out_root="book_runs", resume=True)
    assert runs["euler_fixed"].out_dir == os.path.join("book_runs", "smoke-euler_fixed") and runs["euler_fixed"].resume


def test_command_line(data_dir, tmp_path, capsys):
    out = tmp_path / "cli"
    argv = ["--preset", "smoke", "--run", "euler_fixed", "--data-dir", data_dir, "--n-train", "64", "--n-test",
            "32", "--epochs", "1", "--out-dir", str(out), "--quiet", "--device", "cpu"]
    assert train_cli.main(argv) == 0
    results = json.loads((out / TS.RESULTS).read_text())
    assert results["preset"] == "smoke" and results["config"]["scheme"] == "euler" and results["epochs_done"] == 1
    assert train_cli.main(argv) == 1 and "resume" in capsys.readouterr().err  # refuses to overwrite
    assert train_cli.main(argv[:-5] + ["--epochs", "2", "--out-dir", str(out), "--quiet", "--resume"]) == 0
    assert json.loads((out / TS.RESULTS).read_text())["epochs_done"] == 2
    assert train_cli.main(["--list"]) == 0 and "cifar100_wide_refined" in capsys.readouterr().out


@pytest.mark.filterwarnings("ignore:CUDA is not available:UserWarning")  # only the context object is built
def test_amp_dtype_bf16_only_where_native(monkeypatch):
    from cnet_lib.runtime import device as D

    assert D.amp_dtype(torch.device("cpu")) is None
    for capability, expected in (((8, 0), torch.bfloat16), ((9, 0), torch.bfloat16), ((7, 5), None), ((7, 0), None)):
        D._cuda_bf16.cache_clear()
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=None, c=capability: c)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        assert D.amp_dtype(torch.device("cuda")) is expected, capability
        assert D.amp_dtype(torch.device("cuda:1")) is expected, capability
        precision = D.precision_for(torch.device("cuda"), amp=True)
        assert precision.autocast_dtype is expected and precision.channels_last, capability
        eager = D.precision_for(torch.device("cuda"), amp=True, graphs=False)  # bf16 measured slower eagerly
        assert eager.autocast_dtype is None and eager.channels_last, capability
        assert isinstance(precision.autocast("cuda"), torch.autocast) == (expected is not None), capability
        assert D.precision_for(torch.device("cuda"), amp=False) == D.Precision()
        assert not isinstance(D.precision_for("cuda", amp=False).autocast("cuda"), torch.autocast)
    D._cuda_bf16.cache_clear()
