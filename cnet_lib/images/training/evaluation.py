"""Accuracy of a classifier on uint8 test images: batched, in eval mode, timed, graphed where it pays.

Training (after every epoch), sweeps (once per manifestation) and the live apps all measure
accuracy here.  On CUDA the full batches of a call replay a CUDA graph of the forward pass
(:mod:`cnet_lib.runtime.cuda_graphs`) when the call has at least :data:`MIN_GRAPH_BATCHES` of them: a
capture costs about one eager batch, so fewer batches would not pay it back.  An
:class:`Evaluator` kept across calls (the training loop keeps one) reuses its graph for as long
as the model's graph and parameters stay the same.
"""
from __future__ import annotations

import time
from typing import Callable, Optional

import torch

from ...core.validation import check_int
from ...runtime import cuda_graphs
from ...runtime.cuda_graphs import StepRunner, module_key
from ...runtime.device import Precision, precision_for
from ..data.batches import iterate_batches

__all__ = ["MIN_GRAPH_BATCHES", "Evaluator", "evaluate", "model_dtype"]

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
