"""A live app's answer in two steps: one shown at once, a better one computed in the background.

A render function of :func:`cnet_lib.draw.widgets.live_app` may return a :class:`Progressive`: its
``first`` object (a figure from a small sample, with its ± said) is displayed at once, and its
``refine(stale)`` runs on one background thread; when it returns an object and no control has moved
meanwhile, that object replaces the first one in the app's output (one assignment of the output widget's ``outputs``, which a
background thread may make).  ``stale()``
says whether the controls moved since: a refinement checks it between batches and gives up (returns
``None``) when they did.  One thread serves every app of a session, one refinement at a time, so that
a refinement never takes the cores from the next first answer for long.

Without a kernel (the static book, tests, benchmarks) nothing runs in the background: a caller that
wants the refined object calls :meth:`Progressive.refine` itself.
"""
from __future__ import annotations

import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Optional

__all__ = ["Progressive", "Refiner"]


@dataclass
class Progressive:
    """``first``: what to show at once; ``refine(stale) -> object or None``: the better answer."""

    first: Any
    refine: Callable[[Callable[[], bool]], Any]


class Refiner:
    """The interactions of one app: a counter of them and the background refinement of the latest."""

    _pool: Optional[ThreadPoolExecutor] = None

    def __init__(self, output=None):
        self.generation = 0
        self.output = output  # the app's ipywidgets Output (None: nothing is refined in the background)

    @classmethod
    def pool(cls) -> ThreadPoolExecutor:
        if cls._pool is None:
            cls._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cnet-live-app")
        return cls._pool

    def interaction(self) -> Callable[[], bool]:
        """Count a new interaction; returns its ``stale()``: whether a later one has come."""
        self.generation += 1
        mine = self.generation
        return lambda: self.generation != mine

    def show(self, result: Any, display: Callable[[Any], None]) -> None:
        """Display ``result`` (a :class:`Progressive`'s first object at once, and its refinement later)."""
        if not isinstance(result, Progressive):
            if result is not None:
                display(result)
            return
        stale = self.interaction()
        display(result.first)
        if self.output is not None:
            self.pool().submit(self._finish, result, stale)

    def _finish(self, result: Progressive, stale: Callable[[], bool]) -> None:
        try:
            final = result.refine(stale)
        except Exception:  # shown in the app, never lost in a thread
            final = "the refinement failed:\n" + traceback.format_exc(limit=3)
        if final is not None and not stale():
            # one assignment of the widget's outputs replaces the first answer (clear_output and append_display_data
            # from this thread went through the output's capture of the thread's parent message, and IPython's
            # formatter, see display_data: the refined answer never appeared in JupyterLab 4.6)
            self.output.outputs = (display_data(final),)


def display_data(obj: Any) -> dict:
    """``obj`` as one ``display_data`` output: its own bundle (``_repr_mimebundle_``: a plotly figure through the
    session's renderer), else as IPython formats it.  (IPython's formatter hands an object with
    ``_ipython_display_``, as a plotly figure has, to that method, which displays it wherever the thread's messages
    go, and returns nothing: the refined answer never appeared.)"""
    bundle = getattr(obj, "_repr_mimebundle_", None)
    if callable(bundle):
        out = bundle()
        data, metadata = out if isinstance(out, tuple) else (out, {})
    else:
        from IPython.core.interactiveshell import InteractiveShell

        data, metadata = InteractiveShell.instance().display_formatter.format(obj)
    return {"output_type": "display_data", "data": dict(data), "metadata": dict(metadata or {})}
