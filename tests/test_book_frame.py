"""The book's frame: config, notebook conventions, exercises, student export, figure/widget helpers."""
from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import pkgutil
from pathlib import Path

import cnet_lib
import pytest
import yaml

from cnet_lib.book.exercises.catalogue import chapter_exercises
from cnet_lib.book.chapter_cards import Card
from cnet_lib.book.conventions import check_notebook, fix_notebook
from cnet_lib.book.exercise_cells import exercise_pairs, function_signatures
from cnet_lib.book.notebook_cells import cell_source, cell_tags, read_notebook
from cnet_lib.book.project import toc_files, toc_notebooks
from cnet_lib.book import project as _project

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = toc_notebooks(ROOT)
NB_IDS = [p.stem for p in NOTEBOOKS]


# ----------------------------------------------------------------------------- config and toc
def test_config_repository_url_is_the_project_constant():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert cfg["repository"]["url"] == _project.REPO_URL
    assert cfg["repository"]["branch"] == _project.BRANCH
    assert cfg["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert cfg["title"] == _project.BOOK_TITLE
    assert cfg["execute"]["execute_notebooks"] == "cache"
    assert cfg["only_build_toc_files"] is True
    assert ".venv" in cfg["exclude_patterns"]
    assert cfg["bibtex_bibfiles"] == ["book/references.bib"]


def test_repo_url_is_written_in_one_place_only():
    """Other files derive the URL from cnet_lib.book.project.REPO_URL (only _config.yml repeats it)."""
    slug = _project.repo_slug()
    offenders = []
    for path in list((ROOT / "cnet_lib").rglob("*.py")) + list((ROOT / "book").rglob("*.md")) + list((ROOT / "tests").glob("*.py")):
        if path == ROOT / "cnet_lib" / "book" / "project.py" or path == Path(__file__).resolve():
            continue
        if slug in path.read_text(encoding="utf-8"):
            offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"the repository URL is hard-coded in {offenders}; derive it from cnet_lib.book.project.REPO_URL"


def test_toc_lists_existing_pages_in_order():
    entries = toc_files(ROOT)
    assert entries[0] == "book/intro"
    for e in entries:
        assert (ROOT / f"{e}.md").is_file() or (ROOT / f"{e}.ipynb").is_file(), f"_toc.yml lists missing page {e}"
    for page in ("book/notation", "book/how_to_use", "book/exercises", "book/references"):
        assert page in entries
    chapters = [e for e in entries if (ROOT / f"{e}.ipynb").is_file()]
    assert chapters[0] == "book/how_to_use"
    expected_order = ["book/how_to_use", "book/pendulum_integrators", "book/resnet_euler"]
    present = [e for e in expected_order if e in entries]
    assert present == sorted(present, key=entries.index), "chapters out of their reading order"


def test_colab_helpers():
    assert _project.repo_slug() == _project.REPO_URL.removeprefix("https://github.com/")
    url = _project.colab_url("how_to_use.ipynb")
    assert url == f"https://colab.research.google.com/github/{_project.repo_slug()}/blob/main/book/how_to_use.ipynb"
    assert _project.colab_url("book/how_to_use") == url
    src = _project.colab_cell_source()
    assert _project.REPO_URL in src and "google.colab" in src and "%pip install" in src
    assert "torch" not in src.split("%pip install", 1)[1], "the Colab cell must never (re)install torch"
    with pytest.raises(ValueError):
        _project.repo_slug("https://gitlab.com/a/b")


def test_colab_cell_installs_only_on_colab():
    """The canonical cell, as IPython runs it: a pip install inside `if "google.colab" in sys.modules`."""
    from IPython.core.inputtransformer2 import TransformerManager

    code = TransformerManager().transform_cell(_project.colab_cell_source())
    tree = ast.parse(code)
    ifs = [n for n in tree.body if isinstance(n, ast.If)]
    assert len(ifs) == 1 and "google.colab" in ast.unparse(ifs[0].test)
    assert "run_line_magic('pip'" in ast.unparse(ifs[0].body[0])
    calls = [n for n in tree.body if not isinstance(n, (ast.If, ast.Import))]
    assert not calls, "nothing but the guarded install may run outside Colab"


# ----------------------------------------------------------------------------- notebooks
def test_there_are_chapter_notebooks():
    assert NOTEBOOKS and NOTEBOOKS[0].name == "how_to_use.ipynb"


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=NB_IDS)
def test_notebook_follows_conventions(nb_path):
    """Badge, canonical first two cells, stripped outputs, >= 1 exercise with matching signatures."""
    problems = check_notebook(nb_path)
    assert not problems, f"{nb_path.name}: " + "; ".join(problems) + "  (python -m cnet_lib notebook_tools fix " + str(nb_path.relative_to(ROOT)) + ")"


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=NB_IDS)
def test_exercise_stubs_match_solution_signatures(nb_path):
    nb = read_notebook(nb_path)
    pairs = exercise_pairs(nb)
    assert pairs, "at least one exercise per chapter"
    for stub_i, sol_i in pairs:
        assert sol_i is not None
        stub = function_signatures(cell_source(nb["cells"][stub_i]))
        sol = function_signatures(cell_source(nb["cells"][sol_i]))
        assert stub, f"cell {stub_i}: the stub defines no function"
        for name, sig in stub.items():
            assert sol.get(name) == sig, f"{name}: stub {sig} vs solution {sol.get(name)}"
        assert {"solution", "hide-input"} <= set(cell_tags(nb["cells"][sol_i]))


def test_exercise_index_lists_every_exercise():
    index = (ROOT / "book" / "exercises.md").read_text(encoding="utf-8")
    missing = []
    for nb_path in NOTEBOOKS:
        nb = read_notebook(nb_path)
        for stub_i, _ in exercise_pairs(nb):
            for name in function_signatures(cell_source(nb["cells"][stub_i])):
                if f"`{name}(" not in index or f"{{doc}}`{nb_path.stem}`" not in index:
                    missing.append(f"{nb_path.stem}: {name}")
    assert not missing, f"book/exercises.md lacks rows for {missing}"


def test_exercise_index_names_real_checks():
    import re

    import cnet_lib.book.exercises as exercises

    index = (ROOT / "book" / "exercises.md").read_text(encoding="utf-8")
    named = re.findall(r"^\| `(\w+)\(", index, flags=re.M)
    assert named, "the index lists no exercise"
    unknown = [f"check_{name}" for name in named if not callable(getattr(exercises, f"check_{name}", None))]
    assert not unknown, f"book/exercises.md promises checks that cnet_lib.book.exercises does not export: {unknown}"


def test_signature_comparison_sees_differences():
    assert function_signatures("def f(a, b=1, *, c):\n    raise NotImplementedError") == {"f": "(a, b=1, *, c)"}
    assert function_signatures("def f(a, b=2, *, c):\n    return a") != function_signatures("def f(a, b=1, *, c):\n    pass")


def _tiny_notebook(tmp_path: Path, name: str = "demo.ipynb", stub_sig: str = "(x)", sol_sig: str = "(x)") -> Path:
    def code(src, tags=None, outputs=None):
        return {"cell_type": "code", "execution_count": 3 if outputs else None, "metadata": {"tags": tags or []},
                "outputs": outputs or [], "source": src}

    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# Demo\n\nText."},
            code("import sys\nif 'google.colab' in sys.modules:\n    %pip install old"),
            code("x = 1", outputs=[{"output_type": "stream", "name": "stdout", "text": "hi"}]),
            code(f"def f{stub_sig}:\n    raise NotImplementedError('do it')", tags=["exercise"]),
            code(f"from cnet_lib.book.exercises import solution\n\n\n@solution\ndef f{sol_sig}:\n    return 2 * x", tags=["solution"]),
            code("check(f)"),
        ],
        "metadata": {"widgets": {"state": {}}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    for i, cell in enumerate(nb["cells"]):
        cell["id"] = f"cell-{i}"  # nbformat 4.5 gives every cell an id
    path = tmp_path / name
    path.write_text(json.dumps(nb))
    return path


def test_fix_repairs_a_notebook_and_check_finds_problems(tmp_path):
    path = _tiny_notebook(tmp_path)
    cards = {"demo": Card(assumes="nothing.", learn="a demo.")}
    before = check_notebook(path, cards=cards)
    assert any("Colab badge" in p for p in before)
    assert any("Colab cell" in p for p in before)
    assert any("outputs are not stripped" in p for p in before)
    assert any("hide-input" in p for p in before)
    assert any("@title Solution" in p for p in before) and any("cellView" in p for p in before)
    assert fix_notebook(path, cards=cards) is True
    assert check_notebook(path, cards=cards) == []
    nb = read_notebook(path)
    assert _project.colab_badge("demo.ipynb") in cell_source(nb["cells"][0])
    assert cell_source(nb["cells"][0]).index("**Assumes:** nothing.") > cell_source(nb["cells"][0]).index("colab-badge")
    assert "no card" in " ".join(check_notebook(path)), "a chapter without a card fails the check"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert cell_source(code[0]) == _project.colab_cell_source()
    assert cell_source(code[1]) == _project.SETUP_CELL_SOURCE
    sol = next(c for c in nb["cells"] if "solution" in cell_tags(c))
    assert cell_source(sol).startswith("# @title Solution") and sol["metadata"]["cellView"] == "form"
    assert sol["metadata"]["jupyter"]["source_hidden"] is True
    assert fix_notebook(path, cards=cards) is False, "fix must be idempotent"


def test_check_requires_pure_stubs_and_decorated_solutions(tmp_path):
    """A stub with code in it, or a solution without @solution, breaks "Run all keeps your code"."""
    path = _tiny_notebook(tmp_path)
    fix_notebook(path, cards={"demo": Card(assumes="nothing.", learn="a demo.")})
    nb = read_notebook(path)
    ex = next(c for c in nb["cells"] if "exercise" in cell_tags(c))
    sol = next(c for c in nb["cells"] if "solution" in cell_tags(c))
    ex["source"] = "def f(x):\n    y = x + 1\n    raise NotImplementedError('do it')"
    sol["source"] = cell_source(sol).replace("@solution\n", "")
    path.write_text(json.dumps(nb))
    problems = check_notebook(path)
    assert any("body of f must be only a docstring" in p for p in problems)
    assert any("decorate f with @solution" in p for p in problems)


def test_check_reports_signature_mismatch(tmp_path):
    path = _tiny_notebook(tmp_path, stub_sig="(x)", sol_sig="(x, y=0)")
    fix_notebook(path)
    problems = check_notebook(path)
    assert any("signature mismatch for f" in p for p in problems)


def test_student_export(tmp_path):
    """Every chapter gets a copy without solutions, outputs, badge or links to the repository
    (details, and the command line, in tests/test_student.py)."""
    from cnet_lib.book.student_copies import StudentInstall, export

    install = StudentInstall(requirement="cnet-lib @ https://course.example/x/cnet_lib-0.1.0+gtest-py3-none-any.whl",
                             build="0.1.0+gtest", source="a test")
    written = export(tmp_path / "students", ROOT, install)
    assert [p.name for p in written] == [p.name for p in NOTEBOOKS]
    for src, dst in zip(NOTEBOOKS, written):
        orig, stud = read_notebook(src), read_notebook(dst)
        assert not any("solution" in cell_tags(c) for c in stud["cells"])
        n_ex = sum("exercise" in cell_tags(c) for c in orig["cells"])
        assert n_ex >= 1 and sum("exercise" in cell_tags(c) for c in stud["cells"]) == n_ex
        n_sol = sum("solution" in cell_tags(c) for c in orig["cells"])
        # added: a header above each exercise, the grader cell, the hand-in section (heading and cell)
        assert len(stud["cells"]) == len(orig["cells"]) - n_sol + len(chapter_exercises(src.stem)) + 3
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in stud["cells"] if c["cell_type"] == "code")
        assert "widgets" not in stud["metadata"]
        text = dst.read_text(encoding="utf-8")
        assert _project.repo_slug() not in text and "Open In Colab" not in text, f"{dst.name} leads to the solutions"
        assert install.requirement in text and 'setup(expected_build=\\"0.1.0+gtest\\")' in text


def test_student_version_removes_solutions_and_outputs(tmp_path):
    from cnet_lib.book.student_copies import student_version

    nb = read_notebook(_tiny_notebook(tmp_path))
    out = student_version(nb)
    assert [cell_tags(c) for c in out["cells"]].count(["solution"]) == 0
    assert any("exercise" in cell_tags(c) for c in out["cells"])
    assert all(not c.get("outputs") for c in out["cells"] if c["cell_type"] == "code")
    assert "widgets" not in out["metadata"]
    assert any("solution" in cell_tags(c) for c in nb["cells"]), "the input notebook is not modified"


# ----------------------------------------------------------------------------- exercises
def test_exercise_check_passes_a_right_answer_and_fails_wrong_ones(capsys):
    import numpy as np

    from cnet_lib.book.exercises import check_observed_order
    from cnet_lib.teacher.keys import reference_observed_order

    def fitted(dts, errors):
        return float(np.polyfit(np.log(dts), np.log(errors), 1)[0])

    assert check_observed_order(fitted) is True
    assert "✅ pass" in capsys.readouterr().out

    def two_point(dts, errors):  # a plausible wrong answer: the last two points only
        import math
        return math.log(errors[-2] / errors[-1]) / math.log(dts[-2] / dts[-1])

    assert check_observed_order(two_point) is False
    out = capsys.readouterr().out
    assert "❌ fail" in out and "hint 1 of 2" in out and "expected" in out
    assert check_observed_order(reference_observed_order) is False, "the reference is not an answer"
    assert "reference_observed_order" in capsys.readouterr().out


def test_exercise_check_is_friendly_to_stubs_and_bugs(capsys):
    from cnet_lib.book.exercises import check_observed_order

    def stub(dts, errors):
        raise NotImplementedError("todo")

    assert check_observed_order(stub) is False
    assert "NotImplementedError" in capsys.readouterr().out

    def buggy(dts, errors):
        return dts.nonexistent

    assert check_observed_order(buggy) is False
    assert "AttributeError" in capsys.readouterr().out
    assert check_observed_order(3) is False


def test_check_compares_tensors_arrays_and_structures(capsys):
    import numpy as np
    import torch

    from cnet_lib.book.exercises import check, values_close

    assert values_close(torch.ones(3), torch.ones(3) + 1e-9)
    assert not values_close(torch.ones(3), torch.ones(4))
    assert values_close(np.arange(3.0), [0.0, 1.0, 2.0])
    assert values_close({"a": (1.0, 2)}, {"a": [1.0, 2]})
    assert not values_close(1.0, "1.0")
    assert check(lambda x: x * 2, lambda x: x + x, [1, (2.5,), {"x": torch.arange(3.0)}], name="double")
    assert not check(lambda x: x * 3, lambda x: x + x, [1], name="double", hints="add x to itself")
    assert "add x to itself" in capsys.readouterr().out


# ----------------------------------------------------------------------------- figures
def test_slider_figure_toggles_precomputed_traces():
    from cnet_lib.draw.plotting import line, slider_figure

    frames = {n: [line([0, 1], [0, n], name=f"N={n}")] for n in (2, 4, 8)}
    fig = slider_figure(frames, static_traces=[line([0, 1], [0, 0], name="exact")], slider_prefix="N_t = ", active=1)
    assert len(fig.data) == 4
    (slider,) = fig.layout.sliders
    assert [s.label for s in slider.steps] == ["2", "4", "8"]
    assert slider.steps[2].args[0]["visible"] == [True, False, False, True]
    assert [t.visible for t in fig.data] == [True, False, True, False]
    with pytest.raises(ValueError):
        slider_figure({})


def test_dropdown_slider_figure_keeps_each_control_s_choice():
    """Issue 53: the slider owns which step's traces are visible, the menu restyles every step's traces with its
    option's data; neither touches the other (a menu that replaced the slider put it back to its first step)."""
    from cnet_lib.draw.plotting import dropdown_slider_figure, line

    frames = {s: {n: [line([0, 1], [0, n * k], name=f"{s} {n}", color=c)] for n in (2, 4)}
              for k, (s, c) in enumerate([("euler", "red"), ("rk4", "blue")], 1)}
    fig = dropdown_slider_figure(frames, slider_prefix="N_t = ", dropdown_prefix="scheme: ", active_option=1, active_step=1,
                                 static_traces=[line([0, 1], [1, 1], name="exact")])
    (menu,) = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == ["scheme: euler", "scheme: rk4"] and menu.active == 1
    assert len(fig.data) == 3, "the exact line and one trace per step"
    assert [t.visible for t in fig.data] == [True, False, True] and [t.name for t in fig.data] == ["exact", "rk4 2", "rk4 4"]
    (slider,) = fig.layout.sliders
    assert slider.active == 1 and [s.args for s in slider.steps] == [({"visible": [True, True, False]},),
                                                                      ({"visible": [True, False, True]},)]
    import json

    euler = json.loads(fig.to_json())["layout"]["updatemenus"][0]["buttons"][0]
    assert euler["method"] == "restyle"
    changes, traces = euler["args"]
    assert traces == [1, 2], "the menu restyles the steps' traces, never the exact line"
    assert changes == {"line.color": ["red", "red"], "name": ["euler 2", "euler 4"], "y": [[0, 2], [0, 4]]}
    assert "visible" not in changes and all("sliders" not in str(b.args) for b in menu.buttons)
    # a step that one option draws with fewer traces gets an empty trace there
    uneven = dropdown_slider_figure({"a": {1: [line([0], [1]), line([0], [2])]}, "b": {1: [line([0], [3])]}})
    assert len(uneven.data) == 2 and json.loads(uneven.to_json())["layout"]["updatemenus"][0]["buttons"][1]["args"][0]["y"] \
        == [[3], None]
    with pytest.raises(ValueError):
        dropdown_slider_figure({"a": {1: [line([0], [0])]}, "b": {2: [line([0], [0])]}})
    import plotly.graph_objects as go
    with pytest.raises(ValueError, match="same trace types"):
        dropdown_slider_figure({"a": {1: [line([0], [0])]}, "b": {1: [go.Bar(x=[0], y=[0])]}})


def test_log_axes_are_labelled_with_their_numbers():
    """Issue 53: plotly labels a log axis over a decade or two with leading digits ("8 9 1 2 ... 8 9 10"); the book's
    log axes carry ticks labelled with the numbers they stand for."""
    import plotly.graph_objects as go

    from cnet_lib.draw.plotting import log_tick_text, log_tick_values, log_ticks

    assert log_tick_values(48, 450) == [50, 100, 200]
    assert log_tick_values(1e-5, 0.1) == [1e-5, 1e-4, 1e-3, 1e-2, 0.1]
    assert log_tick_values(0.75, 0.95) == [0.8, 0.9]
    assert len(log_tick_values(1e-12, 1e3)) <= 6
    assert log_tick_text([1e-5, 1e-3]) == ["10⁻⁵", "10⁻³"] and log_tick_text([0.002, 50]) == ["0.002", "50"]
    assert log_tick_text([2e-4, 3e-4]) == ["2×10⁻⁴", "3×10⁻⁴"]
    fig = log_ticks(go.Figure(go.Scatter(x=[1, 2, 3], y=[48, 100, 450])).update_yaxes(type="log"))
    assert list(fig.layout.yaxis.tickvals) == [50, 100, 200] and list(fig.layout.yaxis.ticktext) == ["50", "100", "200"]
    assert fig.layout.xaxis.tickvals is None, "a linear axis is left alone"


def test_loglog_style_and_reference_slope():
    import plotly.graph_objects as go

    from cnet_lib.draw.plotting import loglog_style, reference_slope

    fig = loglog_style(go.Figure(), x_title="Δt", y_title="error")
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    tr = reference_slope(0.1, 0.01, 1.0, 2)
    assert tr.y[1] == pytest.approx(1e-2)


# ----------------------------------------------------------------------------- notebook setup and widgets
@pytest.fixture
def plotly_state():
    import plotly.io as pio

    saved = pio.renderers.default
    yield pio
    pio.renderers.default = saved


def test_titles_start_below_the_toolbar():
    import plotly.graph_objects as go

    from cnet_lib.draw.html_figures import MODEBAR_PX, below_modebar, figure_html
    from cnet_lib.draw.plotting import book_layout, dropdown_slider_figure

    fig = book_layout(go.Figure(go.Scatter(x=[0, 1], y=[1, 2])), "a title")
    moved = below_modebar(fig)
    assert moved.layout.title.pad.t == MODEBAR_PX and moved.layout.title.yanchor == "top"
    assert moved.layout.margin.t == fig.layout.margin.t + MODEBAR_PX
    assert fig.layout.title.pad.t is None, "the figure itself is left as it was"
    untitled = below_modebar(go.Figure())
    assert untitled.layout.margin.t is None  # nothing to move
    menu = dropdown_slider_figure({"a": {1: [go.Scatter(x=[0], y=[0])]}}, title="t")
    assert below_modebar(menu.to_dict()).layout.margin.t == menu.layout.margin.t + MODEBAR_PX  # dicts too
    assert f'"pad":{{"t":{MODEBAR_PX}}}' in figure_html(fig).replace(" ", "")


def test_setup_makes_figures_render_as_html(plotly_state, capsys, monkeypatch):
    """The trap: plotly's default notebook renderer emits no text/html, so the book drops the figure."""
    import plotly.graph_objects as go

    from cnet_lib.book.notebook import setup
    from cnet_lib.draw.html_figures import BOOK_RENDERER

    monkeypatch.setenv("CNET_PRESET", "smoke")
    ctx = setup(seed=3)
    out = capsys.readouterr().out
    assert "preset: smoke" in out and "device:" in out and "torch" in out
    assert ctx.preset == "smoke" and ctx.seed == 3
    assert BOOK_RENDERER in plotly_state.renderers.default.split("+")
    bundle = go.Figure(go.Scatter(x=[0, 1], y=[1, 2]))._repr_mimebundle_()
    html = bundle["text/html"]
    assert "Plotly.newPlot" in html and "plotly-graph-div" in html
    assert "cdn" not in html.lower() and "<script src=" not in html, "figures must not fetch anything (CI is offline)"
    assert set(bundle) == {"text/html"}, "any other mime type would make myst-nb warn (mystnb.unknown_mime_type)"


def test_plotlyjs_is_inline_and_offline():
    from cnet_lib.draw.html_figures import plotlyjs_html

    js = plotlyjs_html()
    assert len(js) > 1_000_000 and "src=" not in js[:500]


def test_live_app_carries_widget_and_static_views(plotly_state, capsys):
    import ipywidgets as W
    import plotly.graph_objects as go

    from cnet_lib.book.notebook import setup
    from cnet_lib.draw.widgets import live_app

    setup(quiet=True)
    static = go.Figure(go.Scatter(x=[0, 1], y=[0, 1]))
    calls = []

    def render(n):
        calls.append(n)
        return go.Figure(go.Scatter(x=[0, n], y=[0, n]))

    app = live_app({"n": W.IntSlider(value=2, min=1, max=5)}, render, static)
    bundle = app._repr_mimebundle_()
    view = bundle["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"] == app.widget.model_id and view["version_major"] == 2
    assert "plotly-graph-div" in bundle["text/html"] and "Static view of a live app" in bundle["text/html"]
    assert calls == [2], "the app renders once when built"
    app.widget.children[-2].children[0].value = 4
    assert calls == [2, 4], "moving a control re-runs render_fn"
    with pytest.raises(ValueError):
        live_app({"n": W.IntSlider()}, render, None)
    with pytest.raises(TypeError):
        live_app({"n": W.Button()}, render, static)


@pytest.fixture
def colab_widget_manager(monkeypatch):
    """A stand-in for google.colab.output with its custom widget manager enabled."""
    import types

    url = "https://ssl.gstatic.com/colaboratory-static/widgets/colab-cdn-widget-manager/test/manager.min.js"
    widgets_mod = types.SimpleNamespace(_installed_url=url)
    output = types.ModuleType("google.colab.output")
    output._widgets = widgets_mod
    monkeypatch.setitem(__import__("sys").modules, "google.colab.output", output)
    return url


def test_live_app_keeps_display_metadata_for_colab(plotly_state, colab_widget_manager, monkeypatch):
    """Colab's custom widget manager finds a widget view by its metadata: the app must carry it,
    and keep whatever metadata the widget itself returns (it used to drop both)."""
    import ipywidgets as W
    import plotly.graph_objects as go

    from cnet_lib.draw.widgets import WIDGET_VIEW
    from cnet_lib.draw.widgets import live_app

    app = live_app({"n": W.IntSlider(value=2)}, lambda n: None, go.Figure())
    data, metadata = app._repr_mimebundle_()
    assert data[WIDGET_VIEW]["model_id"] == app.widget.model_id and "text/html" in data
    assert metadata[WIDGET_VIEW]["colab"]["custom_widget_manager"]["url"] == colab_widget_manager

    own = {WIDGET_VIEW: {"mine": 1}, "text/plain": {"also": True}}
    monkeypatch.setattr(type(app.widget), "_repr_mimebundle_", lambda self, **kw: ({WIDGET_VIEW: {"model_id": "m"}}, own),
                        raising=False)
    data, metadata = app._repr_mimebundle_()
    assert metadata[WIDGET_VIEW]["mine"] == 1 and metadata["text/plain"] == {"also": True}
    assert metadata[WIDGET_VIEW]["colab"]["custom_widget_manager"]["url"] == colab_widget_manager


def test_widget_view_without_repr_mimebundle_is_written_as_ipywidgets_7_does(colab_widget_manager):
    """ipywidgets 7 (Colab's preinstalled major) has only _ipython_display_."""
    from cnet_lib.draw.widgets import WIDGET_VIEW, widget_bundle

    class Widget7:
        _view_name = "IntSliderView"
        comm = object()
        model_id = "abc123"

        def __repr__(self):
            return "IntSlider(value=2)"

    data, metadata = widget_bundle(Widget7())
    assert data[WIDGET_VIEW] == {"version_major": 2, "version_minor": 0, "model_id": "abc123"}
    assert data["text/plain"] == "IntSlider(value=2)" and WIDGET_VIEW in metadata
    closed = Widget7()
    closed.comm = None
    assert widget_bundle(closed) == ({}, {}), "a closed widget has no view"


def test_pendulum_progress_bar_keeps_display_metadata(colab_widget_manager):
    import ipywidgets as W

    from cnet_lib.book.notebook import BarView as _BarView

    data, metadata = _BarView(W.HBox([W.FloatProgress()]), "training")._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data and "training" in data["text/html"]
    assert "colab" in metadata["application/vnd.jupyter.widget-view+json"]


def test_book_renderer_does_not_depend_on_plotly_6_constructors(plotly_state):
    """plotly 5 (Colab's) has no HtmlRenderer(include_plotlyjs=...): the book's renderer must not use it."""
    import plotly.graph_objects as go

    from cnet_lib.draw.html_figures import book_renderer as _book_renderer

    renderer = _book_renderer()
    html = renderer.to_mimebundle(go.Figure(go.Scatter(x=[0], y=[1])).to_dict())["text/html"]
    assert "Plotly.newPlot" in html
    from plotly.io._base_renderers import HtmlRenderer

    assert not isinstance(renderer, HtmlRenderer)


def test_setup_on_colab_uses_colab_renderer_without_registering_the_book_one(capsys, monkeypatch):
    """On Colab the book renderer is neither registered nor used (plotly's 'colab' one is)."""
    import subprocess
    import sys

    code = (
        "import sys, types; sys.modules['google.colab'] = types.ModuleType('google.colab')\n"
        "import plotly.io as pio\n"
        "from cnet_lib.book.notebook import setup\n"
        "ctx = setup(quiet=True)\n"
        "assert pio.renderers.default == 'colab', pio.renderers.default\n"
        "assert 'cnet_book' not in pio.renderers\n"
        "assert ctx.in_colab\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_setup_warns_when_another_build_is_installed(capsys, plotly_state):
    from cnet_lib.book.notebook import installed_build, setup

    setup(quiet=True, expected_build=installed_build())
    assert "WARNING" not in capsys.readouterr().out
    setup(quiet=True, expected_build="0.0.1+gdeadbeef")
    out = capsys.readouterr().out
    assert "WARNING" in out and "0.0.1+gdeadbeef" in out and "Google Colab" in out and "own machine" in out


def test_book_config_prefers_static_html_over_widget_views():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    sphinx_cfg = cfg["sphinx"]["config"]
    assert ["html", "text/html", 5] in sphinx_cfg["nb_mime_priority_overrides"]
    from myst_nb.core.render import base_render_priority

    assert 5 < base_render_priority()["html"]["application/vnd.jupyter.widget-view+json"]
    assert sphinx_cfg["nb_ipywidgets_js"] == {}
    suppressed = sphinx_cfg.get("suppress_warnings", [])
    assert not any(w.startswith("mystnb") for w in suppressed), "a dropped figure must fail the build"


# ----------------------------------------------------------------------------- import side effects (layers: tests/test_layers.py)
def test_frame_modules_have_no_import_side_effects():
    """Importing the frame changes neither plotly's renderer nor anything printed (fresh interpreter)."""
    import subprocess
    import sys

    code = (
        "import plotly.io as pio; before = pio.renderers.default\n"
        "import cnet_lib, cnet_lib.book, cnet_lib.book.exercises, cnet_lib.draw, cnet_lib.images, cnet_lib.pendulum\n"
        "import cnet_lib.cli, cnet_lib.__main__\n"
        "assert pio.renderers.default == before, pio.renderers.default\n"
        "assert 'cnet_book' not in pio.renderers, 'renderer registered at import'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""


def test_every_formula_has_balanced_braces():
    """MathJax looks for a formula's closing delimiter outside braces: one unclosed ``{`` swallows the
    formulas after it, untypeset (book/adaptive had two; the browser test counted them)."""
    import re

    bad = []
    for path in sorted((ROOT / "book").glob("*.ipynb")) + sorted((ROOT / "book").glob("*.md")):
        if path.suffix == ".ipynb":
            text = "\n".join(cell_source(c) for c in read_notebook(path)["cells"] if c["cell_type"] == "markdown")
        else:
            text = path.read_text()
        for m in re.finditer(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$", text, re.S):
            tex = (m.group(1) or m.group(2)).replace(r"\{", "").replace(r"\}", "")
            if tex.count("{") != tex.count("}"):
                bad.append(f"{path.name}: {tex[:60]!r}")
    assert not bad, bad
