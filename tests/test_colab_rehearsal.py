"""A Colab rehearsal: the book as a reader who opens each chapter from its badge gets it.

Outside this repository's environment, as on Colab:

1. the package is built as a wheel and installed **non-editable** into a fresh virtual
   environment that already holds Colab-like versions (:data:`COLAB_VERSIONS`, older plotly and
   ipywidgets majors included); the install must upgrade none of them;
2. a stand-in ``google.colab`` (with its custom widget manager) is imported when the kernel
   starts, as Colab does, and ``%pip`` is replaced by a stand-in that logs the install line and
   runs it when it can (the GitHub URL of the book's chapters cannot be reached here; the wheel
   built from this tree stands in for it);
3. the chapters of :data:`READER_STAGE` run in the ``smoke`` preset from a folder outside the repository with no
   ``../shared``, ``$HOME`` fresh and no ``CNET_DATA_DIR``: CIFAR-10 comes through the
   library's real download code from a local server on 127.0.0.1 (a small fake archive with its
   MD5, named by ``$CNET_CIFAR10_URL`` / ``$CNET_CIFAR10_MD5``);
4. every student copy (``python -m cnet_lib student OUTDIR --wheel-url file://...``) runs the same way, their
   install cell installing the exported wheel for real: from top to bottom with the book's solutions pasted
   into its exercise cells (every check passes), and with its stubs left as they are up to its last check
   (each exercise's own "not done yet") and its hand-in cell; each writes its zip, which the teacher's
   ``grade`` grades: every point for the solved copies, none for the stubs.

It checks that every cell runs, that the checks pass on the solutions (and say "not done yet"
on the stubs), that the data was downloaded once and never faked, and that every displayed
widget view carries its model id and Colab's display metadata, on ipywidgets 7 here and on
ipywidgets 8 in the main environment (``test_book_frame.py``).

Every chapter runs in the Colab-like environment as its solved student copy; the reader's stage runs only the
chapters it needs for what only it checks (the book's own install line, an image chapter's download, live apps),
so that the whole rehearsal fits CI's time; ``CNET_FULL_COLAB_REHEARSAL=1`` runs every chapter as the reader opens
it too, and the stubbed copies to their end.  Outside this file every chapter also runs in the main environment
(nbmake, the book build), and the student copy of ``how_to_use`` there too (``test_student.py``).

It needs the package registry (pip) and takes a few minutes; set ``CNET_SKIP_COLAB_REHEARSAL=1``
to skip it locally.  CI runs it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from cifar_server import ARCHIVE, fake_cifar_tarball, serve
from classroom import fill, right_answers

from cnet_lib.book.notebook_cells import cell_tags, new_code_cell, read_notebook, write_notebook
from cnet_lib.book.project import toc_notebooks
from cnet_lib.book.student_copies import build_wheel, project_version
from cnet_lib.cli.student import main as export_students
from cnet_lib.book import project as _project

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = toc_notebooks(ROOT)
# the chapters that also run as the reader opens them (every chapter runs as its student copy), unless the full rehearsal
READER_STAGE = ("how_to_use", "manifestation_invariance")
FULL = os.environ.get("CNET_FULL_COLAB_REHEARSAL") == "1"
READER_NOTEBOOKS = [p for p in NOTEBOOKS if FULL or p.stem in READER_STAGE]
STUDENT_NOTEBOOKS = list(NOTEBOOKS)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

# What a Colab runtime has preinstalled, pinned (Colab in 2025: numpy 2.0.2, plotly 5.24.1,
# ipywidgets 7.7.1, IPython 7.34.0, ipykernel 6.17.1, notebook 6.5.7, ...).  Colab's torch is
# a CUDA build of 2.x; CI can only install the CPU wheel of torch 2.13.0 (an unpinned torch
# would pull a multi-GB CUDA build), which the package's lower bound must accept anyway.
COLAB_VERSIONS = {
    "torch": "2.13.0",
    "numpy": "2.0.2",
    "scipy": "1.15.3",
    "plotly": "5.24.1",
    "ipywidgets": "7.7.1",
    "tqdm": "4.67.1",
    "ipython": "7.34.0",
    "ipykernel": "6.17.1",
    "notebook": "6.5.7",
}
# what the install cell may add to such a runtime (nothing may be upgraded or downgraded)
MAY_ADD = {"cnet-lib", "torchdiffeq"}

pytestmark = [pytest.mark.slow,  # installs the package over Colab's versions and runs every chapter there
              pytest.mark.skipif(os.environ.get("CNET_SKIP_COLAB_REHEARSAL") == "1", reason="CNET_SKIP_COLAB_REHEARSAL=1")]

# google.colab as far as the book uses it: the module, and output's custom widget manager,
# which (like Colab's) adds its metadata to widget views sent with display().
_COLAB_OUTPUT = '''
"""Stand-in for google.colab.output (custom widget manager only)."""
from . import _widgets
from ._widgets import enable_custom_widget_manager, disable_custom_widget_manager
'''
_COLAB_WIDGETS = '''
"""Stand-in for google.colab.output._widgets, with the behaviour of Colab's own."""
import IPython as _IPython

_installed_url = None
_WIDGET_MIME_TYPE = "application/vnd.jupyter.widget-view+json"
URL = "https://ssl.gstatic.com/colaboratory-static/widgets/colab-cdn-widget-manager/rehearsal/manager.min.js"


def enable_custom_widget_manager(version=None):
    _install(URL)


def disable_custom_widget_manager():
    _install(None)


def _install(url):
    global _installed_url
    if url and not _installed_url:
        _IPython.get_ipython().display_pub.register_hook(_hook)
    elif not url and _installed_url:
        _IPython.get_ipython().display_pub.unregister_hook(_hook)
    _installed_url = url


def _hook(msg):
    content = msg.get("content", {})
    if _installed_url and content.get("data", {}).get(_WIDGET_MIME_TYPE):
        md = content.setdefault("metadata", {}).setdefault(_WIDGET_MIME_TYPE, {})
        md["colab"] = {"custom_widget_manager": {"url": _installed_url}}
    return msg
'''
_COLAB_MESSAGE = '''
"""Stand-in for google.colab._message: "get_ipynb" answers the notebook the rehearsal runs, as Colab's front end does."""
import json
import os


def blocking_request(request_type, request="", timeout_sec=5, parent=None):
    assert request_type == "get_ipynb", request_type
    with open(os.environ["CNET_REHEARSAL_NOTEBOOK"], encoding="utf-8") as f:
        return {"ipynb": json.load(f)}
'''
_COLAB_FILES = '''
"""Stand-in for google.colab.files: a download lands in the rehearsal's downloads folder."""
import os
import shutil


def download(filename):
    os.makedirs(os.environ["CNET_REHEARSAL_DOWNLOADS"], exist_ok=True)
    shutil.copy(filename, os.environ["CNET_REHEARSAL_DOWNLOADS"])
'''
_STARTUP = '''
# The kernel start of the rehearsal: what Colab has done before a notebook's first cell runs.
import json, os, shlex, subprocess, sys

import google.colab  # Colab imports it at kernel start: cnet_lib.book.notebook.in_colab() is True
from google.colab import output

output.enable_custom_widget_manager()  # on, as after a reader's earlier call (ipywidgets 7 does not need it)


def _pip(line):
    """Stand-in for %pip: logs the line; runs it unless it needs GitHub (out of reach here)."""
    with open(os.environ["CNET_REHEARSAL_PIP_LOG"], "a") as f:
        f.write(json.dumps(line) + "\\n")
    if "git+https://" in line:
        print("(rehearsal: GitHub is out of reach; the wheel built from this tree is installed already)")
        return
    subprocess.run([sys.executable, "-m", "pip", *shlex.split(line)], check=True)


get_ipython().register_magic_function(_pip, "line", "pip")
'''


def _run(cmd: list, **kw) -> str:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def _versions(python: Path) -> dict[str, str]:
    out = _run([python, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"])
    return {d["name"].lower().replace("_", "-"): d["version"] for d in json.loads(out)}


@pytest.fixture(scope="module")
def colab(tmp_path_factory):
    """The fresh Colab-like environment with the package installed; yields a dict of paths."""
    started = time.perf_counter()
    tmp = tmp_path_factory.mktemp("colab")
    assert not (tmp.parent / "shared").exists() and ROOT not in tmp.parents
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", venv])
    python = venv / "bin" / "python"
    # --no-compile: byte-compiling every installed file up front (torch's included) took about a minute on
    # 2 cores; the kernels compile what they import, once (their environment drops PYTHONDONTWRITEBYTECODE)
    _run([python, "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check",
          *[f"{k}=={v}" for k, v in COLAB_VERSIONS.items()]], timeout=1200)
    before = _versions(python)
    for name, version in COLAB_VERSIONS.items():
        assert before[name].split("+")[0] == version, f"{name}: wanted {version}, got {before[name]}"
    wheel = build_wheel(ROOT, project_version(ROOT), tmp / "dist")
    _run([python, "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check", f"{wheel}[book]"], timeout=1200)
    after = _versions(python)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert changed <= MAY_ADD, "installing the package changed Colab's own packages: " + ", ".join(
        f"{k} {before.get(k)} -> {after.get(k)}" for k in sorted(changed - MAY_ADD))
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip())
    assert not (site / "cnet_lib").is_symlink() and (site / "cnet_lib" / "book" / "exercises" / "framework.py").is_file(), "non-editable"
    shipped = sorted(p.relative_to(site).as_posix() for p in (site / "cnet_lib" / "shipped").glob("*/*"))
    in_repo = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "cnet_lib" / "shipped").glob("*/*"))
    assert shipped == in_repo and shipped, "the installed package lacks the shipped models (package data)"
    colab_pkg = site / "google" / "colab"
    (colab_pkg / "output").mkdir(parents=True)
    (colab_pkg / "__init__.py").write_text('"""Stand-in for google.colab (the Colab rehearsal)."""\n')
    (colab_pkg / "output" / "__init__.py").write_text(_COLAB_OUTPUT)
    (colab_pkg / "output" / "_widgets.py").write_text(_COLAB_WIDGETS)
    (colab_pkg / "_message.py").write_text(_COLAB_MESSAGE)
    (colab_pkg / "files.py").write_text(_COLAB_FILES)
    startup = tmp / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-colab.py").write_text(_STARTUP)
    kernel = tmp / "jupyter" / "kernels" / "colab"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Colab rehearsal", "language": "python"}))
    archive, md5 = fake_cifar_tarball(tmp / "site")
    yield {"tmp": tmp, "python": python, "archive": archive, "md5": md5, "setup_s": time.perf_counter() - started}


def _environment(colab: dict, base: str) -> dict:
    tmp = colab["tmp"]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CNET_", "PYTHON", "JUPYTER", "IPYTHON", "VIRTUAL_ENV"))}
    env.update({
        "HOME": str(tmp / "home"), "JUPYTER_PATH": str(tmp / "jupyter"), "IPYTHONDIR": str(tmp / "ipython"),
        "CNET_PRESET": "smoke", "CNET_CIFAR10_URL": f"{base}/{ARCHIVE}", "CNET_CIFAR10_MD5": colab["md5"],
        "CNET_REHEARSAL_PIP_LOG": str(tmp / "pip.log"), "CNET_REHEARSAL_DOWNLOADS": str(tmp / "downloads"), "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    })
    return env


def _execute(colab: dict, notebooks: list[Path], workdir: Path, base: str, monkeypatch,
             downloads: Path = None) -> dict[str, dict]:
    """Run each notebook in a fresh kernel of the Colab-like environment (a download lands in ``downloads``, by
    default the rehearsal's folder); {name: executed notebook}."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    import nbformat

    workdir.mkdir(parents=True, exist_ok=True)
    env = _environment(colab, base)
    if downloads is not None:
        env["CNET_REHEARSAL_DOWNLOADS"] = str(downloads)
    with monkeypatch.context() as mp:
        for k in list(os.environ):
            mp.delenv(k)
        for k, v in env.items():
            mp.setenv(k, v)
        done = {}
        for src in notebooks:
            dst = workdir / src.name
            write_notebook(read_notebook(src), dst)
            mp.setenv("CNET_REHEARSAL_NOTEBOOK", str(dst))  # what the stand-in google.colab._message answers
            node = nbformat.read(dst, as_version=4)
            client = NotebookClient(node, timeout=600, kernel_name="colab", resources={"metadata": {"path": str(workdir)}})
            try:
                client.execute()
            except CellExecutionError as err:
                pytest.fail(f"{src.name} failed in the Colab rehearsal:\n{str(err)[-4000:]}", pytrace=False)
            done[src.name] = node
    return done


def _stream(nb, first: int = 0, end: int = None) -> str:
    """What the code cells ``first`` to ``end`` (all by default) printed."""
    return "".join(o.get("text", "") for c in nb.cells[first:end] if c.cell_type == "code" for o in c.get("outputs", [])
                   if o.get("output_type") == "stream")


def _widget_outputs(nb) -> list:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if WIDGET_VIEW in o.get("data", {})]


def _pip_lines(colab: dict) -> list[str]:
    log = colab["tmp"] / "pip.log"
    lines = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


def test_every_chapter_runs_in_the_rehearsal():
    """Every chapter runs as its student copy; the reader's stage names chapters that exist, an image one among them."""
    assert set(READER_STAGE) <= {p.stem for p in NOTEBOOKS}, "READER_STAGE names a chapter that is not in _toc.yml"
    assert {p.stem for p in STUDENT_NOTEBOOKS} == {p.stem for p in NOTEBOOKS}
    assert "manifestation_invariance" in {p.stem for p in READER_NOTEBOOKS}, "an image chapter downloads CIFAR-10"


def test_the_chapters_run_as_a_reader_opens_them_in_colab(colab, monkeypatch):
    started = time.perf_counter()
    with serve({f"/{ARCHIVE}": colab["archive"].read_bytes()}) as (base, requests):
        done = _execute(colab, READER_NOTEBOOKS, colab["tmp"] / "content", base, monkeypatch)
    seconds = time.perf_counter() - started
    print(f"\nColab rehearsal: environment {colab['setup_s']:.0f} s, {len(done)} chapters {seconds:.0f} s")

    assert requests == [f"/{ARCHIVE}"], f"CIFAR-10 is downloaded once per runtime, got {requests}"
    data = colab["tmp"] / "home" / ".cache" / "cnet_lib" / "data" / "cifar-10-batches-py"
    assert (data / "data_batch_1").is_file(), "the real download path extracted the archive into the default cache"
    lines = _pip_lines(colab)
    assert lines == [f'install -q "{_project.install_requirement()}"'] * len(READER_NOTEBOOKS), lines
    for name, nb in done.items():
        text = _stream(nb)
        assert "preset: smoke" in text and " in Google Colab, torch" in text, f"{name}: setup did not see Colab"
        assert "✅ pass" in text and "❌" not in text, f"{name}: a check fails on its solution:\n{text[-2000:]}"
        assert "FAKE" not in text, f"{name}: fell back to fake data instead of downloading"
    live = _live_apps(done)
    assert live >= 2, f"every live app renders as a widget on ipywidgets 7 (found {live})"


def _app_answers(nb) -> list:
    """What the output widget of each live app of ``nb`` shows at the end (the outputs in its saved state)."""
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    return [m["state"].get("outputs", []) for m in state.values() if m.get("model_name") == "OutputModel"]


def _live_apps(done: dict) -> int:
    """How many live apps rendered as widgets in the executed notebooks ``done``; every widget view carries its model
    and Colab's display metadata, and every app's output shows a figure from Colab's plotly renderer, no traceback
    (issue 57: the manifestation app showed one)."""
    live = 0
    for name, nb in done.items():
        apps = sum(o["data"].get("text/plain", "").startswith("Live app") for o in _widget_outputs(nb))
        answers = _app_answers(nb)
        assert len(answers) >= apps, f"{name}: {apps} live apps, {len(answers)} output widgets in the saved state"
        for outputs in answers:
            assert not [o for o in outputs if o.get("output_type") == "error"], f"{name}: an app shows a traceback"
            assert any("Plotly.newPlot" in o.get("data", {}).get("text/html", "") for o in outputs), \
                f"{name}: an app's output holds no figure: {str(outputs)[:500]}"
        for out in _widget_outputs(nb):
            view = out["data"][WIDGET_VIEW]
            assert view.get("model_id") and view.get("version_major") == 2, f"{name}: a widget view without a model"
            url = out.get("metadata", {}).get(WIDGET_VIEW, {}).get("colab", {}).get("custom_widget_manager", {}).get("url")
            assert url and url.endswith("manager.min.js"), f"{name}: a widget view lost its Colab display metadata"
            if out["data"].get("text/plain", "").startswith("Live app"):
                assert "plotly-graph-div" in out["data"]["text/html"]
                live += 1
    return live


def _switch(notebook: Path, downloads: Path) -> dict:
    """A cell of the rehearsal's own: from here, Colab's front end holds ``notebook`` and downloads land in
    ``downloads`` (what the stand-ins of google.colab read)."""
    return new_code_cell(f"import os\nos.environ['CNET_REHEARSAL_NOTEBOOK'] = {str(notebook)!r}\n"
                         f"os.environ['CNET_REHEARSAL_DOWNLOADS'] = {str(downloads)!r}")


def _one_run(copy: Path, folder: Path, answers: dict, downloads: Path) -> tuple[Path, dict]:
    """The copy, solved and with its stubs, in one kernel: its cells up to its first exercise; then its stubs up to
    its last check and its hand-in cell (a zip of the copy as handed out); then every cell of the solved copy from
    its first exercise to its end (a zip of the solved copy).  So the solved copy runs from top to bottom, the
    stubbed one to each exercise's own failure, and the cells before the exercises once.  Returns the notebook
    to run and ``{"stubs": (first, last), "solved": (first, last)}``, the cell ranges of each part."""
    stubs, solved = folder / "stubs" / copy.name, folder / "solved" / copy.name
    stubs.parent.mkdir(exist_ok=True)
    solved.parent.mkdir(exist_ok=True)
    write_notebook(read_notebook(copy), stubs)
    fill(copy, solved, answers)
    t_cells, s_cells = read_notebook(stubs)["cells"], read_notebook(solved)["cells"]
    first = next(i for i, (t, s) in enumerate(zip(t_cells, s_cells)) if t.get("source") != s.get("source"))
    last = max(i for i, c in enumerate(t_cells[:-2]) if "grader.check(" in "".join(c.get("source", "")))
    for cell in t_cells:  # these run besides the solved copy's own: no cell id twice
        cell.pop("id", None)
    cells = (s_cells[:first] + t_cells[first:last + 1] + [_switch(stubs, downloads / "stubs")] + t_cells[-2:]
             + [_switch(solved, downloads / "solved")] + s_cells[first:])
    run = folder / "runs" / copy.name
    run.parent.mkdir(exist_ok=True)
    nb = read_notebook(copy)
    nb["cells"] = cells
    write_notebook(nb, run)
    return run, {"stubs": (first, last + 4), "solved": (last + 5, len(cells))}


def test_student_copies_run_in_colab_with_their_own_install(colab, monkeypatch, tmp_path):
    """Every copy solved runs to the end with every check passing, every copy with its stubs runs to its last
    check; each writes its zip in Colab, and the teacher grades them: every point, and none."""
    share = colab["tmp"] / "share"
    wheel_dir = share.with_name("share-wheel")
    assert export_students([str(share), "--wheel-url", f"file://{wheel_dir}/", "--root", str(ROOT)]) == 0
    assert not list(share.glob("*.whl")), "the notebooks handed out, the wheel in a folder of its own"
    copies = [share / p.name for p in STUDENT_NOTEBOOKS]
    answers, downloads, runs = right_answers(ROOT), colab["tmp"] / "downloads", {}
    for p in copies:
        assert not any("solution" in cell_tags(c) for c in read_notebook(p)["cells"])
        runs[p.name] = _one_run(p, share.parent, answers, downloads)
    started = time.perf_counter()
    with serve({f"/{ARCHIVE}": colab["archive"].read_bytes()}) as (base, _requests):
        done = _execute(colab, [run for run, _ in runs.values()], colab["tmp"] / "class", base, monkeypatch)
    print(f"\nColab rehearsal: {len(copies)} student copies solved and with their stubs {time.perf_counter() - started:.0f} s")
    (wheel,) = wheel_dir.glob("*.whl")
    build = wheel.name.split("-")[1]
    installed = _run([colab["python"], "-c", "from cnet_lib.book.notebook import installed_build; print(installed_build())"])
    assert installed.strip() == build, "the copies' install cell installed the exported wheel"
    lines = _pip_lines(colab)
    assert len(lines) == len(copies) and all(f"file://{wheel_dir}/" in ln and "git+" not in ln for ln in lines), lines
    for name, nb in done.items():
        for part, (a, b) in runs[name][1].items():
            text = _stream(nb, a, b)
            assert "WARNING" not in text, f"{name}: {text[-1500:]}"
            if part == "solved":
                assert "✅ pass" in text and "❌" not in text, f"{name} solved: {text[-2000:]}"
            else:
                assert "❌ not done yet" in text and "✅" not in text, f"{name}: the stubs are the student's to write"
    assert _live_apps(done) >= 4, "the copies' live apps render as widgets"
    _the_students_install_is_theirs(colab)
    _the_colab_exports_are_graded(colab, share, copies)


def _the_students_install_is_theirs(colab: dict) -> None:
    """After the copies' install cell: no teacher command and no answer key in the students' environment."""
    away = colab["tmp"]  # not the repository root, whose own cnet_lib/ `python -m` would import first
    listed = _run([colab["python"], "-m", "cnet_lib"], cwd=away)
    assert not [ln for ln in listed.splitlines() if ln.split()[:1] in (["grade"], ["student"], ["answers"])], listed
    key = subprocess.run([str(colab["python"]), "-c", "import cnet_lib.teacher"], capture_output=True, text=True,
                         cwd=away)
    assert key.returncode != 0 and "No module named 'cnet_lib.teacher'" in key.stderr, key.stderr[-500:]


def _the_colab_exports_are_graded(colab: dict, share: Path, copies: list) -> None:
    """Every copy's last cell (grader.export()) downloaded a zip in Colab; the teacher's command grades them: the
    solved copies every point and no flag, the stubs nothing and no flag."""
    import csv
    import shutil

    from cnet_lib.cli.grade import main as grade

    subs = colab["tmp"] / "submissions"
    for kind, student in (("solved", "a_solver"), ("stubs", "b_stubber")):
        zips = sorted((colab["tmp"] / "downloads" / kind).glob("*.zip"))
        assert sorted(z.name[: -len("_2026_01_01T00_00_00.zip")] for z in zips) == sorted(p.stem for p in copies), zips
        (subs / student).mkdir(parents=True)
        for z in zips:
            shutil.copy(z, subs / student)
    out = colab["tmp"] / "gradebook.csv"
    assert grade([str(subs), "--key", str(share.with_name("share-key")), "--out", str(out)]) == 0
    rows = {r["student"]: r for r in csv.DictReader(out.open(encoding="utf-8"))}
    assert rows["a_solver"]["total"] == rows["a_solver"]["possible"] and rows["a_solver"]["flags"] == "", rows["a_solver"]
    assert float(rows["b_stubber"]["total"]) == 0 and rows["b_stubber"]["flags"] == "", rows["b_stubber"]
    assert "not done" in (colab["tmp"] / "gradebook-feedback" / "b_stubber.md").read_text(encoding="utf-8")


def test_the_book_renderer_works_on_plotly_5_outside_colab(colab):
    """Where the package runs outside Colab with Colab's plotly 5 (a university JupyterHub)."""
    code = textwrap.dedent("""
        import plotly, plotly.graph_objects as go, plotly.io as pio
        from cnet_lib.book.notebook import setup
        assert plotly.__version__.startswith("5."), plotly.__version__
        ctx = setup(quiet=True)
        assert not ctx.in_colab and pio.renderers.default == "cnet_book"
        bundle = go.Figure(go.Scatter(x=[0, 1], y=[1, 2]))._repr_mimebundle_()
        assert set(bundle) == {"text/html"} and "Plotly.newPlot" in bundle["text/html"]
        print("ok")
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "CNET_"))}
    env["CNET_PRESET"] = "smoke"
    assert _run([colab["python"], "-c", code], env=env, cwd=colab["tmp"]).strip() == "ok"


def test_a_colab_install_quotes_the_gpu_training_time_and_the_t4_estimate(colab):
    """The setup cell's training time in the installed wheel (no benchmarks/ beside it): the measured H100 time and
    the T4 estimate, both computed from the shipped models' own records."""
    code = textwrap.dedent("""
        from cnet_lib.book.measurements import training_words
        print(training_words("gpu"))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "CNET_"))}
    said = _run([colab["python"], "-c", code], env=env, cwd=colab["tmp"]).strip()
    assert "(measured, training seed 0" in said and said.endswith("on a T4 (an estimate)"), said
