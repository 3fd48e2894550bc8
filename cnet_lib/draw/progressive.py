"""A live app's answers, shown in its output widget, and an answer in two steps: one shown at once, a better one
computed in the background.

:class:`Refiner` shows each answer of an app by assigning its output widget's ``outputs`` from the kernel
(:func:`display_data`: the figure's bundle from the session's plotly renderer), the only writer of them.  An answer
displayed into the widget instead (``with output: display(...)``) is captured by the front end, which sends the
outputs back to the kernel; when the kernel had meanwhile replaced them, the echo of that send put the old ones back
(JupyterLab 4.6, ipywidgets 8.1: a refinement that came within a second was undone by the first answer's echo).

A render function of :func:`cnet_lib.draw.widgets.live_app` may return a :class:`Progressive`: its
``first`` object (a figure from a small sample, with its ± said) is shown at once, and its
``refine(stale)`` runs on one background thread; when it returns an object and no control has moved
meanwhile, that object replaces the first one.  ``stale()`` says whether the controls moved since: a refinement
checks it between batches and gives up (returns ``None``) when they did; any later answer, refined or not, makes it
stale.  One thread serves every app of a session, one refinement at a time, so that a refinement never takes the
cores from the next first answer for long.

Without an output widget (tests, benchmarks) nothing runs in the background: a caller that wants the refined object
calls :meth:`Progressive.refine` itself.
"""
from __future__ import annotations

import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Optional

__all__ = ["Progressive", "Refiner", "display_data", "error_output"]


@dataclass
class Progressive:
    """``first``: what to show at once; ``refine(stale) -> object or None``: the better answer."""

    first: Any
    refine: Callable[[Callable[[], bool]], Any]


class Refiner:
    """The answers of one app: shown in its output widget, counted, and the latest one refined in the background."""

    _pool: Optional[ThreadPoolExecutor] = None

    def __init__(self, output=None):
        self.generation = 0
        self.output = output  # the app's ipywidgets Output (None: shown with the display function given to show)
        self._lock = threading.Lock()  # a refinement checks that it is still wanted and shows itself in one step

    @classmethod
    def pool(cls) -> ThreadPoolExecutor:
        if cls._pool is None:
            cls._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cnet-live-app")
        return cls._pool

    def interaction(self) -> Callable[[], bool]:
        """Count a new answer; returns its ``stale()``: whether a later one has come."""
        self.generation += 1
        mine = self.generation
        return lambda: self.generation != mine

    def _put(self, output: dict) -> None:
        self.output.outputs = (output,)

    def show(self, result: Any, display: Optional[Callable[[Any], None]] = None) -> None:
        """Show ``result`` (a :class:`Progressive`'s first object at once, and its refinement later) in place of the
        previous answer; without an output widget, hand it to ``display``."""
        first = result.first if isinstance(result, Progressive) else result
        if self.output is None:
            self.interaction()
            if display is not None and first is not None:
                display(first)
            return
        shown = display_data(first)
        with self._lock:
            stale = self.interaction()
            self._put(shown)
        if isinstance(result, Progressive):
            self.pool().submit(self._finish, result, stale)

    def show_error(self, err: BaseException) -> None:
        """Show ``err`` with its traceback in place of the answer (an answer that failed)."""
        shown = error_output(err)
        with self._lock:
            self.interaction()
            if self.output is not None:
                self._put(shown)

    def _finish(self, result: Progressive, stale: Callable[[], bool]) -> None:
        try:
            final = result.refine(stale)
            shown = None if final is None else display_data(final)
        except Exception as err:  # shown in the app, never lost in a thread
            shown = error_output(err)
        with self._lock:
            if shown is not None and not stale():
                self._put(shown)


def display_data(obj: Any) -> dict:
    """``obj`` as one ``display_data`` output: its own bundle (``_repr_mimebundle_``: a plotly figure through the
    session's renderer), else as IPython formats it.  (IPython's formatter hands an object with
    ``_ipython_display_``, as a plotly figure has, to that method, which displays it wherever the thread's messages
    go, and returns nothing.)"""
    bundle = getattr(obj, "_repr_mimebundle_", None)
    if callable(bundle):
        out = bundle()
        data, metadata = out if isinstance(out, tuple) else (out, {})
    else:
        from IPython.core.interactiveshell import InteractiveShell

        data, metadata = InteractiveShell.instance().display_formatter.format(obj)
    return {"output_type": "display_data", "data": dict(data), "metadata": dict(metadata or {})}


def error_output(err: BaseException) -> dict:
    """``err`` as one ``error`` output, its traceback as IPython shows one (coloured) when there is an IPython."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        shell = None
    if shell is not None:
        lines = shell.InteractiveTB.structured_traceback(type(err), err, err.__traceback__)
    else:
        lines = traceback.format_exception(type(err), err, err.__traceback__)
    return {"output_type": "error", "ename": type(err).__name__, "evalue": str(err), "traceback": list(lines)}
