"""Accuracy of a classifier on uint8 test images: batched, in eval mode, timed, graphed where it pays; and the
*manifestation sweep*, one trained ContinuousNet evaluated on many graphs (:func:`manifestation_sweep`).

Training (after every epoch), sweeps (once per manifestation) and the live apps all measure
accuracy here.  On CUDA the full batches of a call replay a CUDA graph of the forward pass
(:mod:`cnet_lib.runtime.cuda_graphs`) when the call has at least :data:`MIN_GRAPH_BATCHES` of them: a
capture costs about one eager batch, so fewer batches would not pay it back.  An
:class:`Evaluator` kept across calls (the training loop keeps one) reuses its graph for as long
as the model's graph and parameters stay the same.
"""
from __future__ import annotations

import contextlib
import copy
import time
from typing import Callable, Iterable, Mapping, Optional, Sequence

import torch
from torch import nn

from ...core.models import ContinuousNet
from ...core.odeblock import OdeBlock
from ...core.schemes import get_scheme
from ...core.validation import check_int, check_ints
from ...runtime.cuda_graphs import StepRunner, module_key
from ...runtime.device import Precision, image_step_flops, precision_for, threads_for, torch_threads
from ...runtime.progress import progress_bar
from ...runtime import cuda_graphs
from ..data.batches import iterate_batches

__all__ = ["MIN_GRAPH_BATCHES", "Evaluator", "evaluate", "model_dtype", "DEFAULT_GRID", "ROW_FIELDS",
           "check_grid_keys", "checked_rows", "fit_grid", "manifestation_sweep"]

MIN_GRAPH_BATCHES = 4


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Evaluator:
    """Counts correct predictions of a model, replaying one captured forward graph where it pays.

    ``precision`` defaults to :func:`cnet_lib.runtime.device.precision_for` of the data's device.
    ``graph_cls`` is the graph type (:func:`cnet_lib.runtime.cuda_graphs.graph_class`; ``None``: eager).
    Image batches are cast to the model's floating dtype (a float64 model is evaluated in float64).
    """

    def __init__(self, precision: Optional[Precision] = None, graph_cls: Optional[type] = None,
                 min_graph_batches: int = MIN_GRAPH_BATCHES):
        self.precision = precision
        self.min_graph_batches = int(min_graph_batches)
        self._model: Optional[torch.nn.Module] = None
        self._device = torch.device("cpu")
        self._dtype = torch.float32
        self._runner = StepRunner(self._predict, graph_cls, warmup=1)

    def _predict(self, xb: torch.Tensor) -> tuple[torch.Tensor]:
        with torch.no_grad(), self.precision.autocast(self._device, cache_enabled=not self._runner.graphed):
            return (self._model(self.precision.prepare(xb.to(self._dtype))).argmax(1),)

    @torch.no_grad()
    def correct(self, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, mean: torch.Tensor, std: torch.Tensor,
                batch_size: int = 500, transform: Optional[Callable[[torch.Tensor], torch.Tensor]] = None
                ) -> tuple[torch.Tensor, float]:
        """(correct, seconds): which of the uint8 images ``x`` (on the model's device) ``model``
        classifies right in eval mode, as a bool tensor, and the wall time.  ``transform`` is
        applied to every normalised batch before the model (e.g. input noise).  ``batch_size`` must
        be an integer >= 1."""
        pred, seconds = self.predictions(model, x, mean, std, batch_size, transform)
        return pred == y, seconds

    def predictions(self, model: torch.nn.Module, x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor,
                    batch_size: int = 500, transform: Optional[Callable[[torch.Tensor], torch.Tensor]] = None
                    ) -> tuple[torch.Tensor, float]:
        """(classes, seconds): the class ``model`` predicts for each of the uint8 images ``x``, as an int64
        tensor, and the wall time; :meth:`correct` compares them with the labels."""
        check_int("batch_size", batch_size, low=1, example=500)
        device = x.device
        self.precision = self.precision or precision_for(device, graphs=self._runner.graph_cls is not None)
        self._model, self._device, self._dtype = model, device, model_dtype(model)
        worth_it = len(x) // batch_size >= self.min_graph_batches
        was_training = model.training
        model.eval()
        parts = []
        _sync(device)
        t0 = time.perf_counter()
        try:
            for xb, _ in iterate_batches(x, None, batch_size, mean, std):
                if transform is not None:
                    xb = transform(xb)
                capture = worth_it and len(xb) == batch_size
                (pred,) = self._runner(module_key(model, xb), xb, capture=capture)
                parts.append(pred.clone())  # copied now: a replay overwrites pred
            out = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long, device=device)
            _sync(device)
        finally:
            model.train(was_training)
            self._model = None
        return out, time.perf_counter() - t0

    def __call__(self, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, mean: torch.Tensor, std: torch.Tensor,
                 batch_size: int = 500) -> tuple[float, float]:
        """(accuracy, seconds) of ``model`` in eval mode on uint8 images ``x`` (on the model's device)."""
        hits, seconds = self.correct(model, x, y, mean, std, batch_size)
        return hits.sum().item() / max(len(y), 1), seconds


def model_dtype(model: torch.nn.Module) -> torch.dtype:
    """The floating dtype of ``model``'s first floating parameter (float32 without one)."""
    return next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)


def evaluate(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, mean: torch.Tensor, std: torch.Tensor,
             batch_size: int = 500, amp: bool = True, graphs: bool = True) -> tuple[float, float]:
    """(accuracy, seconds) of ``model`` in eval mode on uint8 images ``x`` (on the model's device),
    with the precision :func:`cnet_lib.runtime.device.precision_for` gives (``amp=False``: float32) and
    CUDA graphs where they pay (``graphs=False``: never)."""
    graph_cls = cuda_graphs.graph_class(x.device, graphs)
    return Evaluator(precision_for(x.device, amp, graph_cls is not None), graph_cls)(model, x, y, mean, std, batch_size)


# --------------------------------------------------------------------------- the manifestation sweep
# One trained model evaluated on many graphs without retraining.  For every (scheme, N_t) of a grid the model is
# evaluated with that manifestation (ContinuousNet.manifested); for every compressed M its θ(t) is projected onto M
# basis functions (ContinuousNet.project, on a deep copy) and evaluated at N_t = M; and once with every OdeBlock
# replaced by the identity, which says how much the blocks matter at all.  Each row records test accuracy, inference
# seconds, residual evaluations per image (the field ``units``: stages × N_t summed over blocks; the paper's Table 1
# calls the steps per block its *units*) and parameter count.  The studies that read sweeps live in
# cnet_lib/studies/ (the manifestation study caches, judges and shows them).
DEFAULT_GRID = dict(schemes=("euler", "midpoint", "rk4_classic", "rk4_38"), n_steps=(1, 2, 4, 8, 16),
                    compress=(1, 2, 4), compress_schemes=None)
ROW_FIELDS = ("kind", "scheme", "n_steps", "n_basis", "units", "n_parameters", "accuracy", "seconds", "ms_per_image")
"""The fields every row of a sweep has (the figures and tables read them)."""
_KINDS = ("trained", "manifestation", "compressed", "identity")


def check_grid_keys(grid: Mapping) -> dict:
    """``grid`` as a dict, after checking that it names only the keys of :data:`DEFAULT_GRID`."""
    if not isinstance(grid, Mapping):
        raise TypeError(f"a sweep grid must be a dict of {', '.join(DEFAULT_GRID)}, got {grid!r:.60}")
    unknown = [k for k in grid if k not in DEFAULT_GRID]
    if unknown:
        raise ValueError(f"unknown sweep grid key {unknown[0]!r}: a sweep grid has {', '.join(DEFAULT_GRID)} "
                         "(e.g. grid=dict(schemes=('euler',), n_steps=(1, 2)))")
    return dict(grid)


def checked_rows(rows, fields: Sequence[str] = ROW_FIELDS) -> list:
    """``rows`` of a sweep read back from a file, after checking that they are what :func:`manifestation_sweep`
    writes: a list of dicts with every one of ``fields`` (default :data:`ROW_FIELDS`), a known kind, an accuracy
    from 0 to 1 (and a time >= 0 where there is one), one trained row; a ValueError says what is not."""
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"the rows are {type(rows).__name__ if rows else 'empty'}, not a list of evaluations")
    for i, row in enumerate(rows):
        missing = [f for f in fields if f not in row] if isinstance(row, dict) else list(fields)
        if missing:
            raise ValueError(f"row {i} lacks {', '.join(missing[:3])}")
        acc, sec = row["accuracy"], row.get("seconds", 0.0)
        if row["kind"] not in _KINDS or not isinstance(acc, (int, float)) or not 0 <= acc <= 1 or \
                not isinstance(sec, (int, float)) or not sec >= 0:
            raise ValueError(f"row {i} is not an evaluation (kind {str(row['kind'])[:20]!r}, accuracy "
                             f"{str(acc)[:20]}, seconds {str(sec)[:20]})")
    if not any(row["kind"] == "trained" for row in rows):
        raise ValueError("no row is the trained graph's")
    return rows


def _units(model: ContinuousNet) -> int:
    return sum(b.scheme.stages * b.n_steps for b in model.blocks)


def _uniform(values: list):
    return values[0] if len(set(values)) == 1 else list(values)


def _row(kind: str, model: Optional[ContinuousNet], acc: float, seconds: float, n_images: int, **fields) -> dict:
    row = {"kind": kind}
    if model is not None:
        row.update(scheme=_uniform([b.scheme.name for b in model.blocks]),
                   n_steps=_uniform([b.n_steps for b in model.blocks]),
                   n_basis=_uniform([b.n_basis for b in model.blocks]),
                   units=_units(model), n_parameters=model.n_parameters())
    row.update(fields)
    row.update(accuracy=acc, seconds=seconds, ms_per_image=1000.0 * seconds / max(n_images, 1))
    return row


def _eval_threads(model: ContinuousNet, batch: int, device: torch.device, override: Optional[int]) -> Optional[int]:
    """On the CPU, torch threads for evaluating ``model`` on batches of ``batch`` images (a
    forward pass is a third of a training step's work; ``override``, a session's ``threads``
    setting, when given); ``None`` on a GPU."""
    if device.type != "cpu":
        return None
    blocks = [b for b in model.blocks if isinstance(b, OdeBlock)]
    if not blocks:
        return threads_for(0.0, override=override)
    flops = image_step_flops(model.config()["channels"], batch, blocks[0].scheme.stages, [b.n_steps for b in blocks])
    return threads_for(flops / 3, override=override)


def _largest_m(model: ContinuousNet) -> int:
    return max(b.n_basis for b in model.blocks)


def fit_grid(grid: dict, model: ContinuousNet) -> dict:
    """``grid`` with the compressions a shared grid holds but ``model`` cannot take (M at or above
    the model's largest M) left out: for a preset's or the default grid, which serves models of
    different M.  A grid a user writes is checked by :func:`manifestation_sweep` instead, which
    refuses such values."""
    out = dict(grid)
    if out.get("compress") is not None:
        out["compress"] = tuple(m for m in out["compress"] if int(m) < _largest_m(model))
    return out


def _check_grid(model: ContinuousNet, schemes, n_steps, compress, compress_schemes, batch_size) -> tuple:
    """The grid's values checked before any work: ``(n_steps, compress)`` as tuples of ints."""
    for s in list(schemes) + list(compress_schemes or []):
        get_scheme(s)  # unknown names fail before any work
    n_steps = check_ints("n_steps", n_steps, low=1, example=(1, 2, 4))
    compress = check_ints("compress", compress, low=1, example=(1, 2))
    top = _largest_m(model)
    too_big = [m for m in compress if m >= top]
    if too_big:
        raise ValueError(f"compress holds M = {', '.join(map(str, too_big))}, but the model has M = {top} basis "
                         f"functions: compressing means fewer, so give values from 1 to {top - 1}"
                         if top > 1 else f"compress holds M = {too_big[0]}, but the model has M = 1 basis function "
                         "already: it cannot be compressed (give compress=())")
    check_int("batch_size", batch_size, low=1, example=500)
    return n_steps, compress


def _identity_copy(model: ContinuousNet) -> ContinuousNet:
    m = copy.deepcopy(model)
    m.blocks = nn.ModuleList(nn.Identity() for _ in m.blocks)
    return m


def manifestation_sweep(
    model: ContinuousNet,
    x: torch.Tensor,
    y: torch.Tensor,
    mean: torch.Tensor,
    std: torch.Tensor,
    schemes: Sequence[str] = DEFAULT_GRID["schemes"],
    n_steps: Sequence[int] = DEFAULT_GRID["n_steps"],
    compress: Optional[Iterable[int]] = None,
    compress_schemes: Optional[Sequence[str]] = None,
    batch_size: int = 500,
    amp: bool = True,
    progress: bool = True,
    graphs: bool = True,
    threads: Optional[int] = None,
) -> list[dict]:
    """Tidy rows (one dict per evaluation) for the trained model on uint8 test images ``x``.

    Kinds: ``trained`` (its own graph), ``manifestation`` (every scheme × N_t of the grid),
    ``compressed`` (θ projected to M < the trained M, for each of ``compress_schemes``, default
    the trained scheme, at N_t = M), ``identity`` (every OdeBlock replaced by the identity).
    The model itself is left as it was.  Every value is checked first: N_t and M must be integers
    >= 1 (no float is rounded), every M of ``compress`` below the model's largest M
    (:func:`fit_grid` leaves out those a shared grid holds), ``batch_size`` >= 1.  ``compress=None``
    takes the compressions of :data:`DEFAULT_GRID` that fit the model.  ``graphs=False`` never
    replays CUDA graphs; ``threads`` sets the CPU threads (default: from the work).
    """
    if compress is None:
        compress = fit_grid(DEFAULT_GRID, model)["compress"]
    n_steps, compress = _check_grid(model, schemes, n_steps, compress, compress_schemes, batch_size)
    if len(y) == 0 or len(x) != len(y):
        raise ValueError(f"a sweep needs test images and one label per image, got {len(x)} images and {len(y)} labels"
                         " (e.g. n_test=2000)")
    c_schemes = list(compress_schemes) if compress_schemes else [model.blocks[0].manifestation[0]]
    jobs = 2 + len(schemes) * len(n_steps) + len(sorted(set(compress))) * len(c_schemes)
    n = len(y)
    bar = progress_bar(total=jobs, desc="manifestation sweep", disable=not progress)

    def run(m: nn.Module) -> tuple[float, float]:
        threads_now = _eval_threads(m, min(batch_size, n), x.device, threads)
        with torch_threads(threads_now) if threads_now else contextlib.nullcontext():
            evaluate(m, x[: min(batch_size, n)], y[: min(batch_size, n)], mean, std, batch_size, amp, graphs)  # warm-up
            out = evaluate(m, x, y, mean, std, batch_size, amp, graphs)
        bar.update(1)
        return out

    was_training = model.training
    model.eval()
    try:
        return _sweep_rows(model, run, n, schemes, n_steps, sorted(set(compress)), c_schemes)
    finally:
        bar.close()
        model.train(was_training)


def _sweep_rows(model: ContinuousNet, run, n: int, schemes, n_steps, compress, c_schemes) -> list[dict]:
    """The rows of :func:`manifestation_sweep`, each evaluation done by ``run(model) -> (accuracy, seconds)``."""
    trained_manif = [b.manifestation for b in model.blocks]
    trained_m = [b.n_basis for b in model.blocks]
    acc, sec = run(model)
    rows = [_row("trained", model, acc, sec, n)]
    for s in schemes:
        for nt in n_steps:
            with model.manifested(s, int(nt)):
                acc, sec = run(model)
                same = [b.manifestation for b in model.blocks] == trained_manif
                rows.append(_row("manifestation", model, acc, sec, n, is_trained=same))
    for s in c_schemes:
        for m in compress:
            small = copy.deepcopy(model).project([min(m, mb) for mb in trained_m])
            small.manifest(s)
            acc, sec = run(small)
            rows.append(_row("compressed", small, acc, sec, n, compressed_from=_uniform(trained_m)))
    ident = _identity_copy(model)
    acc, sec = run(ident)
    rows.append(_row("identity", None, acc, sec, n, scheme=None, n_steps=0, n_basis=0, units=0,
                     n_parameters=ident.n_parameters()))
    return rows
