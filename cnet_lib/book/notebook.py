"""The setup cell of every chapter: ``from cnet_lib.book import setup; ctx = setup()``.

:func:`setup` reads the session's settings from the environment, once
(:meth:`cnet_lib.runtime.settings.Settings.from_environment`: ``ctx.settings``, with ``ctx.preset``
and ``ctx.device``), seeds the random generators, chooses how plotly figures are displayed, and
prints the run-size preset (which image models it uses, and how to switch), the device and the torch
version.  Importing this module changes
nothing; only calling :func:`setup` does.

Figures become the book's HTML (:mod:`cnet_lib.draw.html_figures`: plotly.js once per page, each
figure a ``<div>``), so the built pages work offline, and so do Jupyter, JupyterLab and VS Code
(which run the scripts of the outputs of a notebook executed in the session).  On Google Colab
plotly's own ``colab`` renderer is kept.

Also here: faults a reader can meet, shown as the one sentence that says what to do (:func:`show_faults_briefly`),
and progress bars in notebooks (:func:`notebook_bar`).
"""
from __future__ import annotations

import html
import random
import sys
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import torch

from ..images.data.cifar_files import CifarFileError
from ..images.data.datasets import DatasetNotFoundError
from ..draw.html_figures import BOOK_RENDERER, book_renderer, plotlyjs_html
from ..draw.widgets import bundle_for_ipython, widget_bundle
from ..runtime.checkpoint import CheckpointError, CheckpointSaveError
from ..runtime.device import OutOfMemory
from ..runtime.files import FolderBusy, FolderNotWritable, LockFileError
from ..runtime.progress import set_bar_factory
from ..runtime.settings import Settings
from .project import PACKAGE_NAME, PUBLISHED_PRESET

__all__ = ["NotebookContext", "PRESET_WORDS", "setup", "in_colab", "installed_build", "preset_lines", "glue",
           "glue_all", "FAULTS", "fault_lines", "show_faults_briefly", "BarView", "notebook_bar", "bars_summary"]


# Progress bars in notebooks: a live bar in Jupyter and Colab, one line of text in the static book.
#
# :func:`cnet_lib.book.setup` installs :func:`notebook_bar` as the factory of
# :func:`cnet_lib.runtime.progress.progress_bar`, so the studies never touch display code.
#
# A cell that runs many bars (six trainings, say) would leave six lines of text in the static book; so
# the first bar of a cell carries one line that sums up every bar of that cell (updated in place with
# IPython's display ids as more bars start), and the others carry none.

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


# ----------------------------------------------------------------------------------------------------

# Faults a reader can meet in a chapter, shown as the one sentence that says what to do.
#
# The library's fault errors carry a message that names what went wrong and what to do: running out
# of memory (with the batch size to try), a damaged data file, a damaged, foreign or mismatched
# checkpoint or shipped file, a save that failed, a folder in use by another process or one that
# cannot be written, data that cannot be had.  In a notebook a traceback of library frames would
# bury that sentence.  :func:`show_faults_briefly` (called by ``setup()``) makes IPython show such an
# error as ``ErrorName: the sentence`` alone; the cell still fails, so "Run all" stops there.  Every
# other error keeps its full traceback.

FAULTS = (OutOfMemory, CifarFileError, CheckpointError, CheckpointSaveError, FolderNotWritable, FolderBusy,
          LockFileError, DatasetNotFoundError)
"""The errors whose message is the whole story (:class:`CheckpointError` includes the shipped files')."""


def fault_lines(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> list[str]:
    """IPython's custom exception handler: shows (and returns) the error's name and message as the
    whole traceback.  Should showing fail, IPython drops this handler and shows the full traceback."""
    lines = [f"{etype.__name__}: {value}"]
    shell._showtraceback(etype, value, lines)  # how IPython and ipykernel show a structured traceback
    return lines


def show_faults_briefly(shell: Any) -> None:
    """Make the IPython ``shell`` show the errors of :data:`FAULTS` as their one sentence."""
    shell.set_custom_exc(FAULTS, fault_lines)


# ---------------------------------------------------------------------- the module's own part (its docstring above)

@dataclass(frozen=True)
class NotebookContext:
    """What :func:`setup` chose: ``ctx.settings`` (the session's :class:`cnet_lib.runtime.settings.Settings`,
    to pass to the studies), ``ctx.preset`` and ``ctx.device`` (its preset and device), ``ctx.seed``, ..."""

    settings: Settings
    seed: int
    torch_version: str
    in_colab: bool
    plotly_renderer: str

    @property
    def preset(self) -> str:
        """The session's run-size preset (``smoke``, ``cpu``, ``gpu``, ``paper``)."""
        return self.settings.preset

    @property
    def device(self) -> torch.device:
        """The session's device."""
        return self.settings.device

    def __str__(self) -> str:
        return f"preset={self.preset} device={self.device} torch={self.torch_version}"


def in_colab() -> bool:
    """True inside a Google Colab runtime."""
    return "google.colab" in sys.modules


def _in_ipython() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def _enable_colab_widgets() -> None:
    """Colab renders ipywidgets >= 8 only through its custom widget manager."""
    try:
        import ipywidgets
        from google.colab import output

        if int(ipywidgets.__version__.split(".")[0]) >= 8:
            output.enable_custom_widget_manager()
    except Exception:  # not fatal: the static figures still work
        pass


def _configure_plotly(renderer: Optional[str]) -> str:
    """Make ``renderer`` plotly's default (``"colab"`` on Colab, else the book's); returns it.

    The book's renderer is registered only when it is used, so Colab never depends on it.
    """
    import plotly.io as pio

    if renderer is None:
        renderer = "colab" if in_colab() else BOOK_RENDERER
    if BOOK_RENDERER in renderer.split("+") and BOOK_RENDERER not in pio.renderers:
        pio.renderers[BOOK_RENDERER] = book_renderer()
    pio.renderers.default = renderer
    if BOOK_RENDERER in renderer.split("+") and _in_ipython():
        from IPython.display import HTML, display

        display(HTML(plotlyjs_html()))
    return renderer


def _seed_everything(seed: int) -> None:
    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def installed_build() -> str:
    """The installed cnet-lib: its version, plus ``@<commit>`` when pip installed it from a git commit."""
    import json
    from importlib import metadata

    try:
        dist = metadata.distribution(PACKAGE_NAME)
    except metadata.PackageNotFoundError:
        return "not installed"
    try:
        info = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        info = {}
    commit = (info.get("vcs_info") or {}).get("commit_id")
    return f"{dist.version}@{commit}" if commit else dist.version


def _version_warning(expected: str, got: str) -> str:
    return (
        f"WARNING: this copy of the chapter was made for cnet-lib {expected}, but {got} is installed: its "
        "checks may not be the ones your teacher prepared.\n"
        "  In Google Colab: Runtime > Disconnect and delete runtime, then run the cells again from the first one.\n"
        "  On your own machine: install the library the way the first cell of this notebook does (its %pip line)."
    )


def setup(seed: int = 0, renderer: Optional[str] = None, quiet: bool = False,
          expected_build: Optional[str] = None, environ: Optional[Mapping[str, str]] = None) -> NotebookContext:
    """Prepare a chapter: the session's settings, seeds, plotly display, and print the preset and device;
    in IPython, the library's faults show as their one sentence (:mod:`cnet_lib.book.notebook`).

    The settings are read once, from the environment (or ``environ``):
    :meth:`cnet_lib.runtime.settings.Settings.from_environment` (``CNET_PRESET``, ``CNET_DEVICE``,
    ``CNET_DATA_DIR``, ...), and returned as ``ctx.settings``.  ``renderer`` overrides the plotly renderer
    string (default: ``"cnet_book"``, or ``"colab"`` on Colab; a renderer without ``text/html`` output
    makes the book build fail).  ``expected_build`` (written into student copies, see
    :mod:`cnet_lib.book.student_copies`) is the :func:`installed_build` the copy was made for; a
    different one prints a warning that says what to do.
    """
    settings = Settings.from_environment(environ)
    _seed_everything(seed)
    used = _configure_plotly(renderer)
    if _in_ipython():
        from IPython import get_ipython

        set_bar_factory(notebook_bar)  # progress bars of the studies: live in the notebook, a line in the book
        show_faults_briefly(get_ipython())  # a fault (out of memory, damaged file, ...) shows as its one sentence
    if in_colab():
        _enable_colab_widgets()
    ctx = NotebookContext(settings=settings, seed=seed, torch_version=torch.__version__, in_colab=in_colab(),
                          plotly_renderer=used)
    if not quiet:
        _print_context(ctx)
    if expected_build is not None and installed_build() != expected_build:
        print(_version_warning(expected_build, installed_build()))
    return ctx


PRESET_WORDS = {
    "cpu": "smaller runs than the published book's, sized for a CPU",
    "paper": "the seed paper's schedules: hours on a GPU",
}
"""What a preset other than ``smoke`` and the published one means, in the setup cell's words (the same for every
chapter: what a preset means for the image models is said where a chapter loads them)."""


def preset_lines(preset: str, has_cuda: bool, colab: bool) -> list[str]:
    """What the setup cell says about the session's preset, the same in every chapter and only what every chapter
    uses: its name and sizes in a few words and, for any preset but the published one, how to switch to it
    (``%env CNET_PRESET=...``, then the cell again).  Which image models a preset uses, shipped or trained, and how
    long training them takes, is said where a chapter loads them (``images.trained_runs``), not in the chapters
    that use none."""
    if preset == "smoke":
        return ["preset: smoke (tiny runs that check that the chapter works: their numbers mean nothing)",
                f"for the book's numbers: %env CNET_PRESET={PUBLISHED_PRESET}, then run this cell again"]
    if preset == PUBLISHED_PRESET:
        # the published preset is named for the GPU its models were trained on; it runs on a CPU too: said so, lest
        # "preset: gpu" and "device: the CPU" read as a contradiction
        where = "" if has_cuda else ", which runs on a CPU too"
        return [f"preset: {preset} (the published book's sizes{where})"]
    gpu = " (for training of your own: Runtime > Change runtime type > GPU)" if colab and not has_cuda else ""
    return [f"preset: {preset} ({PRESET_WORDS.get(preset, 'not the published book')})",
            f"for the published book's numbers: %env CNET_PRESET={PUBLISHED_PRESET}, then run this cell again{gpu}"]


def _print_context(ctx: NotebookContext) -> None:
    """The setup cell's lines: the preset, its sizes in a few words and how to change it; the device and torch."""
    device = ctx.device
    gpu = f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else ""
    print("\n".join(preset_lines(ctx.preset, torch.cuda.is_available(), ctx.in_colab)))
    print(f"device: {_device_words(device)}{gpu}{' in Google Colab' if ctx.in_colab else ''}, torch {torch.__version__}")


def _device_words(device: torch.device) -> str:
    """``the GPU (cuda:0)`` or ``the CPU``: the session's device as a reader names it."""
    return f"the GPU ({device})" if device.type == "cuda" else "the CPU"


def glue(name: str, text) -> str:
    """Keep ``text`` (a number already written as the prose says it: ``"82.3%"``, ``"−0.30 points"``) under ``name``
    for the chapter's prose, which quotes it as ``{glue:md}`name``` (myst-nb's glue: the page shows the number its
    cell computed, so prose and computation cannot drift apart).  Nothing is displayed; where myst-nb is not
    installed (a plain Jupyter or Colab) it only returns the text."""
    text = str(text)
    try:
        from IPython.display import Markdown
        from myst_nb import glue as _myst_glue
    except ImportError:
        return text
    _myst_glue(name, Markdown(text), display=False)
    return text


def glue_all(facts: Mapping[str, object]) -> dict:
    """:func:`glue` every ``{name: text}`` of ``facts`` (a study's numbers as its prose says them); returns them."""
    return {name: glue(name, text) for name, text in facts.items()}
