"""Write the student copies of the book's notebooks, fit to hand out unchanged
(the command line is :mod:`cnet_lib.cli.student`):

    python -m cnet_lib student OUTDIR --wheel-url URL      # students install the wheel written to OUTDIR
    python -m cnet_lib student OUTDIR --from-repository    # students install the repository at this commit

Run it inside a clone of the repository (or pass ``--root``).  For every notebook listed in
``_toc.yml`` the copy

* has no solution cells (tag ``solution``), no outputs, execution counts or widget state;
  exercise stubs (tag ``exercise``) and the check cells stay;
* has no path to the solutions: the "Open in Colab" badge (which opens the teacher notebook,
  solutions included) and every link to the book's repository or its Colab pages are removed;
  with ``--wheel-url`` not even the install cell names the repository;
* installs, on Colab, exactly the library the copies were made from: with ``--wheel-url`` the
  wheel of this working tree (written to ``OUTDIR``, version ``<version>+g<commit>`` or
  ``+src<hash of the sources>``), which you put where ``URL`` serves it; with
  ``--from-repository`` the current commit, which must be clean and pushed;
* tells the student, in its setup cell, when another build of the library is installed.
"""
from __future__ import annotations

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
from typing import Optional

from .notebook_cells import (BADGE_RE, SOLUTION_TAG, cell_source, cell_tags, read_notebook, set_source, strip_outputs,
                             write_notebook)
from .project import PACKAGE_NAME, REPO_URL, SETUP_CELL_SOURCE, colab_cell_source, install_requirement, repo_slug
from .toc import toc_notebooks

__all__ = ["StudentExportError", "StudentInstall", "build_wheel", "project_version", "wheel_install",
           "repository_install", "is_pushed", "student_version", "export"]

# the files a student's library is built from (relative to the repository root)
SOURCE_PATHS = ("pyproject.toml", "README.md", "cnet_lib")
_LINK_RE = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)[^)]*\)")
_BARE_URL_RE = re.compile(r"https?://[^\s)>\]]+")


class StudentExportError(Exception):
    """The copies cannot be written as asked; the message says what to do."""


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
def _source_hash(root: Path) -> str:
    """SHA-256 (10 hex digits) of the files a wheel is built from."""
    h = hashlib.sha256()
    for rel in SOURCE_PATHS:
        path = root / rel
        files = sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts) if path.is_dir() else [path]
        for f in files:
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:10]


def _local_label(root: Path) -> str:
    """``g<commit>`` for an unmodified commit, else ``src<hash of the sources>``."""
    commit = _commit(root)
    if commit is not None and not _changed_sources(root):
        return f"g{commit[:10]}"
    return f"src{_source_hash(root)}"


def build_wheel(root: Path, version: str, outdir: Path) -> Path:
    """Build the wheel of ``root``'s library with version ``version`` into ``outdir`` (from a copy of
    the sources, so the repository gets no build folders); returns its path."""
    with tempfile.TemporaryDirectory(prefix="cnet-student-wheel-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        for rel in SOURCE_PATHS:
            if (root / rel).is_dir():
                shutil.copytree(root / rel, src / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(root / rel, src / rel)
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


def project_version(root: Path) -> str:
    """The version in ``root``'s pyproject.toml, without a local label."""
    m = re.search(r'(?m)^version\s*=\s*"([^"]+)"', (root / "pyproject.toml").read_text(encoding="utf-8"))
    if not m:
        raise StudentExportError(f"no `version = \"...\"` line in {root / 'pyproject.toml'}")
    return m.group(1).split("+")[0]


def wheel_install(root: Path, outdir: Path, wheel_url: str) -> StudentInstall:
    """Build the library of ``root`` into ``outdir`` and install it from ``wheel_url`` (the URL of the
    folder where you will put the wheel; ``file://`` works for a shared drive)."""
    parsed = urllib.parse.urlparse(wheel_url)
    if parsed.scheme not in ("https", "http", "file"):
        raise StudentExportError(
            f"--wheel-url must be an https:// (or file://) URL of the folder that will serve the wheel, got {wheel_url!r}")
    if parsed.path.endswith(".whl"):
        raise StudentExportError("--wheel-url is the URL of the folder that will serve the wheel (the file name is added)")
    version = f"{project_version(root)}+{_local_label(root)}"
    wheel = build_wheel(root, version, outdir)
    url = wheel_url.rstrip("/") + "/" + urllib.parse.quote(wheel.name)
    return StudentInstall(requirement=f"{PACKAGE_NAME} @ {url}", build=version, source=f"the wheel at {url}", wheel=wheel)


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


def _header(text: str, install: StudentInstall) -> str:
    """The first markdown cell with a line saying which build of the library the copy was made for."""
    lines = text.split("\n")
    title = next((i for i, ln in enumerate(lines) if ln.startswith("# ")), None)
    note = (f"*Student copy, made for cnet-lib {install.build}. Work in the cells of each exercise; the check below "
            "each one tells you how you are doing, with a hint when it fails.*")
    at = 0 if title is None else title + 1
    lines[at:at] = ["", note]
    return "\n".join(lines)


def student_version(nb: dict, install: Optional[StudentInstall] = None, url: str = REPO_URL) -> dict:
    """A copy of ``nb`` for students: no solution cells, no outputs, no badge, no links to the
    book's repository; with ``install``, its install cell and setup cell pinned to that build."""
    out = copy.deepcopy(nb)
    out["cells"] = [c for c in out["cells"] if SOLUTION_TAG not in cell_tags(c)]
    slug = repo_slug(url)
    for i, cell in enumerate(out["cells"]):
        text = cell_source(cell)
        if cell.get("cell_type") == "markdown":
            text = _drop_links(text, slug)
            text = _header(text, install) if i == 0 and install is not None else text
            set_source(cell, re.sub(r"\n{3,}", "\n\n", text).strip("\n"))
        elif install is not None and "google.colab" in text and "%pip install" in text:
            set_source(cell, colab_cell_source(requirement=install.requirement, what="the library this copy was made for"))
        elif install is not None and text.strip() == SETUP_CELL_SOURCE.strip():
            set_source(cell, SETUP_CELL_SOURCE.replace("setup()", f'setup(expected_build="{install.build}")'))
    if install is not None:
        out.setdefault("metadata", {})["cnet_student_copy"] = {"build": install.build, "source": install.source}
    return strip_outputs(out)


# ----------------------------------------------------------------------------- all notebooks
def export(outdir: Path, root: Optional[Path] = None, install: Optional[StudentInstall] = None) -> list[Path]:
    """Write the student copy of every notebook in ``_toc.yml`` into ``outdir``."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for src in toc_notebooks(root):
        dst = outdir / src.name
        write_notebook(student_version(read_notebook(src), install), dst)
        written.append(dst)
    return written
