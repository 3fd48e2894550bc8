"""The live apps answer at once, with their sampling error said (:mod:`cnet_lib.draw.quick_answers`,
:mod:`cnet_lib.draw.progressive`).  The bound on an interaction is a count of images pushed through a
ContinuousNet (a forward pre-hook), not seconds, so it holds on any machine."""
from __future__ import annotations

import dataclasses
import threading

import plotly.graph_objects as go
import pytest
import torch

from cnet_lib import draw
from cnet_lib.core.models import ContinuousNet
from cnet_lib.draw.progressive import Progressive, Refiner
from cnet_lib.draw import quick_answers as QA
from cnet_lib.images.data.fake_data import write_fake_cifar
from cnet_lib.images.runs.image_presets import image_runs
from cnet_lib.images.studies.robustness_measure import Condition
from cnet_lib.images.runs.study_run import StudyRun
from cnet_lib.runtime.settings import Settings

N_IMAGES, N_SHOW, N_STUDY = 400, 4, 128


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two untrained smoke-sized models as the preset's runs (the apps' arithmetic does not need training)."""
    data = tmp_path_factory.mktemp("data")
    write_fake_cifar(data, n_train=100, n_test=N_IMAGES)
    settings = Settings(preset="smoke", data_dir=data, device="cpu")
    out = {}
    for name, cfg in image_runs("smoke", data_dir=str(data), n_test=None).items():
        torch.manual_seed(0)
        model = ContinuousNet(cfg.channels, n_basis=cfg.n_basis * (2 if cfg.refine_at else 1), scheme=cfg.scheme).eval()
        out[name] = StudyRun(name, dataclasses.replace(cfg, n_train=None), model, [{"test_acc": 0.1, "train_seconds": 1.0}],
                             data / name, settings=settings)
    return out


@pytest.fixture
def counted():
    seen = {"images": 0}

    def hook(module, inputs):
        if isinstance(module, ContinuousNet):
            seen["images"] += int(inputs[0].shape[0])

    handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
    yield seen
    handle.remove()


def _sweeps(runs):
    rows = {}
    for name, run in runs.items():
        own = run.model.blocks[0]
        rows[name] = [{"kind": "trained", "scheme": own.scheme.name, "n_steps": own.n_steps, "accuracy": 0.61}]
        rows[name] += [{"kind": "manifestation", "scheme": s, "n_steps": n, "accuracy": 0.5 + 0.01 * n}
                       for s in ("euler", "rk4_classic") for n in (1, 2, 4)]
    return rows


def _title(fig) -> str:
    return fig.layout.title.text


def test_a_graph_the_sweep_evaluated_is_answered_from_it(runs, counted):
    app = draw.live_sweep_app(runs, go.Figure(), n_images=N_IMAGES, n_show=N_SHOW, sweeps=_sweeps(runs))
    counted["images"] = 0
    fig = app.render(model="rk4_refined", scheme="rk4_classic", n_steps=4, compress=0)
    assert isinstance(fig, go.Figure) and counted["images"] == N_SHOW, "only the thumbnails are evaluated"
    n = N_IMAGES  # the sweep's test split: all of the fake test images
    assert f"0.540 ± {1.96 * (0.54 * 0.46 / n) ** 0.5:.3f} ({n} images, from the cached sweep)" in _title(fig)


def test_any_other_graph_answers_from_a_sample_with_its_error_then_refines(runs, counted):
    app = draw.live_sweep_app(runs, go.Figure(), n_images=N_IMAGES, n_show=N_SHOW, sweeps=_sweeps(runs))
    model = runs["rk4_refined"].model
    with model.manifested("rk4_38", 16):
        n = QA.quick_size(model, torch.device("cpu"), N_IMAGES)
    assert 32 <= n < N_IMAGES, "the test needs a sample smaller than the app's images"
    counted["images"] = 0
    out = app.render(model="rk4_refined", scheme="rk4_38", n_steps=16, compress=0)
    assert isinstance(out, Progressive)
    assert counted["images"] == n, "the first answer evaluates the budgeted sample only (the thumbnails are in it)"
    assert f"({n} images, first {n} of {N_IMAGES} images)" in _title(out.first) and " ± " in _title(out.first)
    assert "all of them follow" in _title(out.first)
    assert out.refine(lambda: True) is None, "a refinement no longer wanted stops"
    final = out.refine(lambda: False)
    assert f"({N_IMAGES} images, all {N_IMAGES} images of the app)" in _title(final)


def test_the_sample_shrinks_with_the_cost_of_the_graph_and_not_with_the_machine(runs):
    model = runs["rk4_refined"].model
    sizes = {}
    for nt in (2, 4, 8):
        with model.manifested("rk4_classic", nt):
            sizes[nt] = QA.quick_size(model, torch.device("cpu"), 10**6, n_min=1)
    assert sizes[2] > sizes[4] > sizes[8] and sizes[4] == pytest.approx(2 * sizes[8], rel=0.2)
    with model.manifested("rk4_classic", 8):
        assert QA.quick_size(model, torch.device("cpu"), 30) == 30, "never more than the app's images"
        assert QA.quick_size(model, torch.device("cpu"), 10**6, evaluations=2, n_min=1) == pytest.approx(sizes[8] / 2, rel=0.02)


def _study(runs):
    out = {}
    for name in runs:
        def cond(kind, level, p, draws=1):
            return Condition(kind, level, [torch.arange(N_STUDY) < int(p * N_STUDY) for _ in range(draws)])
        out[name] = [cond("clean", None, 0.75), cond("weight_noise", 0.1, 0.5, 2), cond("quantized_theta", 4, 0.7),
                     cond("input_noise", 0.2, 0.6, 2)]
    return out


def test_the_robustness_app_answers_a_measured_condition_from_the_study(runs, counted):
    grid = dict(sigmas=(0.1,), input_noise=(0.2,))
    app = draw.live_robustness_app(runs, go.Figure(), grid, n_images=N_IMAGES, study=_study(runs))
    own = runs["euler_fixed"].model.blocks[0]
    counted["images"] = 0
    fig = app.render(model="euler_fixed", sigma=0.1, fmt="float32", scheme=own.scheme.name, n_steps=own.n_steps, noise=0.0)
    assert isinstance(fig, go.Figure) and counted["images"] == 0
    assert "from the cached robustness study, mean of 2 draws" in _title(fig) and "± " in _title(fig)
    assert "+25.0 points lost" in _title(fig)
    counted["images"] = 0  # two perturbations at once: the study has no such row
    out = app.render(model="euler_fixed", sigma=0.1, fmt="theta 4", scheme=own.scheme.name, n_steps=own.n_steps, noise=0.0)
    n = QA.quick_size(runs["euler_fixed"].model, torch.device("cpu"), N_IMAGES, evaluations=2)
    if n < N_IMAGES:
        assert isinstance(out, Progressive) and counted["images"] == 2 * n
        assert f"first {n} of {N_IMAGES} images" in _title(out.first)
    else:
        assert isinstance(out, go.Figure) and counted["images"] == 2 * N_IMAGES


class _Output:
    """Stands in for an ipywidgets Output: records what a background refinement displays."""

    def __init__(self):
        self.shown, self.done = [], threading.Event()

    def clear_output(self, wait=False):
        pass

    def append_display_data(self, obj):
        self.shown.append(obj)
        self.done.set()


def test_a_refinement_replaces_the_first_answer_unless_the_controls_moved():
    refiner, shown = Refiner(), []
    refiner.output = _Output()
    gate = threading.Event()

    def slow(stale):
        gate.wait(5)
        return "refined, stale" if stale() else "refined"

    refiner.show(Progressive("first", slow), shown.append)
    refiner.show(Progressive("second", lambda stale: "refined second"), shown.append)  # the controls moved
    gate.set()
    assert refiner.output.done.wait(5)
    Refiner.pool().submit(lambda: None).result(5)
    assert shown == ["first", "second"] and refiner.output.shown == ["refined second"]
    refiner.show("a figure", shown.append)
    assert shown[-1] == "a figure"


def test_the_thumbnails_are_one_mosaic_with_each_image_in_its_tile():
    from cnet_lib.draw.image_apps import mosaic

    g = torch.Generator().manual_seed(0)
    imgs = torch.randint(0, 255, (7, 3, 4, 5), dtype=torch.uint8, generator=g)
    out = mosaic(imgs, cols=3, pad=2)
    assert out.shape == (3 * 6 - 2, 3 * 7 - 2, 3) and out.dtype == torch.uint8
    for i in range(7):
        r, k = divmod(i, 3)
        assert torch.equal(out[r * 6:r * 6 + 4, k * 7:k * 7 + 5], imgs[i].permute(1, 2, 0)), i
    assert (out[4:6] == 255).all() and (out[:, 5:7] == 255).all() and (out[12:, 7:] == 255).all(), "white gutters, empty tiles"


def test_the_thumbnail_labels_are_the_models_predictions(runs):
    from cnet_lib.images.training.evaluation import Evaluator
    from cnet_lib.images.runs.study_inputs import study_data

    app = draw.live_sweep_app(runs, go.Figure(), n_images=N_IMAGES, n_show=N_SHOW, sweeps=_sweeps(runs))
    fig = app.render(model="rk4_refined", scheme="rk4_classic", n_steps=4, compress=0)
    run = runs["rk4_refined"]
    data = study_data(run.config, run.settings, torch.device("cpu"), with_train=False)
    with run.model.manifested("rk4_classic", 4):
        ev = Evaluator()
        pred = ev.predictions(run.model, data.test_x[:50], data.mean, data.std, batch_size=16)[0]
        hits = ev.correct(run.model, data.test_x[:50], data.test_y[:50], data.mean, data.std, batch_size=50)[0]
    assert pred.dtype == torch.int64 and torch.equal(hits, pred == data.test_y[:50]), "correct is predictions == y"
    labels = [a.text for a in fig.layout.annotations]
    want = [f"{'✓' if p == t else '✗'} {data.classes[p]}" for p, t in zip(pred[:N_SHOW].tolist(), data.test_y[:N_SHOW].tolist())]
    assert labels == want and len(fig.data) == 1, "one image trace, one label per thumbnail"

