"""Progress bars for long work, without display code below the book layer.

Studies and training ask for a bar with :func:`progress_bar`; by default it is tqdm's plain text
bar.  In a notebook, :func:`cnet_lib.book.setup` installs a bar that Jupyter and Colab draw as a
widget and the static book as one line of text (:func:`set_bar_factory`), so that the display code
stays in the book layer.
"""
from __future__ import annotations

from typing import Callable, Optional

__all__ = ["duration", "progress_bar", "progress_write", "set_bar_factory"]

_FACTORY: Optional[Callable] = None


def set_bar_factory(factory: Optional[Callable]) -> None:
    """Make :func:`progress_bar` call ``factory(total=..., desc=..., leave=..., disable=...)``
    (``None``: tqdm's text bar again)."""
    global _FACTORY
    _FACTORY = factory


def progress_bar(total: Optional[int] = None, desc: str = "", leave: bool = False, disable: bool = False, **kw):
    """A tqdm-like bar (``update``, ``set_postfix``, ``close``): the installed factory's, else tqdm's."""
    if _FACTORY is not None:
        return _FACTORY(total=total, desc=desc, leave=leave, disable=disable, **kw)
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, leave=leave, disable=disable, **kw)


def progress_write(text: str) -> None:
    """Print a line without breaking a bar that is being drawn."""
    from tqdm import tqdm

    tqdm.write(text)


def duration(seconds: float) -> str:
    """A duration in words, as the book says how long work takes: ``"25 s"`` under 90 s, ``"1.5 min"``
    under 10 minutes, ``"12 min"`` from there."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds >= 600 else f"{seconds / 60:.1f} min"
