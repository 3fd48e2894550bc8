"""Every ODE-Net of a study trained at once (cnet_lib.pendulum.train_batched) equals each trained alone, and a
study is trained once per machine (cnet_lib.pendulum.trained_models: train_models with settings).

The tolerance: in float64 the batched training sums the same products in another order (blocks of pairs, a
sigmoid for tanh), so each model's losses and weights after TRAINING_ITERS iterations are within TOLERANCE
(relative) of train_odenet's for the same job; measured at 300-4000 iterations they agree to 1e-13
(benchmarks/results/pendulum_batched-*.json records the agreement of a whole preset).
"""
from __future__ import annotations

import dataclasses
import os

import pytest
import torch

from cnet_lib import get_scheme
from cnet_lib import pendulum as P
from cnet_lib.pendulum import batched_training as BT
from cnet_lib.pendulum import trained_models as TM
from cnet_lib.runtime.cuda_graphs import EagerGraph
from cnet_lib.runtime.settings import Settings

TOLERANCE = 1e-11
TRAINING_ITERS = 60
JOBS = [  # every difference a study has: scheme, data step (pair counts 100, 50, 20: padding), seed, schedule, length
    P.TrainingJob("euler", 0.01, TRAINING_ITERS, T_data=1.0),
    P.TrainingJob("midpoint", 0.02, TRAINING_ITERS // 2, T_data=1.0, seed=3),
    P.TrainingJob("rk4_38", 0.05, TRAINING_ITERS, T_data=1.0, lr=5e-3, lr_final=None),
    P.TrainingJob("rk4_classic", 0.01, TRAINING_ITERS // 3, T_data=1.0, seed=1),
]


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


def _alone(job: P.TrainingJob, **kw):
    return P.train_odenet(job.data(), job.scheme, job.n_iters, lr=job.lr, lr_final=job.lr_final, seed=job.seed,
                          hidden=job.hidden, progress=False, **kw)


def test_fast_tanh_is_tanh_to_round_off():
    z = torch.cat([torch.linspace(-30, 30, 20001, dtype=torch.float64), torch.tensor([-800.0, 800.0, 0.0, 1e-300])])
    assert float((BT.fast_tanh(2 * z) - torch.tanh(z)).abs().max()) <= 4e-16


def test_gradients_by_hand_equal_autograd():
    """The loss and gradients of stacked_loss_and_grads against autograd through one_step (cnet backend), per
    model, with padded blocks, two groups per scheme and a scheme with a skipped stage (dopri5 as a fixed step)."""
    jobs = [dataclasses.replace(j, n_iters=1) for j in JOBS] + [P.TrainingJob("dopri5", 0.05, 1, T_data=1.0, seed=2)]
    models = [P.initial_odenet(j.seed, j.hidden) for j in jobs]
    pairs = [BT.ModelPairs(i, get_scheme(j.scheme), j.dt_data, *j.data().pairs()) for i, j in enumerate(jobs)]
    layout = BT.make_layout(pairs, len(jobs), torch.device("cpu"), r=30, group_rows=60)
    assert len(layout.groups) > len({j.scheme for j in jobs}), "some scheme's blocks are split into several groups"
    loss, (gWt, gb, gA) = BT.stacked_loss_and_grads(BT.StackedParams.from_models(models, torch.device("cpu")), layout)
    for m, (job, model) in enumerate(zip(jobs, models)):
        x_in, x_out = job.data().pairs()
        ref = ((P.one_step(model, x_in, job.scheme, job.dt_data, backend="cnet") - x_out) ** 2).sum(-1).mean() / job.dt_data**2
        ref.backward()
        assert abs(float(loss[m]) - ref.item()) <= 1e-13 * ref.item(), job
        assert _rel(gWt[m], model.inner.weight.grad.t()) < 1e-12 and _rel(gb[m, 0], model.inner.bias.grad) < 1e-12
        assert _rel(gA[m], model.outer.weight.grad) < 1e-12, job


def test_each_model_trained_in_the_batch_equals_training_it_alone():
    state = torch.random.get_rng_state()
    fits = P.train_batched(JOBS, progress=False, block_rows=40)
    assert torch.equal(torch.random.get_rng_state(), state), "the global random state is left alone"
    for job, fit in zip(JOBS, fits):
        alone = _alone(job)
        assert (fit.scheme, fit.dt_data, fit.n_iters, fit.trained_with) == (job.scheme, job.dt_data, job.n_iters, len(JOBS))
        assert max(abs(a - b) / b for a, b in zip(fit.losses, alone.losses)) < TOLERANCE, job
        for p, q in zip(fit.model.parameters(), alone.model.parameters()):
            assert _rel(p.detach(), q.detach()) < TOLERANCE, job


def test_a_batched_fit_resumes_as_the_same_model_trained_alone():
    """Its Adam state is torch's: train_odenet(resume=...) continues it as it continues the model trained alone."""
    job = JOBS[1]
    batched, alone = P.train_batched([job, JOBS[0]], progress=False)[0], _alone(job)
    more_b, more_a = (_alone(dataclasses.replace(job, n_iters=20), resume=f) for f in (batched, alone))
    assert more_b.n_iters == job.n_iters + 20
    assert max(abs(a - b) / b for a, b in zip(more_b.losses, more_a.losses)) < TOLERANCE


def test_the_graphed_iteration_is_the_eager_one(monkeypatch):
    """The CUDA-graph path (warm-up, capture per phase, replay), with the CPU stand-in for a graph."""
    eager = P.train_batched(JOBS, progress=False)
    monkeypatch.setattr(BT, "graph_class", lambda device, requested=True: EagerGraph if requested else None)
    graphed = P.train_batched(JOBS, progress=False)
    assert [f.losses for f in graphed] == [f.losses for f in eager]


def test_bad_batches_are_refused():
    with pytest.raises(ValueError, match="at least one"):
        P.train_batched([])
    with pytest.raises(ValueError, match="one hidden width"):
        P.train_batched([JOBS[0], dataclasses.replace(JOBS[1], hidden=8)])
    with pytest.raises(ValueError, match="rk4"):
        P.TrainingJob("rk4", 0.01, 10)


def test_the_device_is_chosen_by_measurement_and_a_long_training_is_announced(monkeypatch):
    device, estimates = BT.choose_device(JOBS, torch.device("cpu"))
    assert device == torch.device("cpu") and list(estimates) == ["cpu"] and 0 < estimates["cpu"] < 5
    assert BT.choose_device(JOBS, torch.device("cpu"), cpu_seconds=1.25) == (torch.device("cpu"), {"cpu": 1.25})
    text = TM.training_notice("paper", 9, torch.device("cpu"), {"cpu": 250.0, "cuda:0": 400.0})
    assert "about 4.2 min" in text and "cuda:0: about 6.7 min" in text and "%env CNET_PRESET=gpu" in text
    assert "%env" not in TM.training_notice("smoke", 5, torch.device("cpu"), {"cpu": 40.0})


def test_the_threads_are_chosen_by_measurement_and_change_no_bit(monkeypatch):
    """With the settings' threads, that count, unmeasured; without, one thread or every core, whichever the
    probe measures faster; and two threads train what one does to round-off (the stacked products split
    between them may sum in another order: the whole gpu preset differed in the 14th digit)."""
    assert BT.choose_threads(JOBS, 3) == (3, {})
    monkeypatch.setattr(BT, "available_cores", lambda: 1)
    assert BT.choose_threads(JOBS) == (1, {})
    monkeypatch.setattr(BT, "available_cores", lambda: 2)
    monkeypatch.setattr(BT, "estimate_seconds", lambda jobs, device, n, graphs: {1: 2.0, 2: 1.5}[n])
    assert BT.choose_threads(JOBS) == (2, {1: 2.0, 2: 1.5})
    one, two = (P.train_batched(JOBS, device="cpu", progress=False, threads=n) for n in (1, 2))
    for a, b in zip(one, two):
        assert max(abs(x - y) / y for x, y in zip(a.losses, b.losses)) < TOLERANCE
        assert all(_rel(p, q) < TOLERANCE for p, q in zip(a.model.state_dict().values(), b.model.state_dict().values()))


@pytest.fixture
def small_study(monkeypatch):
    monkeypatch.setattr(TM, "_TRAINED", {})
    return P.config_for("smoke", n_iters=12, control_iters=6)


def test_a_study_is_trained_once_per_machine_and_announced_when_long(small_study, tmp_path, monkeypatch, capsys):
    settings = Settings(runs_dir=tmp_path, device="cpu")
    monkeypatch.setattr(TM, "NOTICE_SECONDS", 0.0)
    first = P.train_models(small_study, settings=settings, progress=False)
    assert "Training the 5 ODE-Nets of the 'smoke' preset at once on cpu: about" in capsys.readouterr().out
    files = list((tmp_path / "pendulum").glob("smoke-*.pt"))
    assert len(files) == 1
    monkeypatch.setattr(TM, "_TRAINED", {})
    monkeypatch.setattr(TM, "train_batched", lambda *a, **k: pytest.fail("trained again"))
    again = P.train_models(small_study, settings=settings, progress=False)
    said = capsys.readouterr().out
    assert "the ones trained here before" in said and "/" not in said.split("ones trained here before")[1]
    assert all(again[s].losses == first[s].losses and again[s].trained_with == 5 for s in first)
    control = P.train_models(small_study, ("rk4_38",), dt_data=0.05, n_iters=6, settings=settings)["rk4_38"]
    assert (control.n_iters, control.dt_data, control.trained_with) == (6, 0.05, 5), "the control came with the study"


def test_a_damaged_or_foreign_study_file_is_set_aside_and_trained_again(small_study, tmp_path, capsys):
    settings = Settings(runs_dir=tmp_path, device="cpu")
    fits = list(P.train_models(small_study, settings=settings, progress=False).values())
    (path,) = (tmp_path / "pendulum").glob("smoke-*.pt")
    foreign = TM.study_key(dataclasses.replace(small_study, seed=1), [(f.scheme, f.dt_data, f.n_iters) for f in fits])
    assert TM.store_path(small_study, foreign, tmp_path) != path, "another config, another file"
    for damage in (lambda: path.write_bytes(path.read_bytes()[:200]),  # cut off
                   lambda: TM.save_study(path, foreign, fits)):  # another study's key
        damage()
        TM._TRAINED.clear()
        P.train_models(small_study, settings=settings, progress=False)
        assert "cannot be used" in capsys.readouterr().out and path.is_file()
    assert len(list(path.parent.glob("*.damaged-*"))) == 2, "both unusable files are kept beside it"
    assert TM.read_study(path, _key_of(small_study))[0][0].n_iters == 12


def _key_of(cfg) -> dict:
    return TM.study_key(cfg, [(s, c.dt_data, c.n_iters) for c, ss in TM.study_configs(cfg) for s in ss])


def test_the_shipped_study_is_loaded_unless_declined(small_study, tmp_path, monkeypatch, capsys):
    own = tmp_path / "own"
    monkeypatch.setattr(TM, "SHIPPED_PENDULUM", tmp_path / "shipped")
    fits = TM.obtain_study(small_study, TM.study_configs(small_study), progress=False)
    key = _key_of(small_study)
    TM.save_study(tmp_path / "shipped" / f"smoke-{TM.study_hash(key)}.pt", key, fits)
    TM._TRAINED.clear()
    real = TM.train_batched
    monkeypatch.setattr(TM, "train_batched", lambda *a, **k: pytest.fail("trained instead of loading"))
    P.train_models(small_study, settings=Settings(runs_dir=own, device="cpu"), progress=False)
    assert "the ones that ship with the book" in capsys.readouterr().out and not list(own.rglob("*.pt"))
    TM._TRAINED.clear()
    monkeypatch.setattr(TM, "train_batched", real)
    P.train_models(small_study, settings=Settings(runs_dir=own, device="cpu"), progress=False, use_shipped=False)
    assert "ship" not in capsys.readouterr().out and len(list(own.rglob("*.pt"))) == 1


def test_the_gpu_preset_study_ships_and_is_the_one_the_chapters_ask_for():
    cfg = P.config_for("gpu")
    configs = TM.study_configs(cfg)
    key = TM.study_key(cfg, [(s, c.dt_data, c.n_iters) for c, ss in configs for s in ss])
    path = TM.shipped_study_path(cfg, key)
    assert path is not None, ("the gpu preset's pendulum study is not in cnet_lib/shipped/pendulum/ (or the preset "
                              "changed): python scripts/ship_pendulum.py gpu, and commit the file")
    assert os.path.getsize(path) < 1_500_000
    fits, prov = TM.read_study(path, key)
    assert [f.n_iters for f in fits] == [10000] * 3 + [6000] * 6 and prov["seconds"] > 0
    assert all(torch.isfinite(p).all() for f in fits for p in f.model.parameters())


def test_rows_of_several_schemes_roll_out_as_each_scheme_alone():
    """multi_scheme_rollout: each row is cnet_lib's rollout with its own scheme, whatever the other rows' schemes (a
    stage its scheme skips is weighted by 0, an added 0 is exact): bit for bit where a step's rows are single weights
    (Euler, midpoint), to rounding where integrate sums a row's equal weights first (cnet_lib.core.integrate.combination,
    issue 52) and the batched rows, with a tableau per row, take them one by one."""
    schemes = ["euler", "rk4_38", "midpoint", "rk4_classic", "dopri5", "euler"]
    x0 = torch.tensor(P.exact_solution(0.0), dtype=torch.float64)
    path = P.multi_scheme_rollout(lambda x: P.true_rate(x), x0.expand(len(schemes), 2).clone(), schemes, 0.03, 50)
    assert path.shape == (51, len(schemes), 2)
    for m, s in enumerate(schemes):
        alone = P.rollout(P.true_rate, x0, s, 0.03, 50)
        if s in ("euler", "midpoint"):
            assert torch.equal(path[:, m], alone), s
        torch.testing.assert_close(path[:, m], alone, rtol=1e-13, atol=1e-14, msg=s)


def test_the_benchmark_runs_dry_and_records_the_ratio_and_the_agreement(tmp_path):
    """benchmarks/bench_pendulum_batched.py --dry-run (10 iterations per model): the record the cards quote."""
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_pendulum_batched.py"
    spec = importlib.util.spec_from_file_location("bench_pendulum_batched", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--dry-run", "--preset", "smoke", "--out", str(tmp_path / "r.json")]) == 0
    record = json.loads((tmp_path / "r.json").read_text())
    several = bench.available_cores() > 1  # then both trainings on every core too, with their own ratios
    assert record["dry_run"] and set(record["seconds"]) == {"train_odenet", "one_at_a_time", "batched"} | (
        {"train_odenet_all_cores", "batched_all_cores"} if several else set())
    assert (record.get("ratio_train_odenet_over_batched_all_cores", 0) > 0) == several
    assert record["ratio_train_odenet_over_batched"] > 0 and len(record["jobs"]) == 5
    s = record["seconds"]  # rounded to the millisecond, the ratio to 0.01: bounds from the roundings
    seq, bat = (min(v for k, v in s.items() if k.startswith(prefix)) for prefix in ("train_odenet", "batched"))
    low, high = (seq - 5e-4) / (bat + 5e-4) - 5e-3, (seq + 5e-4) / max(bat - 5e-4, 1e-9) + 5e-3
    assert low <= record["ratio_best_sequential_over_best_batched"] <= high, (s, record)
    assert record["agreement_with_train_odenet"]["batched"]["weights_rel"] < 1e-12


# --------------------------------------------------------------------------- on a GPU (skipped without one)
@pytest.mark.cuda
def test_on_cuda_the_batch_graphed_and_eager_equals_the_cpu_and_the_device_is_measured():
    cpu = P.train_batched(JOBS, progress=False)
    eager = P.train_batched(JOBS, device="cuda", progress=False, graphs=False)
    graphed = P.train_batched(JOBS, device="cuda", progress=False, graphs=True)
    for a, b, c in zip(cpu, eager, graphed):
        assert b.device.startswith("cuda") and a.device == "cpu"
        assert max(abs(x - y) / y for x, y in zip(b.losses, a.losses)) < TOLERANCE
        assert max(abs(x - y) / y for x, y in zip(c.losses, b.losses)) < 1e-13
        for p, q in zip(c.model.parameters(), a.model.parameters()):
            assert p.device.type == "cpu" and _rel(p.detach(), q.detach()) < TOLERANCE
    device, estimates = BT.choose_device(JOBS, torch.device("cuda"))
    assert set(estimates) == {"cpu", "cuda:0"} and device == torch.device(min(estimates, key=estimates.get))
