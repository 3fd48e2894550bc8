"""cnet_lib.images (+ cnet_lib.draw.image_figures): train once and reload, hashed run folders, cached sweeps, the honest verdict,
figure builders, and the image chapters' exercise checks.  Tiny models on fake CIFAR: seconds."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from cnet_lib import draw as imf
from cnet_lib.images.runs import run_folders as RF
from cnet_lib.images.runs import run_store as RS
from cnet_lib.images.runs import study_inputs as SI
from cnet_lib.images.runs import theta_record as TR
from cnet_lib.images.studies import refinement_timing as RT
from cnet_lib.images.studies import sweep_measure as SM
from cnet_lib.report import sweep_report as SR
from cnet_lib.images.studies import sweep_cached as ST
from cnet_lib.images.studies import theta as TH
from cnet_lib.images.studies import sweep_verdict as V
from cnet_lib.images.data.fake_data import write_fake_cifar
from cnet_lib.runtime.files import shown_path
from cnet_lib.runtime.vocabulary import SERIES_COLORS, run_color
from cnet_lib.runtime.settings import Settings

TINY = dict(n_train=64, n_test=32, batch_size=32, channels=(2, 4, 4))
GRID = dict(schemes=("euler", "rk4_classic"), n_steps=(1, 2), compress=(1,), compress_schemes=("rk4_classic",))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_fake_cifar(root, n_train=100, n_test=40, seed=0)
    return str(root)


@pytest.fixture(scope="module")
def study(data_dir, tmp_path_factory):
    """Both smoke runs, trained once into a module-wide runs root, and their sweeps."""
    root = tmp_path_factory.mktemp("runs")
    runs = RS.trained_runs(Settings(preset="smoke", runs_dir=root, data_dir=data_dir, device="cpu"), verbose=False, **TINY)
    sweeps = ST.sweep_runs(runs, GRID, verbose=False)
    return root, runs, sweeps


def _state(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items() if torch.is_tensor(v)}


# ----------------------------------------------------------------------------- caching
def test_trained_once_then_reloaded_without_training(study, data_dir, monkeypatch):
    root, runs, _ = study
    assert set(runs) == {"rk4_refined", "euler_fixed"}
    assert all(r.trained_now for r in runs.values())
    assert runs["rk4_refined"].history[-1]["n_steps"] == [2, 2, 2]  # refined 1 -> 2 after epoch 1

    def no_training(*a, **k):
        raise AssertionError("trained_runs retrained a finished run")

    monkeypatch.setattr(RS, "train", no_training)
    monkeypatch.setattr(SI, "load_dataset", no_training)  # a finished run needs no data either
    again = RS.trained_runs(Settings(preset="smoke", runs_dir=root, data_dir=data_dir, device="cpu"), verbose=False, **TINY)
    for name, run in runs.items():
        assert not again[name].trained_now
        assert again[name].history == run.history
        assert again[name].snapshots == run.snapshots
        a, b = _state(run.model), _state(again[name].model)
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
        assert again[name].model.manifestation == run.model.manifestation


def test_run_folder_holds_a_hash_of_the_config(study, data_dir):
    root, runs, _ = study
    for run in runs.values():
        h = RF.run_hash(run.config)
        assert len(h) >= 8 and run.out_dir.name == f"smoke-{run.name}-{h}"
        assert run.out_dir.parent == Path(root)
        assert (run.out_dir / "checkpoint.pt").is_file() and (run.out_dir / TR.SNAPSHOTS).is_file()
    cfg = runs["euler_fixed"].config
    import dataclasses

    assert RF.run_hash(dataclasses.replace(cfg, lr=cfg.lr / 2)) != RF.run_hash(cfg), "a changed preset must not collide"
    assert RF.run_hash(dataclasses.replace(cfg, epochs=cfg.epochs + 1)) != RF.run_hash(cfg)
    assert RF.run_hash(dataclasses.replace(cfg, data_dir=str(Path(data_dir) / "other"))) != RF.run_hash(cfg)
    assert RF.run_hash(dataclasses.replace(cfg, progress=not cfg.progress, device="meta")) == RF.run_hash(cfg)


def test_runs_live_in_the_sessions_runs_folder(study, tmp_path):
    _, runs, _ = study
    cfg = runs["euler_fixed"].config
    assert RF.run_dir(cfg, tmp_path / "r") == tmp_path / "r" / f"smoke-euler_fixed-{RF.run_hash(cfg)}"
    assert RF.shipped_copy_dir(cfg, tmp_path / "r").name == f"smoke-euler_fixed-{RF.run_hash(cfg)}-shipped"
    assert all(r.settings.preset == "smoke" and r.settings.device == torch.device("cpu") for r in runs.values())


def test_snapshots_record_every_epoch_and_the_refinement(study):
    _, runs, _ = study
    snaps = runs["rk4_refined"].snapshots
    assert [s["epoch"] for s in snaps] == [0, 1, 2]
    assert [s["blocks"][0]["n_basis"] for s in snaps] == [1, 1, 2]
    assert snaps[2]["refined"] and not snaps[1]["refined"]
    init = TR.theta_snapshot(runs["rk4_refined"].initial_model())
    assert init["blocks"] == snaps[0]["blocks"], "epoch 0 is the model train() started from"
    final = TR.theta_snapshot(runs["rk4_refined"].model, epoch=2, refined=True)
    assert final["blocks"] == snaps[2]["blocks"]


def test_sweep_is_cached_beside_the_checkpoint(study, monkeypatch):
    _, runs, sweeps = study
    for name, rows in sweeps.items():
        kinds = [r["kind"] for r in rows]
        assert kinds.count("trained") == 1 and kinds.count("identity") == 1 and "compressed" in kinds
        assert len([k for k in kinds if k == "manifestation"]) == 4
        trained = next(r for r in rows if r["kind"] == "trained")
        assert trained["accuracy"] == pytest.approx(runs[name].final_accuracy)
        files = list(runs[name].out_dir.glob("sweep-*.json"))
        assert len(files) == 1 and json.loads(files[0].read_text())["rows"] == rows

    def no_sweep(*a, **k):
        raise AssertionError("sweep_runs recomputed a cached sweep")

    monkeypatch.setattr(ST, "manifestation_sweep", no_sweep)
    assert ST.sweep_runs(runs, GRID, verbose=False) == sweeps
    with pytest.raises(AssertionError):  # another grid is another cache entry
        ST.sweep_runs(runs, {**GRID, "n_steps": (1,)}, verbose=False)


def test_fake_data_fallback_is_announced(tmp_path, capsys):
    folder = SI.study_data_dir(Settings(preset="smoke", data_dir=tmp_path / "nothing-here"))
    out = capsys.readouterr().out
    assert "FAKE data" in out and shown_path(folder) in out  # the folder as messages show it (<tmp>/...)
    assert (folder / "cifar-10-batches-py" / "data_batch_1").is_file()


# ----------------------------------------------------------------------------- the verdict
def _rows(trained, identity, off, scheme="euler", nt=8):
    """One model's sweep, trained at N_t = M = ``nt`` (piecewise-constant θ)."""
    rows = [{"kind": "trained", "scheme": scheme, "n_steps": nt, "n_basis": nt, "accuracy": trained}]
    for (s, n), a in off.items():
        rows.append({"kind": "manifestation", "scheme": s, "n_steps": n, "n_basis": nt, "accuracy": a,
                     "is_trained": (s, n) == (scheme, nt)})
    rows.append({"kind": "identity", "scheme": None, "n_steps": 0, "accuracy": identity})
    return rows


def test_verdict_sees_the_paper_contrast():
    # the CPU-scale numbers (Euler 82.0 / 63.0 / 53.8, RK4 77.5 / 77.0-77.6, identity 14.3 / 18.3)
    euler = _rows(0.820, 0.143, {("euler", 4): 0.426, ("midpoint", 8): 0.630, ("rk4_classic", 8): 0.538,
                                 ("rk4_classic", 16): 0.55, ("rk4_classic", 12): 0.30})
    rk4 = _rows(0.775, 0.183, {("rk4_classic", 2): 0.774, ("rk4_classic", 16): 0.770, ("midpoint", 8): 0.777,
                               ("euler", 8): 0.60}, scheme="rk4_38")
    v = V.judge_sweeps({"euler_fixed": euler, "rk4_refined": rk4})
    assert v.blocks_matter and v.contrast
    assert v.gaps["euler_fixed"] == pytest.approx(67.7) and v.drops["euler_fixed"] == pytest.approx(28.2)
    assert v.drops["rk4_refined"] == pytest.approx(0.5), "lower orders and N_t below the trained one are not counted"
    # issue 40: 12 steps on 8 pieces cross θ's jumps: shown apart, never judged
    assert v.straddle_drops["euler_fixed"] == pytest.approx(52.0) and v.drops["euler_fixed"] < 52.0
    text = str(SR.word_sweeps(v, n_test=2000))
    assert "contrast appears" in text and "28.2" in text and "67.7" in text and "2,000 held-out images" in text
    assert "steps cross θ's jumps" in text and "52.0 points" in text


def test_verdict_refuses_to_claim_invariance_of_blocks_that_do_nothing():
    flat = _rows(0.456, 0.450, {("euler", 1): 0.456, ("rk4_classic", 8): 0.456})
    v = V.judge_sweeps({"euler_fixed": flat, "rk4_refined": flat})
    assert not v.blocks_matter and not v.contrast
    text = SR.word_sweeps(v)
    assert "do not matter" in text and "cannot show manifestation invariance" in text


def test_verdict_says_when_the_contrast_is_missing():
    euler = _rows(0.80, 0.20, {("midpoint", 8): 0.79, ("rk4_classic", 8): 0.795})
    rk4 = _rows(0.78, 0.20, {("midpoint", 8): 0.60, ("rk4_38", 8): 0.70, ("rk4_classic", 16): 0.78},
                scheme="rk4_classic")  # midpoint is of lower order than RK4: its 18 points are not judged
    v = V.judge_sweeps({"euler_fixed": euler, "rk4_refined": rk4})
    assert v.blocks_matter and not v.contrast
    text = str(SR.word_sweeps(v))
    assert "does not appear" in text and "loses only 1.0 points" in text and "RK4-trained model loses 8.0" in text
    with pytest.raises(ValueError):
        V.judge_sweeps({"euler_fixed": euler})


def test_verdict_on_a_real_sweep(study):
    _, _, sweeps = study
    v = V.judge_sweeps(sweeps)
    words = SR.word_sweeps(v, n_test=32, preset="smoke")
    assert isinstance(v.blocks_matter, bool) and "VERDICT" in words.splitlines()[-1] and "(preset smoke)" in words
    assert words.html.count("<p") == len(words.splitlines()), "one paragraph per sentence"


# ----------------------------------------------------------------------------- tables and figures
def test_refinement_cost():
    hist = [{"n_steps": [n] * 3, "train_seconds": s} for n, s in ((1, 1.0), (2, 2.0), (4, 4.0), (4, 4.2))]
    c = RT.refinement_cost(hist)
    assert c["sum_n_steps"] == 11 and c["ideal"] == pytest.approx(16 / 11)
    assert c["seconds_per_epoch_at_final"] == pytest.approx(4.1) and c["fixed_depth_estimate"] == pytest.approx(16.4)
    assert c["speedup"] == pytest.approx(16.4 / 11.2)


def test_table1_and_text(study):
    _, _, sweeps = study
    rows = SM.table1_rows(sweeps)
    assert {r["kind"] for r in rows} == {"trained", "manifestation", "compressed", "identity"}
    assert all(r["speedup"] > 0 for r in rows)
    assert all(r["delta_points"] == 0 for r in rows if r["kind"] == "trained")
    text = SR.table1_table(rows)
    assert "blocks removed" in text and "θ compressed" in text and "speed-up" in text


def test_theta_curves_and_bases(study):
    t, v = TH.theta_curve([1.0, 3.0], "piecewise_constant")
    assert t == [0.0, 0.5, 0.5, 1.0] and v == [1.0, 1.0, 3.0, 3.0], "jumps drawn with both one-sided limits"
    t, v = TH.theta_curve([0.0, 2.0], "piecewise_linear")
    assert v == [0.0, 2.0]
    _, runs, _ = study
    curves = TH.theta_by_basis(runs["rk4_refined"].model)
    assert set(curves) == {"piecewise_constant", "piecewise_linear", "legendre"}
    assert all(set(c) == {"untrained", "trained"} and len(c["trained"]) == 4 for c in curves.values())
    fig = imf.fig_theta_bases(curves)
    assert len(fig.data) == 2 + 3 * 4 * 2 and len(fig.layout.sliders[0].steps) == 3  # + 2 legend entries: solid, dashed
    shown = [t.name for t in fig.data if t.visible and t.showlegend is not False]
    assert shown == ["solid: trained", "dashed: untrained", "θ(0, 0, 1, 1)", "θ(0, 1, 1, 1)", "θ(1, 0, 1, 1)", "θ(1, 1, 1, 1)"], \
        "one legend entry per weight, and one per line style"

    fig = imf.fig_basis_functions(3)
    assert [s.label for s in fig.layout.sliders[0].steps] == ["piecewise constant", "piecewise linear (hats)",
                                                              "Legendre polynomials"]
    assert [list(t.y) for t in fig.data[:3]] == [[1, 1, 0, 0, 0, 0], [0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 1, 1]]


def test_figures_have_the_expected_traces(study):
    _, runs, sweeps = study
    fig = imf.fig_training_curves(runs)
    assert len(fig.data) == 2 * 3 and {t.name for t in fig.data} == {r.label for r in runs.values()}
    assert {t.name: t.line.color for t in fig.data} == {r.label: run_color(n) for n, r in runs.items()}, "colours of the vocabulary"
    assert any(s.line.dash == "dot" for s in fig.layout.shapes), "the refinement epoch is marked"
    assert fig.layout.legend.y < 0 and fig.layout.legend.yanchor == "top", "the legend sits below the panels"
    assert "refinement before epoch 2" in fig.layout.title.text and "<br>" not in fig.layout.title.text

    fig = imf.fig_theta_refinement(runs["rk4_refined"].snapshots)
    assert len(fig.layout.sliders[0].steps) == 3
    assert fig.layout.sliders[0].steps[2].label.startswith("epoch 2, M=2")
    last = [t.name for t in fig.data if t.visible and t.showlegend is not False]
    entries = [f"θ{e}" for e in runs["rk4_refined"].snapshots[-1]["blocks"][0]["entries"]]
    assert last == ["solid: after the epoch", "dashed: the epoch before", *entries, "s(t), skip gain (lower panel)"], \
        "the dashed curves of the epoch before share their weight's legend entry"

    fig = imf.fig_accuracy_vs_nt(sweeps)
    names = [t.name for t in fig.data]
    assert names.count("euler") == 2 and names.count("rk4_classic") == 2 and names.count("trained graph") == 2
    assert sum(s.line.dash == "dash" for s in fig.layout.shapes) == 2, "one identity line per model"

    fig = imf.fig_sweep_explorer(sweeps)
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == ["scheme: euler", "scheme: rk4_classic"]
    assert [s.label for s in fig.layout.sliders[0].steps] == ["1", "2"]

    fig = imf.fig_manifestations(2, [("euler", 2), ("rk4_classic", 1)])
    assert [len(t.x) for t in fig.data] == [2, 4, 1, 1]  # + one legend entry per piece
    assert [t.name for t in fig.data if t.showlegend is not False] == ["θ̂_1", "θ̂_2"]
    assert [c for c in fig.data[1].marker.color] == [SERIES_COLORS[b] for b in (0, 1, 1, 1)]


def test_live_app_evaluates_the_model(study):
    import plotly.graph_objects as go

    _, runs, sweeps = study
    app = imf.live_sweep_app(runs, imf.fig_sweep_explorer(sweeps), n_images=16, n_show=4)
    assert set(app.controls) == {"model", "scheme", "n_steps", "compress"}
    assert isinstance(app.static_fig, go.Figure)


def test_stage_table_reads_exact_pieces():
    rows = TH.stage_rows("rk4_classic", 1, 2)
    assert [r["pieces"][0][0] for r in rows] == [0, 1, 1, 1]  # t = 0, 1/2, 1/2, 1 (right limits; last: left of 1)
    rows = TH.stage_rows("euler", 3, 3)
    assert [r["pieces"] for r in rows] == [((0, 1.0),), ((1, 1.0),), ((2, 1.0),)]


# ----------------------------------------------------------------------------- exercises
def test_exercise_checks(capsys):
    from cnet_lib.book.exercises import image_exercises as E
    from cnet_lib.teacher import keys as K

    # the references are not answers: the checks reject a call into them (right answers pass in
    # tests/test_exercises.py)
    assert not E.check_euler_block_as_resnet(K.reference_euler_block_as_resnet)
    assert not E.check_parameters_after_refinement(K.reference_parameters_after_refinement)
    assert not E.check_ideal_speedup(K.reference_ideal_speedup)
    assert not E.check_identity_gap(K.reference_identity_gap)
    assert "reference_" in capsys.readouterr().out
    assert not E.check_euler_block_as_resnet(lambda block, x: x)
    assert not E.check_parameters_after_refinement(lambda model: 2 * model.n_parameters())
    assert not E.check_ideal_speedup(lambda n: sum(n) / len(n))
    assert not E.check_identity_gap(lambda rows: rows[0]["accuracy"])
    assert "❌ fail" in capsys.readouterr().out
