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

Also here: answers that come at once from a sample, with their sampling error said (:func:`quick_size`,
:class:`Estimate`).
"""
from __future__ import annotations

import math
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

import torch

from ..runtime.device import image_step_flops
from ..runtime.rich_text import find_row

__all__ = ["Progressive", "Refiner", "display_data", "error_output", "QUICK_FLOPS", "Estimate", "binomial_se",
           "follow_text", "forward_flops", "quick_size", "sweep_answer", "study_answer", "estimate_from"]


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


# Answers for the live apps that come at once, with their sampling error said.
#
# A live app's control moves; evaluating a trained model on 1,000 held-out images takes seconds on two CPU
# cores (RK4-classic at N_t = 8: 8.9 s with the shipped `cpu` models, the book's page Measurements, *Live apps*).  So an answer
# comes, in order of preference,
#
# 1. from what is already computed: the run's cached sweep (:func:`sweep_answer`: any scheme and N_t of its
#    grid, or a compression it evaluated) or the cached robustness study (:func:`study_answer`: any single
#    perturbation of its grid on a model's own graph), measured on all of their held-out images;
# 2. else from the first ``n`` of the app's images, ``n`` chosen so that the forward pass costs at most
#    :data:`QUICK_FLOPS` floating-point operations on the device (:func:`quick_size`: a design constant per
#    device type, so the count of images a first answer evaluates does not depend on how fast the machine
#    is), with its binomial standard error √(p(1 − p)/n);
#
# and the app then refines a sampled answer to all of its images in the background.  :class:`Estimate`
# carries the number, how many images stand behind it, its standard error and where it comes from.

QUICK_FLOPS = {"cpu": 3e9, "cuda": 5e12, "mps": 1e12}
"""Forward-pass floating-point operations a first answer may spend, per device type: on the CPU about
0.4 s at the 8 GFLOP/s that two idle cores reach on these narrow convolutions (the `cpu` models: 1,000
images at RK4-classic N_t = 4, 37 MFLOP each, in 4.6 s), leaving the rest of a second for the thumbnails
and the figure; on a GPU enough for every image of an app."""


def binomial_se(p: float, n: int) -> float:
    """The standard error √(p(1 − p)/n) of an accuracy ``p`` measured on ``n`` images (0 for n = 0)."""
    return math.sqrt(max(p * (1 - p), 0.0) / n) if n > 0 else float("nan")


@dataclass(frozen=True)
class Estimate:
    """An accuracy on ``n`` images with its standard error ``se`` and its ``source`` in words; ``draws``
    > 1 when it is the mean over several random draws of a perturbation (``spread``: their range)."""

    accuracy: float
    n: int
    se: float
    source: str
    draws: int = 1
    spread: Optional[tuple] = None

    @property
    def final(self) -> bool:
        """Whether nothing better will follow (cached, or every image of the app)."""
        return not self.source.startswith("first")

    def text(self) -> str:
        """``0.725 ± 0.020`` (the 95% half-width, 1.96 se), with how many images and where it comes from (a source
        that counts its images, ``first 96 of 1000 images``, says it once)."""
        draws = f", mean of {self.draws} draws {self.spread[0]:.3f}–{self.spread[1]:.3f}" if self.draws > 1 else ""
        count = "" if self.source.startswith(("first ", "all ")) else f"{self.n} images, "
        return f"{self.accuracy:.3f} ± {1.96 * self.se:.3f} ({count}{self.source}{draws})"


def estimate_from(correct: torch.Tensor, source: str) -> Estimate:
    """The :class:`Estimate` of a bool tensor of per-image outcomes."""
    n = int(correct.numel())
    p = correct.double().mean().item() if n else float("nan")
    return Estimate(p, n, binomial_se(p, n), source)


def follow_text(n_all: int, n_done: int, seconds_per_image: float) -> str:
    """What a sampled answer says of the refinement that follows: ``all 1000 images follow within 4 s``, the time an upper
    estimate (twice the seconds per image the sample took, for the images left, and a second for the figure),
    rounded up to a whole second."""
    bound = math.ceil(2.0 * seconds_per_image * max(n_all - n_done, 0) + 1.0)
    return f"all {n_all} images follow within {bound} s"


def forward_flops(model) -> float:
    """Floating-point operations of one image's forward pass through ``model``'s blocks at their current
    manifestation (a third of :func:`cnet_lib.runtime.device.image_step_flops` of a batch of one)."""
    blocks = [b for b in model.blocks if hasattr(b, "scheme")]
    if not blocks:
        return 1.0
    channels = model.config()["channels"]
    return image_step_flops(channels, 1, blocks[0].scheme.stages, [b.n_steps for b in blocks]) / 3


def quick_size(model, device: torch.device, n_max: int, evaluations: int = 1, n_min: int = 32) -> int:
    """How many images a first answer evaluates: as many as :data:`QUICK_FLOPS` of ``device``'s type
    allows for ``evaluations`` forward passes of ``model`` per image, at least ``n_min`` and at most
    ``n_max``."""
    budget = QUICK_FLOPS.get(torch.device(device).type, QUICK_FLOPS["cpu"])
    n = int(budget // (max(evaluations, 1) * forward_flops(model)))
    return max(min(n_max, n), min(n_min, n_max))


def sweep_answer(rows: Sequence[Mapping], n_images: int, scheme: str, n_steps: int, compress: int = 0) -> Optional[Estimate]:
    """The accuracy of the manifestation (``scheme``, ``n_steps``), or of θ compressed to M = ``compress``
    at N_t = M, from a run's cached sweep ``rows`` measured on ``n_images`` held-out images; ``None`` when the
    sweep did not evaluate it."""
    if compress:
        row = find_row(rows, kind="compressed", scheme=scheme, n_steps=int(n_steps), n_basis=int(compress), default=None)
    else:
        row = find_row(rows, kind="manifestation", scheme=scheme, n_steps=int(n_steps), default=None)
    if row is None:
        return None
    return Estimate(row["accuracy"], int(n_images), binomial_se(row["accuracy"], int(n_images)), "from the cached sweep")


def study_answer(study: Mapping[str, Sequence], label: str, kind: str, level) -> Optional[Estimate]:
    """The accuracy of condition (``kind``, ``level``) of ``label`` in a cached robustness study (mean over
    its draws, with their range); ``None`` when the study did not measure it."""
    cond = next((c for c in study.get(label, ()) if c.kind == kind and c.level == level), None)
    if cond is None:
        return None
    accs = cond.accuracies()
    n = int(cond.correct[0].numel())
    p = sum(accs) / len(accs)
    return Estimate(p, n, binomial_se(p, n), "from the cached robustness study", len(accs), (min(accs), max(accs)))
