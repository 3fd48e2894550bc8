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
  (:mod:`.student_cells`).

With ``--wheel-url`` the students' wheel carries no answer key, no teacher command and no repository URL
(:mod:`.student_wheel`); the teacher's answer key is written by the command line (:mod:`cnet_lib.cli.student`).
"""
from __future__ import annotations

import copy
import re
import subprocess
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from .exercise_cells import exercise_pairs
from .notebook_cells import (BADGE_RE, SOLUTION_TAG, cell_source, cell_tags, read_notebook, set_source, strip_outputs,
                             write_notebook)
from .project import BOOK_EXTRA, PACKAGE_NAME, REPO_URL, SETUP_CELL_SOURCE, colab_cell_source, install_requirement, repo_slug
from .chapter_cards import COLAB_WAY_IN, COPY_WAY_IN
from .student_cells import bib_labels, page_titles, rewrite_check_calls, roles_to_text, student_cells
from .student_wheel import SOURCE_PATHS, StudentExportError, build_wheel, project_version, source_hash
from .toc import find_root, toc_files, toc_notebooks

__all__ = ["StudentExportError", "StudentInstall", "build_wheel", "project_version", "wheel_install",
           "repository_install", "is_pushed", "student_version", "export", "SOURCE_PATHS", "chapters_with_exercises",
           "copy_prose"]

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
    headers, the grader and the hand-in section (:func:`cnet_lib.book.student_cells.student_cells`); with
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
