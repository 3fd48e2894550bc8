"""Student copies, as a teacher makes them for a class: no path to the solutions, the library
pinned to exactly the version the copies came from, and notebooks that run to the end."""
from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from cnet_lib.book import project as _project
from cnet_lib.book.notebook_cells import cell_source, cell_tags, read_notebook
from cnet_lib.book.toc import toc_notebooks
from cnet_lib.book.student_copies import SOURCE_PATHS
from cnet_lib.cli.student import main

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = toc_notebooks(ROOT)
HAS_GIT = shutil.which("git") is not None


def _texts(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.ipynb"))}


def _code(nb: dict) -> list[str]:
    return [cell_source(c) for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.fixture(scope="module")
def wheel_copies(tmp_path_factory):
    out = tmp_path_factory.mktemp("students")
    assert main([str(out), "--wheel-url", "https://course.example.edu/ml/", "--root", str(ROOT)]) == 0
    return out


def test_wheel_copies_have_no_path_to_the_solutions(wheel_copies):
    texts = _texts(wheel_copies)
    assert sorted(texts) == sorted(p.name for p in NOTEBOOKS)
    for name, text in texts.items():
        assert _project.repo_slug() not in text, f"{name} names the repository (which holds the solutions)"
        assert "colab.research.google.com/github" not in text and "Open In Colab" not in text, name
        nb = json.loads(text)
        assert not any("solution" in cell_tags(c) for c in nb["cells"]), name
        assert not any("@solution" in s or "# @title Solution" in s for s in _code(nb)), name


def test_wheel_copies_install_exactly_the_exported_library(wheel_copies):
    (wheel,) = wheel_copies.glob("*.whl")
    build = wheel.name.split("-")[1]
    assert build.startswith("0.1.0+g") or build.startswith("0.1.0+src"), build
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith("METADATA"))).decode()
        assert f"Version: {build}" in meta
        assert z.read("cnet_lib/book/exercises/framework.py") == (ROOT / "cnet_lib/book/exercises/framework.py").read_bytes()
        assert not any(n.startswith("book/") or n.endswith(".ipynb") for n in z.namelist())
    for p in wheel_copies.glob("*.ipynb"):
        nb = read_notebook(p)
        first, second = _code(nb)[:2]
        assert 'if "google.colab" in sys.modules:' in first and "torch" not in first.split("%pip install", 1)[1]
        assert f"https://course.example.edu/ml/{wheel.name.replace('+', '%2B')}" in first
        assert second.endswith(f'setup(expected_build="{build}")')
        assert nb["metadata"]["cnet_student_copy"]["build"] == build
        assert f"cnet-lib {build}" in cell_source(nb["cells"][0])


def test_student_copies_run_to_the_end(wheel_copies):
    """Unfinished stubs: every check says "not done yet", nothing crashes, and the setup cell says
    that the library installed here is not the build the copy was made for."""
    from nbmake.nb_run import NotebookRun

    result = NotebookRun(wheel_copies / "how_to_use.ipynb", default_timeout=300).execute()
    assert result.error is None, result.error and result.error.summary
    text = "".join(o.get("text", "") for c in result.nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "❌ not done yet: observed_order" in text and "✅" not in text
    assert "WARNING: this copy of the chapter was made for cnet-lib" in text


def test_the_export_needs_to_know_where_students_install_from(tmp_path, capsys):
    with pytest.raises(SystemExit) as err:
        main([str(tmp_path / "out")])
    assert err.value.code == 2 and "--wheel-url" in capsys.readouterr().err
    assert main([str(tmp_path / "out"), "--wheel-url", "ftp://x/", "--root", str(ROOT)]) == 1
    assert main([str(tmp_path / "out"), "--wheel-url", "https://x/cnet.whl", "--root", str(ROOT)]) == 1
    assert "folder" in capsys.readouterr().err


def _mini_repo(tmp_path: Path) -> Path:
    """A git clone-like copy of the repository with one chapter, committed."""
    repo = tmp_path / "repo"
    (repo / "book").mkdir(parents=True)
    for rel in SOURCE_PATHS:
        src = ROOT / rel
        if src.is_dir():
            shutil.copytree(src, repo / rel, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, repo / rel)
    shutil.copy2(ROOT / "book" / "how_to_use.ipynb", repo / "book" / "how_to_use.ipynb")
    (repo / "_toc.yml").write_text("format: jb-book\nroot: book/how_to_use\n", encoding="utf-8")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "lesson"], check=True)
    return repo


@pytest.mark.skipif(not HAS_GIT, reason="needs git")
def test_repository_copies_pin_the_commit(tmp_path, capsys):
    repo = _mini_repo(tmp_path)
    sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert main([str(tmp_path / "out"), "--from-repository", "--root", str(repo)]) == 0
    captured = capsys.readouterr()
    assert "push it before the lesson" in captured.err, "an unpushed commit is pointed out"
    nb = read_notebook(tmp_path / "out" / "how_to_use.ipynb")
    first, second = _code(nb)[:2]
    assert f'"{_project.install_requirement(ref=sha)}"' in first
    assert second.endswith(f'setup(expected_build="0.1.0@{sha}")')
    assert "Open In Colab" not in (tmp_path / "out" / "how_to_use.ipynb").read_text(encoding="utf-8")


@pytest.mark.skipif(not HAS_GIT, reason="needs git")
def test_repository_copies_refuse_uncommitted_library_changes(tmp_path, capsys):
    repo = _mini_repo(tmp_path)
    with open(repo / "cnet_lib" / "book" / "exercises" / "core.py", "a", encoding="utf-8") as f:
        f.write("\n# a teacher's local change\n")
    assert main([str(tmp_path / "out"), "--from-repository", "--root", str(repo)]) == 1
    err = capsys.readouterr().err
    assert "cnet_lib/book/exercises/core.py" in err and "--wheel-url" in err
    # --wheel-url ships the working tree as it is, under a version that says so
    assert main([str(tmp_path / "out2"), "--wheel-url", f"file://{tmp_path}/share/", "--root", str(repo)]) == 0
    (wheel,) = (tmp_path / "out2").glob("*.whl")
    assert "+src" in wheel.name
    with zipfile.ZipFile(wheel) as z:
        assert b"a teacher's local change" in z.read("cnet_lib/book/exercises/core.py")


def test_repository_copies_need_a_clone(tmp_path, capsys):
    root = tmp_path / "not-a-clone"
    (root / "book").mkdir(parents=True)
    shutil.copy2(ROOT / "pyproject.toml", root / "pyproject.toml")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/x\n", encoding="utf-8")
    assert main([str(tmp_path / "out"), "--from-repository", "--root", str(root)]) == 1
    assert "--wheel-url" in capsys.readouterr().err
