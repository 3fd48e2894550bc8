"""Progress bars in notebooks: a live bar in Jupyter and Colab, one line of text in the static book.

:func:`cnet_lib.book.setup` installs :func:`notebook_bar` as the factory of
:func:`cnet_lib.runtime.progress.progress_bar`, so the studies never touch display code.
"""
from __future__ import annotations

import html

from ..draw.widget_view import bundle_for_ipython, widget_bundle

__all__ = ["BarView", "notebook_bar"]


class BarView:
    """A notebook progress bar that also carries a one-line ``text/html`` view.

    The static book renders ``text/html`` in preference to widget views (see ``_config.yml``),
    so a finished cell shows this line there instead of an empty widget hole.
    """

    def __init__(self, container, text: str):
        self.container, self.text = container, text

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The bar's widget view (ipywidgets 7 or 8, display metadata kept) plus the text line."""
        data, metadata = widget_bundle(self.container, include, exclude)
        data["text/html"] = f"<p><em>{html.escape(self.text)}</em></p>"
        return bundle_for_ipython(data, metadata)


def notebook_bar(total=None, desc: str = "", leave: bool = False, disable: bool = False, **kw):
    """``tqdm.auto``'s bar; in a notebook kernel, a widget bar displayed with a static text line."""
    from tqdm.auto import tqdm

    try:
        from tqdm.notebook import tqdm as notebook_tqdm
    except ImportError:  # pragma: no cover - tqdm always ships it
        notebook_tqdm = None
    if disable or notebook_tqdm is None or not (isinstance(tqdm, type) and issubclass(tqdm, notebook_tqdm)):
        return tqdm(total=total, desc=desc, leave=leave, disable=disable, **kw)
    from IPython.display import display

    bar = tqdm(total=total, desc=desc, leave=leave, display=False, **kw)
    display(BarView(bar.container, f"{desc}: {total} steps (a live progress bar in Jupyter and Colab)"))
    return bar
