"""Progress bars in notebooks: a live bar in Jupyter and Colab, one line of text in the static book.

:func:`cnet_lib.book.setup` installs :func:`notebook_bar` as the factory of
:func:`cnet_lib.runtime.progress.progress_bar`, so the studies never touch display code.

A cell that runs many bars (six trainings, say) would leave six lines of text in the static book; so
the first bar of a cell carries one line that sums up every bar of that cell (updated in place with
IPython's display ids as more bars start), and the others carry none.
"""
from __future__ import annotations

import html
from typing import Optional

from ..draw.widget_view import bundle_for_ipython, widget_bundle

__all__ = ["BarView", "notebook_bar", "bars_summary"]

LIVE = "live progress bars in Jupyter and Colab"


class BarView:
    """A notebook progress bar that also carries a one-line ``text/html`` view.

    The static book renders ``text/html`` in preference to widget views (see ``_config.yml``),
    so a finished cell shows this line there instead of an empty widget hole; a bar without a line of
    its own (``text=""``) shows an empty element.
    """

    def __init__(self, container, text: str):
        self.container, self.text = container, text

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The bar's widget view (ipywidgets 7 or 8, display metadata kept) plus the text line."""
        data, metadata = widget_bundle(self.container, include, exclude)
        data["text/html"] = f"<p><em>{html.escape(self.text)}</em></p>" if self.text else '<span class="cnet-bar"></span>'
        return bundle_for_ipython(data, metadata)


def bars_summary(bars: list) -> str:
    """One line for the bars ``[(desc, total), ...]`` of one cell: the bar itself for one, else how many,
    each distinct bar once with its count."""
    if len(bars) == 1:
        desc, total = bars[0]
        return f"{desc}: {total} steps (a live progress bar in Jupyter and Colab)"
    counts: dict = {}
    for bar in bars:
        counts[bar] = counts.get(bar, 0) + 1
    parts = [f"{desc}: {total} steps" + (f" (×{k})" if k > 1 else "") for (desc, total), k in counts.items()]
    return f"{len(bars)} {LIVE}: " + "; ".join(parts)


_CELL: dict = {"id": None, "handle": None, "view": None, "bars": []}
"""The bars of the cell that runs now: its first bar's view and display handle, and every (desc, total)."""


def _cell_id() -> Optional[int]:
    from IPython import get_ipython

    shell = get_ipython()
    return None if shell is None else shell.execution_count


def notebook_bar(total=None, desc: str = "", leave: bool = False, disable: bool = False, **kw):
    """``tqdm.auto``'s bar; in a notebook kernel, a widget bar displayed with a static text line (one line
    per cell for all its bars, :func:`bars_summary`)."""
    from tqdm.auto import tqdm

    try:
        from tqdm.notebook import tqdm as notebook_tqdm
    except ImportError:  # pragma: no cover - tqdm always ships it
        notebook_tqdm = None
    if disable or notebook_tqdm is None or not (isinstance(tqdm, type) and issubclass(tqdm, notebook_tqdm)):
        return tqdm(total=total, desc=desc, leave=leave, disable=disable, **kw)
    from IPython.display import display

    bar = tqdm(total=total, desc=desc, leave=leave, display=False, **kw)
    cell = _cell_id()
    if cell is not None and cell == _CELL["id"] and _CELL["handle"] is not None:
        _CELL["bars"].append((desc, total))
        _CELL["view"].text = bars_summary(_CELL["bars"])
        _CELL["handle"].update(_CELL["view"])
        display(BarView(bar.container, ""))
    else:
        view = BarView(bar.container, bars_summary([(desc, total)]))
        _CELL.update(id=cell, view=view, bars=[(desc, total)], handle=display(view, display_id=True))
    return bar
