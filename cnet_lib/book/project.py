"""Where the book lives: the repository URL is kept here, and only here.

``_config.yml`` (``repository.url``), every chapter's Colab badge and every chapter's first
cell are derived from :data:`REPO_URL`; ``tests/test_book_frame.py`` checks that they agree,
and ``python -m cnet_lib notebook_tools fix book/*.ipynb`` rewrites them.

Also here: the book's table of contents, its root and the notebooks it lists in reading order
(:func:`toc_notebooks`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Optional

__all__ = ["REPO_URL", "BOOK_TITLE", "BRANCH", "BOOK_DIR", "PACKAGE_NAME", "PUBLISHED_PRESET", "repo_slug",
           "colab_url", "colab_badge", "colab_cell_source", "install_requirement", "BOOK_EXTRA", "SETUP_CELL_SOURCE",
           "find_root", "toc_files", "toc_notebooks"]


REPO_URL = "https://github.com/continuousnet-book/continuousnet-book"
BOOK_TITLE = "ContinuousNet: an interactive book"
BRANCH = "main"
BOOK_DIR = "book"  # the chapters' folder, relative to the repository root
PACKAGE_NAME = "cnet-lib"
PUBLISHED_PRESET = "gpu"
"""The preset the published book is built in (``.github/workflows/book.yml``; ``tests/test_book_frame.py`` checks
that they agree): the strongest evidence the package holds, the ``gpu`` preset's shipped models and studies (three
training seeds per method), read on the CPU runner that builds the book.  The chapter cards quote its build's times,
and the chapters' prose states its numbers (``tests/test_prose_numbers.py`` checks them)."""

COLAB_BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"

# The second code cell of every chapter.
SETUP_CELL_SOURCE = "from cnet_lib.book import setup\n\nctx = setup()"


def repo_slug(url: str = REPO_URL) -> str:
    """``owner/name`` of a GitHub URL."""
    prefix = "https://github.com/"
    if not url.startswith(prefix):
        raise ValueError(f"REPO_URL must be a https://github.com/<owner>/<name> URL, got {url!r}")
    slug = url[len(prefix):].strip("/")
    if slug.endswith(".git"):
        slug = slug[: -len(".git")]
    if slug.count("/") != 1:
        raise ValueError(f"REPO_URL must be a https://github.com/<owner>/<name> URL, got {url!r}")
    return slug


def colab_url(notebook: str, url: str = REPO_URL, branch: str = BRANCH) -> str:
    """The Colab link of a chapter, e.g. ``colab_url("how_to_use.ipynb")``.

    ``notebook`` is a file name inside :data:`BOOK_DIR` (or a path relative to the repository
    root that starts with it).
    """
    nb = notebook.replace("\\", "/").lstrip("./")
    if not nb.startswith(BOOK_DIR + "/"):
        nb = f"{BOOK_DIR}/{nb.rsplit('/', 1)[-1]}"
    if not nb.endswith(".ipynb"):
        nb += ".ipynb"
    return f"https://colab.research.google.com/github/{repo_slug(url)}/blob/{branch}/{nb}"


def colab_badge(notebook: str, url: str = REPO_URL, branch: str = BRANCH) -> str:
    """The markdown "Open in Colab" badge of a chapter."""
    return f"[![Open In Colab]({COLAB_BADGE_IMAGE})]({colab_url(notebook, url, branch)})"


BOOK_EXTRA = "book"
"""The extra a chapter installs the library with (``cnet-lib[book]``: plotly, ipywidgets, scipy, torchdiffeq,
nbformat besides the core's torch and numpy; ``pyproject.toml``)."""


def install_requirement(url: str = REPO_URL, ref: Optional[str] = None) -> str:
    """The pip requirement of the book's library with the book's extra from its repository, pinned to ``ref``
    (a commit, tag or branch) when given, else the default branch."""
    return f"{PACKAGE_NAME}[{BOOK_EXTRA}] @ git+{url}" + (f"@{ref}" if ref else "")


def colab_cell_source(url: str = REPO_URL, requirement: Optional[str] = None, what: str = "the book's library") -> str:
    """The canonical first code cell of every chapter (and, with ``requirement``, of a student copy).

    On Google Colab it installs ``requirement`` (default: :func:`install_requirement` of
    ``url``); anywhere else it does nothing.  The package's dependencies are lower bounds that
    Colab's preinstalled torch, numpy, plotly and ipywidgets satisfy, so none of them is
    reinstalled (torch is never pinned).
    """
    requirement = requirement or install_requirement(url)
    if '"' in requirement or "\n" in requirement:
        raise ValueError(f"a pip requirement cannot contain quotes or newlines, got {requirement!r}")
    return (
        f"# Runs on Google Colab only: install {what} (Colab's torch is kept as is).\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f'    %pip install -q "{requirement}"'
    )


# The book's table of contents: the repository root (the folder holding ``_toc.yml``) and the notebooks
# it lists, in reading order.  Reading ``_toc.yml`` needs PyYAML (installed with jupyter-book).

def find_root(start: Optional[Path] = None) -> Path:
    """The repository root: the nearest folder (upwards) holding ``_toc.yml``."""
    here = Path(start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "_toc.yml").is_file():
            return d
    raise FileNotFoundError(f"no _toc.yml in {here} or above; run from the repository or pass --root")


def _walk_toc(node) -> Iterator[str]:
    """Every ``root`` and ``file`` entry of a parsed ``_toc.yml``, depth first."""
    if isinstance(node, dict):
        for key in ("root", "file"):
            if isinstance(node.get(key), str):
                yield node[key]
        for key in ("parts", "chapters", "sections"):
            for child in node.get(key) or []:
                yield from _walk_toc(child)
    elif isinstance(node, list):
        for child in node:
            yield from _walk_toc(child)


def toc_files(root: Optional[Path] = None) -> list[str]:
    """Every ``file``/``root`` entry of ``_toc.yml`` (without suffix), in order."""
    import yaml

    root = find_root(root)
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return list(_walk_toc(toc))


def toc_notebooks(root: Optional[Path] = None) -> list[Path]:
    """The notebooks listed in ``_toc.yml``, in book order."""
    root = find_root(root)
    out = []
    for entry in toc_files(root):
        p = root / entry
        nb = p if p.suffix == ".ipynb" else p.with_suffix(".ipynb")
        if nb.is_file():
            out.append(nb)
    return out
