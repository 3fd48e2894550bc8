"""Write the student copies of the book's notebooks, fit to hand out unchanged
(the command line is :mod:`cnet_lib.cli.student`):

    python -m cnet_lib student OUTDIR --wheel-url URL      # students install the wheel written to OUTDIR-wheel
    python -m cnet_lib student OUTDIR --from-repository    # students install the repository at this commit

Run it inside a clone of the repository (or pass ``--root``).  For every notebook listed in
``_toc.yml`` the copy

* has no solution cells (tag ``solution``), no outputs, execution counts or widget state;
  exercise stubs (tag ``exercise``) and the check cells stay;
* has no path to the solutions: the "Open in Colab" badge (which opens the teacher notebook,
  solutions included) and every link to the book's repository or its Colab pages are removed;
  with ``--wheel-url`` not even the install cell names the repository;
* installs, on Colab, exactly the library the copies were made from: with ``--wheel-url`` the
  wheel of this working tree (written to ``OUTDIR-wheel``, beside the copies and never among them, version
  ``<version>+g<commit>`` or ``+src<hash of the sources>``), which you put where ``URL`` serves it; with
  ``--from-repository`` the current commit, which must be clean and pushed;
* tells the student, in its setup cell, when another build of the library is installed;
* shows each exercise's points, minutes, difficulty and objective, checks with otter-grader's notebook API
  (``grader.check``) and ends with ``grader.export()``, the zip to hand in; MyST roles are plain text
  (:func:`student_cells`).

With ``--wheel-url`` the students' wheel carries no answer key, no teacher command and no repository URL
(:func:`build_wheel`); the teacher's answer key is written by the command line (:mod:`cnet_lib.cli.student`).

Also here: the cells a student copy changes or adds (:func:`student_cells`), and the wheel of the library a class
installs (:func:`build_wheel`).
"""
from __future__ import annotations

import ast
import copy
import hashlib
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from .exercises.catalogue import exercise_line, info
from .chapter_cards import COLAB_WAY_IN, COPY_WAY_IN
from .exercise_cells import exercise_pairs, function_signatures, parse_cell
from .notebook_cells import (BADGE_RE, SOLUTION_TAG, cell_source, cell_tags, new_code_cell, new_markdown_cell,
    read_notebook, set_source, strip_outputs, write_notebook)
from .project import (BOOK_EXTRA, PACKAGE_NAME, REPO_URL, SETUP_CELL_SOURCE, colab_cell_source, find_root,
    install_requirement, repo_slug, toc_files, toc_notebooks)

__all__ = ["StudentExportError", "StudentInstall", "build_wheel", "project_version", "wheel_install",
           "repository_install", "is_pushed", "student_version", "export", "SOURCE_PATHS", "chapters_with_exercises",
           "copy_prose", "TEACHER_PATHS", "copy_sources", "source_hash", "strip_for_students", "STUDENT_README",
           "roles_to_text", "bib_labels", "page_titles", "exercise_header", "rewrite_checks", "rewrite_check_calls",
           "grader_cell", "hand_in_cells", "student_cells"]


# The cells a student copy changes or adds, on top of removing the solutions (:mod:`.student_copies`):
#
# * MyST roles, which Colab shows raw, become plain text: ``{doc}`how_to_use``` the chapter's title in italics
#   (the copies hold no link to the book, whose pages show the solutions), ``{cite}`key``` "Author et al. (year)"
#   from ``book/references.bib``, any other role its text;
# * above each exercise, a line with its points, estimated minutes, difficulty and learning objective
#   (:func:`cnet_lib.book.exercises.catalogue.exercise_line`), and where to write the answer;
# * the checks become otter-grader's notebook API: a ``grader = Notebook("<chapter>")`` cell after the setup cell,
#   ``passed = grader.check("rk_step")`` for ``passed = check_rk_step(rk_step)``, and a last section that runs
#   ``grader.check_all()`` and ``grader.export()`` (the zip to hand in).

_ROLE_RE = re.compile(r"\{([a-z:]+)\}`([^`]*)`")
_CHECK_RE = re.compile(r"\bcheck_(\w+)\(\s*\1\s*(,\s*hint\s*=\s*\d+\s*)?\)")
_IMPORT_CHECKS_RE = re.compile(r"(?m)^from cnet_lib\.book\.exercises import \(?\s*check_\w+(\s*,\s*check_\w+)*\s*\)?\s*\n?")


def bib_labels(bib: Path) -> dict[str, str]:
    """``{key: "Author (year)"}`` of a BibTeX file (first author's last name, "et al." for three or more)."""
    if not Path(bib).is_file():
        return {}
    out = {}
    for m in re.finditer(r"@\w+\{([^,\s]+),(.*?)\n\}", Path(bib).read_text(encoding="utf-8"), flags=re.S):
        key, body = m.group(1), m.group(2)
        author = re.search(r"author\s*=\s*\{(.*?)\}\s*,?\s*\n", body, flags=re.S)
        year = re.search(r"year\s*=\s*\{?(\d{4})", body)
        names = [a.strip() for a in re.split(r"\s+and\s+", author.group(1))] if author else []
        last = [(n.split(",")[0] if "," in n else n.split()[-1]).strip("{} ") for n in names if n]
        who = (last[0] if len(last) == 1 else f"{last[0]} and {last[1]}" if len(last) == 2
               else f"{last[0]} et al." if last else key)
        out[key] = f"{who} ({year.group(1)})" if year else who
    return out


def page_titles(root: Path, pages) -> dict[str, str]:
    """``{page stem: its '# Title'}`` of the book's pages (notebooks and markdown files)."""
    out = {}
    for entry in pages:
        nb, md = root / f"{entry}.ipynb", root / f"{entry}.md"
        if nb.is_file():
            text = "\n".join(cell_source(c) for c in read_notebook(nb)["cells"] if c.get("cell_type") == "markdown")
        elif md.is_file():
            text = md.read_text(encoding="utf-8")
        else:
            continue
        m = re.search(r"(?m)^#\s+(.+)$", text)
        if m:
            out[Path(entry).name] = m.group(1).strip()
    return out


def roles_to_text(text: str, titles: Mapping[str, str], cites: Mapping[str, str]) -> str:
    """``text`` with every MyST role as plain text (see the module doc)."""
    def role(m: re.Match) -> str:
        kind, body = m.group(1), m.group(2)
        if kind == "doc":
            shown = re.match(r"(.*?)\s*<([^>]+)>$", body)
            if shown:
                return shown.group(1)
            return f"*{titles.get(body.split('/')[-1], body)}*"
        if kind.startswith("cite"):
            return "; ".join(cites.get(k.strip(), k.strip()) for k in body.split(","))
        if kind == "math":
            return f"${body}$"
        shown = re.match(r"(.*?)\s*<([^>]+)>$", body)
        return shown.group(1) if shown else body

    return _ROLE_RE.sub(role, text)


def exercise_header(name: str) -> str:
    """The markdown above an exercise stub in a student copy."""
    return (f"{exercise_line(info(name))}\n\nWrite your answer in the cell below, and only there: the teacher's grader "
            "runs that cell on its own, after the imports of the cells above it, so put any helper function in it too.")


def _without_check_imports(text: str) -> str:
    """``text`` without the ``check_*`` names of its ``from cnet_lib.book.exercises import ...`` statements (a
    statement that imports nothing else goes; one that imports more keeps the rest, e.g. ``student_code``)."""
    try:
        tree = parse_cell(text)
    except SyntaxError:
        return _IMPORT_CHECKS_RE.sub("", text)
    lines = text.split("\n")
    for node in sorted((n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "cnet_lib.book.exercises"),
                       key=lambda n: -n.lineno):
        kept = [a for a in node.names if not a.name.startswith("check_")]
        if len(kept) == len(node.names):
            continue
        new = [f"from cnet_lib.book.exercises import {', '.join(ast.unparse(a) for a in kept)}"] if kept else []
        lines[node.lineno - 1:node.end_lineno] = new
    return "\n".join(lines)


def rewrite_check_calls(text: str) -> str:
    """``text`` (a cell, or prose) with ``grader.check("name"[, hint=k])`` for ``check_name(name[, hint=k])``."""
    return _CHECK_RE.sub(lambda m: f'grader.check("{m.group(1)}"{m.group(2) or ""})', text)


def rewrite_checks(text: str) -> str:
    """A check cell with ``grader.check("name")`` for ``check_name(name)`` and the chapter's import of the check
    gone (the other names of that import kept)."""
    return rewrite_check_calls(_without_check_imports(text)).lstrip("\n")


def grader_cell(chapter: str):
    """The cell that creates the copy's grader, after the setup cell."""
    return new_code_cell("# Your public checks and your submission (otter-grader's notebook API: grader.check, grader.export)\n"
                         "from cnet_lib.book.exercises import Notebook\n\n"
                         f'grader = Notebook("{chapter}")')


def hand_in_cells() -> list:
    """The last section of a student copy: every public check, then the submission zip."""
    text = ("## Hand in your work\n\nRun the cell below: it runs every public check of this chapter once more and writes "
            "your submission, a `.zip` holding this notebook as it is now (on Colab your browser downloads it). Hand in "
            "that file as your teacher asked. The public checks only help you: your grade comes from the teacher's "
            "tests, on other cases, run on the exercise cells of the notebook you hand in.")
    return [new_markdown_cell(text), new_code_cell("grader.check_all()\nsubmission = grader.export()")]


def student_cells(cells: list, chapter: str, setup_index: int) -> list:
    """``cells`` (solutions already removed) with the exercise headers, the grader cell after code cell
    ``setup_index`` (the setup cell), the checks rewritten and the hand-in section."""
    stubs = {i for i, _ in exercise_pairs({"cells": cells})}
    out = []
    for i, cell in enumerate(cells):
        if i in stubs:
            for name in function_signatures(cell_source(cell)):
                out.append(new_markdown_cell(exercise_header(name)))
        elif cell.get("cell_type") == "code" and _CHECK_RE.search(cell_source(cell)):
            cell["source"] = rewrite_checks(cell_source(cell))
        out.append(cell)
        if i == setup_index:
            out.append(grader_cell(chapter))
    return out + hand_in_cells()


# ----------------------------------------------------------------------------------------------------

# The wheel of the library that a class installs (``python -m cnet_lib student OUTDIR --wheel-url URL``), built
# from a copy of the working tree so the repository gets no build folders.
#
# A *student* wheel (:func:`build_wheel` with ``student=True``) carries no answers and no way to them
# (:func:`strip_for_students`): no answer key (``cnet_lib/teacher/``: references, hidden cases, the grader), no
# teacher command (``student``, ``grade``, ``answers``), no repository URL (``REPO_URL`` is emptied: the repository
# holds the solutions) and, as its description, a short README of its own instead of the repository's.  What stays
# is the library, the public checks with their stored answers, and graded hints.  ``tests/test_student.py``
# unpacks the wheel and searches every file for the key's names, hidden cases and the URL.

# the files a student's library is built from (relative to the repository root)
SOURCE_PATHS = ("pyproject.toml", "README.md", "cnet_lib")
# what a student's wheel leaves out (relative to the repository root)
TEACHER_PATHS = ("cnet_lib/teacher", "cnet_lib/cli/student.py", "cnet_lib/cli/grade.py", "cnet_lib/cli/answers.py")
STUDENT_README = """# cnet-lib (a class's copy)

The library your course's notebooks install: continuous-in-depth neural networks, exactly (Butcher tableaux,
integrators, bases, OdeBlock, ContinuousNet), with the public checks of the exercises (`grader.check(...)`).
`python -m cnet_lib` lists its command lines.
"""


class StudentExportError(Exception):
    """The copies cannot be written as asked; the message says what to do."""


def source_hash(root: Path) -> str:
    """SHA-256 (10 hex digits) of the files a wheel is built from."""
    h = hashlib.sha256()
    for rel in SOURCE_PATHS:
        path = root / rel
        files = sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts) if path.is_dir() else [path]
        for f in files:
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:10]


def project_version(root: Path) -> str:
    """The version in ``root``'s pyproject.toml, without a local label."""
    m = re.search(r'(?m)^version\s*=\s*"([^"]+)"', (root / "pyproject.toml").read_text(encoding="utf-8"))
    if not m:
        raise StudentExportError(f"no `version = \"...\"` line in {root / 'pyproject.toml'}")
    return m.group(1).split("+")[0]


def strip_for_students(src: Path) -> None:
    """Remove from the source copy ``src`` everything a student must not get (see the module doc)."""
    for rel in TEACHER_PATHS:
        path = src / rel
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    project = src / "cnet_lib" / "book" / "project.py"
    text, n = re.subn(r'(?m)^REPO_URL = "[^"]*"$', 'REPO_URL = ""  # a class\'s copy of the library names no repository',
                      project.read_text(encoding="utf-8"))
    if n != 1:
        raise StudentExportError(f"no `REPO_URL = \"...\"` line in {project}: the student wheel must not name the repository")
    project.write_text(text, encoding="utf-8")
    (src / "README.md").write_text(STUDENT_README, encoding="utf-8")


def copy_sources(root: Path, src: Path) -> None:
    """Copy :data:`SOURCE_PATHS` of ``root`` into the new folder ``src`` (no byte-compiled files): what a wheel is
    built from."""
    src.mkdir()
    for rel in SOURCE_PATHS:
        if (root / rel).is_dir():
            shutil.copytree(root / rel, src / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(root / rel, src / rel)


def build_wheel(root: Path, version: str, outdir: Path, student: bool = False) -> Path:
    """Build the wheel of ``root``'s library with version ``version`` into ``outdir`` (from a copy of the sources;
    ``student``: without the teacher's files, :func:`strip_for_students`); returns its path."""
    with tempfile.TemporaryDirectory(prefix="cnet-student-wheel-") as tmp:
        src = Path(tmp) / "src"
        copy_sources(root, src)
        if student:
            strip_for_students(src)
        pyproject = (src / "pyproject.toml").read_text(encoding="utf-8")
        pyproject, n = re.subn(r'(?m)^version\s*=\s*"[^"]*"', f'version = "{version}"', pyproject, count=1)
        if n != 1:
            raise StudentExportError(f"no `version = \"...\"` line in {root / 'pyproject.toml'}")
        (src / "pyproject.toml").write_text(pyproject, encoding="utf-8")
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(Path(tmp) / "dist"), str(src)]
        if importlib.util.find_spec("setuptools") is not None:  # build with it: nothing to download
            cmd.insert(5, "--no-build-isolation")
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        wheels = sorted((Path(tmp) / "dist").glob("*.whl"))
        if out.returncode != 0 or len(wheels) != 1:
            raise StudentExportError(f"building the wheel failed:\n{out.stdout}\n{out.stderr}")
        outdir.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(wheels[0], outdir / wheels[0].name))


# ---------------------------------------------------------------------- the module's own part (its docstring above)

_LINK_RE = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)[^)]*\)")
_BARE_URL_RE = re.compile(r"https?://[^\s)>\]]+")


@dataclass(frozen=True)
class StudentInstall:
    """How a student copy installs the library: the pip ``requirement`` of its install cell, the
    ``build`` that :func:`cnet_lib.book.notebook.installed_build` reports once it is installed, and
    the ``wheel`` file to host (``--wheel-url`` only)."""

    requirement: str
    build: str
    source: str  # for people: where the library comes from
    wheel: Optional[Path] = None


# ----------------------------------------------------------------------------- git
def _git(root: Path, *args: str) -> str:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=60)
    except FileNotFoundError as err:
        raise StudentExportError("git is not installed; install it, or use --wheel-url (it needs no git)") from err
    if out.returncode != 0:
        raise StudentExportError(f"`git {' '.join(args)}` failed in {root}: {out.stderr.strip()}")
    return out.stdout.rstrip("\n")


def _commit(root: Path) -> Optional[str]:
    """The commit checked out in ``root``, or None outside a git clone."""
    try:
        return _git(root, "rev-parse", "HEAD").strip()
    except StudentExportError:
        return None


def _changed_sources(root: Path) -> list[str]:
    """Files of :data:`SOURCE_PATHS` that differ from the checked-out commit (untracked included)."""
    status = _git(root, "status", "--porcelain", "--untracked-files=all", "--", *SOURCE_PATHS)
    return [line[3:] for line in status.splitlines() if line.strip() and "__pycache__" not in line]


# ----------------------------------------------------------------------------- the library the copies install
def _local_label(root: Path) -> str:
    """``g<commit>`` for an unmodified commit, else ``src<hash of the sources>``."""
    commit = _commit(root)
    if commit is not None and not _changed_sources(root):
        return f"g{commit[:10]}"
    return f"src{source_hash(root)}"


def wheel_install(root: Path, outdir: Path, wheel_url: str) -> StudentInstall:
    """Build the library of ``root`` into ``outdir`` (a folder of its own, never the copies' own: the students get
    the notebooks, the wheel goes to the URL) and install it from ``wheel_url`` (the URL of the folder where you
    will put the wheel; ``file://`` works for a shared drive)."""
    parsed = urllib.parse.urlparse(wheel_url)
    if parsed.scheme not in ("https", "http", "file"):
        raise StudentExportError(
            f"--wheel-url must be an https:// (or file://) URL of the folder that will serve the wheel, got {wheel_url!r}")
    if parsed.path.endswith(".whl"):
        raise StudentExportError("--wheel-url is the URL of the folder that will serve the wheel (the file name is added)")
    version = f"{project_version(root)}+{_local_label(root)}"
    wheel = build_wheel(root, version, outdir, student=True)
    url = wheel_url.rstrip("/") + "/" + urllib.parse.quote(wheel.name)
    return StudentInstall(requirement=f"{PACKAGE_NAME}[{BOOK_EXTRA}] @ {url}", build=version, source=f"the wheel at {url}", wheel=wheel)


def repository_install(root: Path, url: str = REPO_URL) -> StudentInstall:
    """Install the library from ``url`` at the commit checked out in ``root`` (which must be clean)."""
    commit = _commit(root)
    if commit is None:
        raise StudentExportError(f"{root} is not a git clone: use --wheel-url, or run the export in a clone of {url}")
    changed = _changed_sources(root)
    if changed:
        raise StudentExportError(
            f"these files differ from commit {commit[:10]}, which the students would install: {', '.join(changed[:8])}"
            f"{' …' if len(changed) > 8 else ''}. Commit and push them first, or use --wheel-url (it ships "
            "exactly your working tree).")
    return StudentInstall(requirement=install_requirement(url, commit), build=f"{project_version(root)}@{commit}",
                          source=f"{url} at commit {commit}")


def is_pushed(root: Path, commit: str) -> bool:
    """Whether a remote-tracking branch (as last fetched) contains ``commit``."""
    try:
        return bool(_git(root, "branch", "-r", "--contains", commit).strip())
    except StudentExportError:
        return False


# ----------------------------------------------------------------------------- one notebook
def _drop_links(text: str, slug: str) -> str:
    """``text`` without the Colab badge and without links to the book's repository or its Colab
    pages (a link's text stays, an image or bare URL goes)."""
    def leads_to_book(url: str) -> bool:
        return slug.lower() in url.lower()

    def link(m: re.Match) -> str:
        if not leads_to_book(m.group(3)):
            return m.group(0)
        return "" if m.group(1) else m.group(2)

    text = BADGE_RE.sub("", text)
    text = _LINK_RE.sub(link, text)
    return _BARE_URL_RE.sub(lambda m: "" if leads_to_book(m.group(0)) else m.group(0), text)


_BOOK_ONLY = "<!-- not in a student copy -->"


def _without_book_only_items(text: str) -> str:
    """``text`` without the list items whose first line carries :data:`_BOOK_ONLY` (the item's lines up to the
    next item, blank line or unindented line)."""
    out, dropping = [], False
    for line in text.split("\n"):
        if _BOOK_ONLY in line:
            dropping = True
            continue
        if dropping and line.startswith("  ") and line.strip():
            continue
        dropping = False
        out.append(line)
    return "\n".join(out)


_NO_BADGE = {COLAB_WAY_IN: COPY_WAY_IN,
             "open this chapter with the badge above": "open this notebook in Colab (File → Upload notebook)"}
"""What the book says of its Colab badge, and what a copy, which has none, says instead
(``tests/test_student.py`` fails a copy that still names the badge)."""


def copy_prose(text: str) -> str:
    """A chapter's prose as a student copy says it: a list item that holds for the book only (its first line
    carries ``<!-- not in a student copy -->``) goes, the checks are named as the copy calls them
    (``grader.check("rk_step", hint=2)``), and the chapter is opened without a badge."""
    text = rewrite_check_calls(_without_book_only_items(text))
    for book, copy_ in _NO_BADGE.items():
        text = text.replace(book, copy_)
    return text


_BOOK_INSTALL = re.compile(r"\(`pip install -e \.`\s+in\s+a\s+clone\s+of\s+the\s+repository\)")
"""The book's words for an install outside Colab, which a copy says with its own install line: a clone of the
repository holds the solutions."""


def _install_words(text: str, install: Optional[StudentInstall]) -> str:
    """``text`` with the book's install outside Colab replaced by the copy's own line (the wheel's)."""
    if install is None:
        return _BOOK_INSTALL.sub("(install it as your teacher says)", text)
    return _BOOK_INSTALL.sub(f'(`pip install "{install.requirement}"`, the library this copy was made for)', text)


def _header(text: str, install: StudentInstall) -> str:
    """The first markdown cell with a line saying which build of the library the copy was made for."""
    lines = text.split("\n")
    title = next((i for i, ln in enumerate(lines) if ln.startswith("# ")), None)
    note = (f"*Student copy, made for cnet-lib {install.build}. Work in the cells of each exercise; the check below "
            "each one tells you how you are doing, with a hint when it fails.*")
    at = 0 if title is None else title + 1
    lines[at:at] = ["", note]
    return "\n".join(lines)


def student_version(nb: dict, install: Optional[StudentInstall] = None, url: str = REPO_URL, chapter: str = "",
                    titles: Optional[Mapping[str, str]] = None, cites: Optional[Mapping[str, str]] = None) -> dict:
    """A copy of ``nb`` for students: no solution cells, no outputs, no badge, no links to the book's repository,
    MyST roles as text (``titles``: page titles, ``cites``: citation labels); with ``chapter``, the exercise
    headers, the grader and the hand-in section (:func:`cnet_lib.book.student_copies.student_cells`); with
    ``install``, its install cell and setup cell pinned to that build."""
    out = copy.deepcopy(nb)
    out["cells"] = [c for c in out["cells"] if SOLUTION_TAG not in cell_tags(c)]
    slug = repo_slug(url)
    setup_index = None
    for i, cell in enumerate(out["cells"]):
        text = cell_source(cell)
        if cell.get("cell_type") == "markdown":
            text = _install_words(copy_prose(roles_to_text(_drop_links(text, slug), titles or {}, cites or {})), install)
            text = _header(text, install) if i == 0 and install is not None else text
            set_source(cell, re.sub(r"\n{3,}", "\n\n", text).strip("\n"))
        elif install is not None and "google.colab" in text and "%pip install" in text:
            set_source(cell, colab_cell_source(requirement=install.requirement, what="the library this copy was made for"))
        elif text.strip() == SETUP_CELL_SOURCE.strip():
            setup_index = i
            if install is not None:
                set_source(cell, SETUP_CELL_SOURCE.replace("setup()", f'setup(expected_build="{install.build}")'))
    if chapter:
        out["cells"] = student_cells(out["cells"], chapter, setup_index if setup_index is not None else 0)
    meta = out.setdefault("metadata", {})
    if install is not None or chapter:
        meta["cnet_student_copy"] = {"chapter": chapter, **({"build": install.build, "source": install.source}
                                                            if install is not None else {})}
    return strip_outputs(out)


def chapters_with_exercises(root: Optional[Path] = None) -> list[str]:
    """The chapters (notebook stems of ``_toc.yml``) that hold exercises, in book order."""
    return [p.stem for p in toc_notebooks(root) if exercise_pairs(read_notebook(p))]


# ----------------------------------------------------------------------------- all notebooks
def export(outdir: Path, root: Optional[Path] = None, install: Optional[StudentInstall] = None,
           chapters: Optional[Sequence[str]] = None) -> list[Path]:
    """Write the student copy of every notebook in ``_toc.yml`` (or of ``chapters``) into ``outdir``."""
    outdir, root = Path(outdir), find_root(root)
    outdir.mkdir(parents=True, exist_ok=True)
    titles = page_titles(root, toc_files(root))
    cites = bib_labels(root / "book" / "references.bib")
    notebooks = toc_notebooks(root)
    unknown = sorted(set(chapters or ()) - {p.stem for p in notebooks})
    if unknown:
        raise StudentExportError(f"no chapter {', '.join(unknown)} in _toc.yml; the chapters are "
                                 f"{', '.join(p.stem for p in notebooks)}")
    written = []
    for src in notebooks:
        if chapters is not None and src.stem not in chapters:
            continue
        dst = outdir / src.name
        write_notebook(student_version(read_notebook(src), install, chapter=src.stem, titles=titles, cites=cites), dst)
        written.append(dst)
    return written
