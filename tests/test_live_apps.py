"""The live apps answer at once, with their sampling error said (:mod:`cnet_lib.draw.progressive`,
:mod:`cnet_lib.draw.progressive`).  The bound on an interaction is a count of images pushed through a
ContinuousNet (a forward pre-hook), not seconds, so it holds on any machine.  Every app of the book answers every control through the notebook's plotly renderer
(issue 57; in a real front end: tests/test_jupyterlab_apps.py)."""
from __future__ import annotations

import dataclasses
import html
import json
import re
import threading

import plotly.graph_objects as go
import pytest
import torch

from cnet_lib.images.data.download import write_fake_cifar
from cnet_lib.images.runs.image_presets import image_runs
from cnet_lib.images.runs.run_loading import StudyRun
from cnet_lib.studies.robustness.study import Condition
from cnet_lib.core.models import ContinuousNet
from cnet_lib.draw.progressive import Progressive, Refiner
from cnet_lib.runtime.settings import Settings
from cnet_lib.draw import progressive as QA
from cnet_lib.studies import adaptive, manifestation, robustness
from cnet_lib import draw

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
    """The figure's title in one line (the apps break it into lines at its phrases)."""
    return fig.layout.title.text.replace("<br>", " ").replace("</sup> <sup>", " ")


def _settled(app):
    """``app`` once the background refinement of its first answer is done (the tests count the images evaluated)."""
    Refiner.pool().submit(lambda: None).result(60)
    return app


def test_a_graph_the_sweep_evaluated_is_answered_from_it(runs, counted):
    app = _settled(manifestation.live_app(runs, go.Figure(), n_images=N_IMAGES, n_show=N_SHOW, sweeps=_sweeps(runs)))
    counted["images"] = 0
    fig = app.render(model="rk4_refined", scheme="rk4_classic", n_steps=4, compress=0)
    assert isinstance(fig, go.Figure) and counted["images"] == N_SHOW, "only the thumbnails are evaluated"
    n = N_IMAGES  # the sweep's test split: all of the fake test images
    assert f"0.540 ± {1.96 * (0.54 * 0.46 / n) ** 0.5:.3f} ({n} images, from the cached sweep)" in _title(fig)


def test_any_other_graph_answers_from_a_sample_with_its_error_then_refines(runs, counted):
    app = _settled(manifestation.live_app(runs, go.Figure(), n_images=N_IMAGES, n_show=N_SHOW, sweeps=_sweeps(runs)))
    model = runs["rk4_refined"].model
    with model.manifested("rk4_38", 16):
        n = QA.quick_size(model, torch.device("cpu"), N_IMAGES)
    assert 32 <= n < N_IMAGES, "the test needs a sample smaller than the app's images"
    counted["images"] = 0
    out = app.render(model="rk4_refined", scheme="rk4_38", n_steps=16, compress=0)
    assert isinstance(out, Progressive)
    assert counted["images"] == n, "the first answer evaluates the budgeted sample only (the thumbnails are in it)"
    assert f"(first {n} of {N_IMAGES} images)" in _title(out.first) and " ± " in _title(out.first)
    assert re.search(rf"all {N_IMAGES} images follow within \d+ s", _title(out.first)), _title(out.first)
    assert out.refine(lambda: True) is None, "a refinement no longer wanted stops"
    final = out.refine(lambda: False)
    assert f"(all {N_IMAGES} images of the app)" in _title(final) and "follow" not in _title(final)


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
    app = _settled(robustness.live_app(runs, go.Figure(), grid, n_images=N_IMAGES, study=_study(runs)))
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


def _wait_for(predicate, seconds: float = 10.0) -> bool:
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def _html(output) -> str:
    return "".join(o.get("data", {}).get("text/html", "") + o.get("data", {}).get("text/plain", "") for o in output.outputs)


@pytest.fixture
def book_renderer():
    """plotly's default renderer as a chapter's setup cell makes it (the book's), restored afterwards."""
    import plotly.io as pio

    from cnet_lib.book import setup

    before = pio.renderers.default
    yield setup(quiet=True).plotly_renderer
    pio.renderers.default = before


def test_a_refinement_replaces_the_first_answer_unless_the_controls_moved(book_renderer):
    """Every answer replaces what the output shows, from the kernel (its ``outputs``: one display_data that a front end
    draws; a plotly figure as its bundle from the session's renderer), and a refinement replaces its first answer
    unless a later answer came.  Issue 57: the refined answer was appended through IPython's formatter, which hands a
    figure to its ``_ipython_display_`` and returns nothing, so it never appeared; and an answer displayed into the
    widget was sent back by the front end, whose echo could put the first answer back over its refinement."""
    import ipywidgets as W

    refiner = Refiner(W.Output())
    gate = threading.Event()

    def slow(stale):
        gate.wait(5)
        return "refined, stale" if stale() else "refined"

    refiner.show(Progressive("first", slow))
    assert "first" in _html(refiner.output) and len(refiner.output.outputs) == 1
    refiner.show(Progressive("second", lambda stale: go.Figure(layout=dict(title="refined second"))))
    gate.set()
    assert _wait_for(lambda: "refined second" in _html(refiner.output))
    Refiner.pool().submit(lambda: None).result(5)
    assert len(refiner.output.outputs) == 1 and "stale" not in _html(refiner.output), "the stale refinement is dropped"
    out = refiner.output.outputs[0]
    assert out["output_type"] == "display_data" and "Plotly.newPlot" in out["data"]["text/html"]
    gate.clear()
    refiner.show(Progressive("third", slow))
    refiner.show("a figure from the cache")  # an answer that needs no refinement makes the pending one stale too
    gate.set()
    Refiner.pool().submit(lambda: None).result(5)
    assert _html(refiner.output) == "'a figure from the cache'"
    try:
        raise ValueError("no such graph")
    except ValueError as err:
        refiner.show_error(err)
    out = refiner.output.outputs[0]
    assert out["output_type"] == "error" and out["ename"] == "ValueError" and any("no such graph" in ln for ln in out["traceback"])
    shown = []
    Refiner().show(Progressive("without a widget", slow), shown.append)
    assert shown == ["without a widget"]


def test_an_apps_first_answer_is_refined_too():
    """Issue 57: the answer an app shows when its cell runs came before the app knew its output, and was never
    refined ("all of them follow" stayed)."""
    from cnet_lib.draw import live_app

    def render(n):
        if n == 3:
            raise RuntimeError("a broken answer")
        return Progressive(f"first {n}", lambda stale: f"refined {n}")

    app = live_app({"n": draw.IntRange(1, 3, 2, "n")}, render, go.Figure())
    output = app.widget.children[-1]
    assert _wait_for(lambda: "refined 2" in _html(output)), output.outputs
    controls = app.widget._cnet_controls
    controls["n"].value = 1
    assert _wait_for(lambda: "refined 1" in _html(output)), output.outputs
    controls["n"].value = 3
    assert output.outputs[0]["output_type"] == "error" and "a broken answer" in output.outputs[0]["evalue"]
    assert not controls["n"].continuous_update, "a slider answers when released, not at every step it passes"


def test_an_app_fits_the_data_it_has(runs):
    """Issue 57: with the ``cpu`` preset's 2,000 test images asked of a data copy that holds 1,000, the app cell stopped
    with "cannot take a subset of 2000 from 1000 examples".  The apps take the images there are, and say so."""
    short = {name: dataclasses.replace(r, config=dataclasses.replace(r.config, n_test=2 * N_IMAGES)) for name, r in runs.items()}
    grid = dict(sigmas=(0.1,), input_noise=(0.2,))
    sweep_app = _settled(manifestation.live_app(short, go.Figure(), n_images=2 * N_IMAGES, n_show=N_SHOW))
    for app in (sweep_app, _settled(robustness.live_app(short, go.Figure(), grid, n_images=64)),
                adaptive.live_app(short, go.Figure(), n_images=64)):
        header = html.unescape(app.widget.children[0].value)
        assert f"the {N_IMAGES} test images this data copy holds" in header and f"of the preset's {2 * N_IMAGES}" in header
    fig = sweep_app.render(model="rk4_refined", scheme="euler", n_steps=1, compress=0)
    assert re.search(rf"\b{N_IMAGES} images", _title(getattr(fig, "first", fig))), "the app's answers count what it has"
    full = _settled(manifestation.live_app(runs, go.Figure(), n_images=N_IMAGES, n_show=N_SHOW))
    assert "data copy" not in full.widget.children[0].value, "a data folder that holds the preset's images: no note"


def test_the_thumbnails_are_one_mosaic_with_each_image_in_its_tile():
    from cnet_lib.draw.widgets import mosaic

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

    app = manifestation.live_app(runs, go.Figure(), n_images=N_IMAGES, n_show=N_SHOW, sweeps=_sweeps(runs))
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


# ----------------------------------------------------------------------------- every app, through the renderer
FIRST_ANSWER_S = 2.0
"""The slowest first answer an interaction may give on CI's CPU (two cores), the figure's HTML included."""


def _rate(t, y):  # the problem of "How this book works"
    import math

    return (-1.0 + 0.5 * math.sin(4.0 * t)) * y


def _exact(t):
    import math

    return math.exp(-t + (1.0 - math.cos(4.0 * t)) / 8.0)


@pytest.fixture(scope="module")
def book_apps():
    """Every live app of the book, built from what its chapter computes in the smoke preset (the models trained
    once into the runs folder the chapters use, the data copy as the tests set it)."""
    from cnet_lib import images
    from cnet_lib.book import demos
    from cnet_lib.studies import pendulum
    from smoke_data import smoke_settings

    settings = smoke_settings()
    cfg = pendulum.config_for("smoke")
    models = pendulum.train_models(cfg, settings=settings, progress=False)
    rows = pendulum.rollout_rows(models, cfg.eval_schemes, cfg.h_values, cfg, keep_paths=True)
    runs = images.trained_runs(settings)
    apps = {
        "how_to_use": demos.live_solver_app(_rate, _exact, ["euler", "midpoint", "rk4_classic"], 2.0, go.Figure(),
                                            max_steps=64, n_steps=4),
        "resnet_euler": pendulum.live_rollout_app(models, cfg, go.Figure(), rows=rows),
        "manifestation_invariance": manifestation.live_app(runs, go.Figure(), device=settings.device,
                                                           sweeps=manifestation.run(runs)),
        "robustness": robustness.live_app(runs, go.Figure(), robustness.preset_grid("smoke"), device=settings.device,
                                          study=robustness.run(runs)),
        "adaptive": adaptive.live_app(runs, go.Figure(), device=settings.device),
    }
    Refiner.pool().submit(lambda: None).result(120)  # the first answers' refinements, done
    return apps


def _values(widget) -> list:
    """A control's values, in its order: a menu's or a stepped slider's options, an integer slider's range."""
    if hasattr(widget, "options"):
        return [o[1] if isinstance(o, tuple) else o for o in widget.options]
    return list(range(widget.min, widget.max + 1))


def _interactions(app) -> list[dict]:
    """The app's controls as they start, then each control at its first value and at another (its last), the
    others as they start."""
    controls = app.widget._cnet_controls
    start = {name: w.value for name, w in controls.items()}
    out = [start]
    for name, w in controls.items():
        values = _values(w)
        assert len(values) >= 2, f"control {name} offers one value"
        out += [{**start, name: values[0]}, {**start, name: values[-1]}]
    return out


def test_every_app_answers_every_control_through_the_notebooks_renderer(book_apps):
    """Issue 57: the manifestation app's every answer stopped in the book's plotly renderer (a traceback where its
    figure should be) and no test rendered an app's answer.  Each app's answer to each control, at its first value
    and at another, goes the way a front end gets it: the figure's bundle from the renderer the setup cell chooses
    (``cnet_book`` in Jupyter; plotly's ``colab`` in Colab, rehearsed on the same answers), the refined answer of a
    sampled one too; the first answer, its HTML included, comes within FIRST_ANSWER_S."""
    import time

    import plotly.io as pio

    from cnet_lib.book import setup

    def shown(fig) -> list[str]:
        out = []
        for renderer in ("cnet_book", "colab"):
            pio.renderers.default = renderer
            out.append(fig._repr_mimebundle_()["text/html"])
        pio.renderers.default = "cnet_book"
        return out

    before = pio.renderers.default
    try:
        assert setup(quiet=True).plotly_renderer == "cnet_book" and setup(quiet=True, renderer="colab")
        slow = []
        for chapter, app in book_apps.items():
            for values in _interactions(app):
                start = time.perf_counter()
                out = app.render(**values)
                first = out.first if isinstance(out, Progressive) else out
                answers = [(first, shown(first))]
                seconds = time.perf_counter() - start
                if isinstance(out, Progressive):
                    final = out.refine(lambda: False)
                    answers.append((final, shown(final)))
                for fig, (book, colab) in answers:
                    assert isinstance(fig, go.Figure) and fig.layout.title.text, (chapter, values, fig)
                    assert "Plotly.newPlot" in book and "Plotly.newPlot" in colab, (chapter, values)
                    assert "<script src=" in colab and "<script src=" not in book, "Colab's loads plotly.js itself"
                if seconds > FIRST_ANSWER_S:
                    slow.append((chapter, values, round(seconds, 2)))
        assert not slow, f"first answers slower than {FIRST_ANSWER_S} s: {slow}"
    finally:
        pio.renderers.default = before
