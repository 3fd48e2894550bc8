"""The book's table of contents: the repository root (the folder holding ``_toc.yml``) and the notebooks
it lists, in reading order.  Reading ``_toc.yml`` needs PyYAML (installed with jupyter-book)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Optional

__all__ = ["find_root", "toc_files", "toc_notebooks"]


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
