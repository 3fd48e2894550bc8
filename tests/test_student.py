"""Student copies, as a teacher makes them for a class: no path to the solutions, the library
pinned to exactly the version the copies came from, and notebooks that run to the end."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cnet_lib.book.notebook_cells import cell_source, cell_tags, read_notebook
from cnet_lib.book.project import toc_notebooks
from cnet_lib.book.student_copies import SOURCE_PATHS
from cnet_lib.cli.student import main
from cnet_lib.book import project as _project

pytestmark = pytest.mark.slow  # builds the students' wheel and the copies of every chapter

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = toc_notebooks(ROOT)
HAS_GIT = shutil.which("git") is not None


def _texts(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.ipynb"))}


def _code(nb: dict) -> list[str]:
    return [cell_source(c) for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.fixture(scope="module")
def wheel_copies(class_export):
    """The copies of ``python -m cnet_lib student OUTDIR --wheel-url URL`` (conftest.py)."""
    return class_export["copies"]


@pytest.fixture(scope="module")
def wheel(class_export) -> Path:
    """The students' wheel, in a folder of its own beside the copies."""
    (found,) = class_export["wheel"].glob("*.whl")
    return found


def test_wheel_copies_have_no_path_to_the_solutions(wheel_copies):
    texts = _texts(wheel_copies)
    assert sorted(texts) == sorted(p.name for p in NOTEBOOKS)
    for name, text in texts.items():
        assert _project.repo_slug() not in text, f"{name} names the repository (which holds the solutions)"
        assert "colab.research.google.com/github" not in text and "Open In Colab" not in text, name
        nb = json.loads(text)
        assert not any("solution" in cell_tags(c) for c in nb["cells"]), name
        assert not any("@solution" in s or "# @title Solution" in s for s in _code(nb)), name


def test_wheel_copies_install_exactly_the_exported_library(wheel_copies, wheel):
    assert not list(wheel_copies.glob("*.whl")), "the folder handed out holds the notebooks only"
    build = wheel.name.split("-")[1]
    assert build.startswith("0.1.0+g") or build.startswith("0.1.0+src"), build
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith("METADATA"))).decode()
        assert f"Version: {build}" in meta
        assert z.read("cnet_lib/book/exercises/framework.py") == (ROOT / "cnet_lib/book/exercises/framework.py").read_bytes()
        assert not any(n.startswith("book/") or n.endswith(".ipynb") for n in z.namelist())
        assert "cnet_lib/book/exercises/public_answers.json" in z.namelist(), "the public checks' answers are package data"
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
    assert "0 of 1 public checks pass in how_to_use" in text and "Your submission: " in text, text[-2000:]
    (zip_path,) = wheel_copies.glob("how_to_use_*.zip")  # grader.export() beside the notebook it read
    with zipfile.ZipFile(zip_path) as z:
        assert "how_to_use.ipynb" in z.namelist()
    zip_path.unlink()


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
    assert "cnet_lib/book/exercises/core.py" in err and "--wheel-url" in err  # a file of the test's: stale on purpose
    # --wheel-url ships the working tree as it is, under a version that says so
    assert main([str(tmp_path / "out2"), "--wheel-url", f"file://{tmp_path}/share/", "--root", str(repo)]) == 0
    (wheel,) = (tmp_path / "out2-wheel").glob("*.whl")
    assert "+src" in wheel.name
    with zipfile.ZipFile(wheel) as z:
        assert b"a teacher's local change" in z.read("cnet_lib/book/exercises/core.py")  # stale on purpose


def test_repository_copies_need_a_clone(tmp_path, capsys):
    root = tmp_path / "not-a-clone"
    (root / "book").mkdir(parents=True)
    shutil.copy2(ROOT / "pyproject.toml", root / "pyproject.toml")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/x\n", encoding="utf-8")
    assert main([str(tmp_path / "out"), "--from-repository", "--root", str(root)]) == 1
    assert "--wheel-url" in capsys.readouterr().err


# ----------------------------------------------------------------------------- what a student installs (issue 21)
def _installed_texts(wheel: Path, tmp: Path) -> dict[str, str]:
    """Every file of the wheel, unpacked as pip installs it, as text."""
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp)
    return {str(p.relative_to(tmp)): p.read_bytes().decode("utf-8", errors="ignore") for p in tmp.rglob("*")
            if p.is_file() and p.suffix != ".pt"}  # the shipped checkpoints' bytes hold any number by chance


def _hidden_values(secret: str) -> set[str]:
    """Numbers of the hidden cases the key draws (written as the recipes write them), for a few students: those
    with at least 8 significant digits, which no file holds by chance (0.03125 or 0.010317 may well be in one)."""
    import json
    import re

    from cnet_lib.book.exercises import EXERCISES
    from cnet_lib.teacher.keys import hidden_cases

    public = json.dumps([EXERCISES[n].public() for n in EXERCISES])
    drawn = json.dumps([hidden_cases(n, secret, s) for n in EXERCISES for s in ("ann", "ben")])
    return {v for v in re.findall(r"\d+\.\d+", drawn) if len(v.replace(".", "").lstrip("0")) >= 8 and v not in public}


def test_the_students_install_lists_its_commands_without_the_teachers(wheel, tmp_path):
    """``python -m cnet_lib`` in a student's install (the wheel unpacked, run away from the repository) lists the
    commands, none of the teacher's, and exits 0; a teacher's command is an unknown one there."""
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    run = [sys.executable, "-m", "cnet_lib"]
    listed = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert listed.returncode == 0, listed.stderr[-2000:]
    names = [ln.split()[0] for ln in listed.stdout.splitlines() if ln.startswith("  ")]
    assert "train" in names and "sweep" in names and not {"student", "grade", "answers"} & set(names), names
    grade = subprocess.run(run + ["grade"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert grade.returncode == 2 and "unknown command 'grade'" in grade.stderr, grade.stderr[-2000:]


def test_the_students_install_carries_no_answers_and_no_way_to_them(wheel, class_export, tmp_path):
    from cnet_lib.teacher import keys
    from cnet_lib.teacher.keys import AnswerKey

    files = _installed_texts(wheel, tmp_path)
    everything = "\n".join(files.values())
    assert not [f for f in files if f.startswith("cnet_lib/teacher/")], "the answer key and the grader stay home"
    assert not [f for f in files if f.split("/")[-1] in ("grade.py", "answers.py") or f == "cnet_lib/cli/student.py"]
    key_names = [n for n in keys.__all__ if n.startswith(("reference_", "hidden_"))]
    assert key_names and not [n for n in key_names if n in everything], "a reference or hidden-case generator"
    assert _project.repo_slug() not in everything and _project.REPO_URL not in everything, "the teacher's repository"
    key = AnswerKey.load(class_export["key"])
    values = _hidden_values(key.secret)
    assert len(values) > 20 and not [v for v in values if v in everything], "a hidden case's value"
    assert key.secret not in everything
    meta = next(text for name, text in files.items() if name.endswith("METADATA"))
    assert "Teaching with the book" not in meta and "answer key" not in meta.lower(), "the repository's README"


def _code_lines(source: str) -> list[str]:
    """The lines of ``source`` that say something of an answer: whitespace folded, no signature, import,
    docstring or comment, at least 25 characters."""
    import re

    lines = (re.sub(r"\s+", " ", ln).strip() for ln in source.splitlines())
    return [ln for ln in lines if len(ln) >= 25 and not ln.startswith(("def ", "import ", "from ", '"""', "#"))
            and not ln.endswith('"""')]


def test_the_students_install_holds_no_solution_under_any_name(wheel, class_export, tmp_path):
    """A reference renamed, or a solution pasted into a module, is found by its lines: at most one line of a
    solution (a formula the library itself needs, such as the levels of a b-bit quantization) is in the wheel."""
    from cnet_lib.teacher.keys import solution_sources

    installed = {ln for text in _installed_texts(wheel, tmp_path).values() for ln in _code_lines(text)}
    solutions = solution_sources(class_export["root"])
    assert len(solutions) >= 10 and all(len(_code_lines(s)) >= 1 for s in solutions.values())
    found = {name: [ln for ln in _code_lines(src) if ln in installed] for name, src in solutions.items()}
    assert not {n: f for n, f in found.items() if len(f) > 1}, "a solution's lines in the students' wheel"


def test_the_copies_read_as_plain_text_and_check_with_the_grader(wheel_copies):
    from cnet_lib.book.exercises import CATALOGUE

    for p in wheel_copies.glob("*.ipynb"):
        nb = read_notebook(p)
        text = "\n".join(cell_source(c) for c in nb["cells"])
        assert "{doc}" not in text and "{cite}" not in text, f"{p.name}: a MyST role Colab shows raw"
        assert f'grader = Notebook("{p.stem}")' in text and "submission = grader.export()" in text
        assert nb["metadata"]["cnet_student_copy"]["chapter"] == p.stem
        for row in (r for r in CATALOGUE if r.chapter == p.stem):
            assert f"**Exercise `{row.name}`** · {row.points} point" in text and row.objective in text
            assert f'grader.check("{row.name}")' in text and f"check_{row.name}({row.name})" not in text


# ----------------------------------------------------------------------------- copies a student can finish (issue 43)
def _unbound_names(nb: dict) -> list[tuple[int, str]]:
    """``(code cell, name)`` of every name a cell reads that neither it, an earlier cell, Python nor IPython binds
    (a rewritten import that dropped a name the cell uses shows here, before any run)."""
    import ast
    import builtins

    from cnet_lib.book.exercise_cells import parse_cell

    bound = set(dir(builtins)) | {"display", "get_ipython", "In", "Out", "_"}
    out = []
    for i, source in enumerate(_code(nb)):
        tree = parse_cell(source)
        own = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
        own |= {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
        own |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))}
        own |= {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names}
        own |= {n.name for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler) and n.name}
        out += [(i, n.id) for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                and n.id not in bound | own]
        bound |= own
    return out


def test_every_name_a_copy_reads_is_bound_before(wheel_copies):
    """The copies' rewritten cells keep what they use: the import of ``student_code`` beside a check's, dropped
    once, made the solved copies of two chapters stop with a NameError (the run of every copy, solved and with its
    stubs, is tests/test_colab_rehearsal.py's)."""
    for p in wheel_copies.glob("*.ipynb"):
        assert not _unbound_names(read_notebook(p)), (p.name, _unbound_names(read_notebook(p)))


def test_the_copies_prose_names_what_the_copy_has(wheel_copies):
    """No "check_x(x, hint=k)" (a copy has no such function: grader.check), no badge to open it by, no solution
    "hidden until you ask for it"."""
    import re

    for p in wheel_copies.glob("*.ipynb"):
        nb = read_notebook(p)
        prose = "\n".join(cell_source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
        code = "\n".join(_code(nb))
        calls = re.findall(r"(?<![\w.])check_\w+\([^)]*\)", prose + code)  # the book's checks, not grader.check_all()
        assert not calls, (p.name, calls)
        assert "the badge above" not in prose and "File → Upload notebook" in prose, p.name
        assert "hidden until you ask for it" not in prose and "not in a student copy" not in prose, p.name
    how = "\n".join(cell_source(c) for c in read_notebook(wheel_copies / "how_to_use.ipynb")["cells"])
    assert 'grader.check("observed_order", hint=2)' in how and "its **solution**" not in how
    meta = read_notebook(wheel_copies / "how_to_use.ipynb")["metadata"]["cnet_student_copy"]
    assert "pip install -e" not in how and "clone of the" not in how, "issue 54: a clone holds the solutions"
    assert f'`pip install "cnet-lib[book] @ https://course.example.edu/ml/cnet_lib-{meta["build"].replace("+", "%2B")}' in how
