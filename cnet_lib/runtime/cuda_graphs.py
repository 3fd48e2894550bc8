"""CUDA graphs for training and evaluation steps: one replay instead of thousands of launches.

A ContinuousNet step at this book's widths is *launch-bound* on a GPU: RK4-classic at N_t = 8
issues about 14,000 kernels per SGD step, most of them far shorter than the time the host needs
to launch them, so the GPU idles for most of the step.  A CUDA graph records the kernels of one
step once and replays all of them with a single launch.  :class:`StepRunner` does this for any
step function ``body(*inputs) -> outputs`` of tensors:

* **static addresses**: a graph reads its inputs from, and writes its outputs to, the same
  memory at every replay.  Inputs are copied into static tensors before each replay; the outputs
  returned are static tensors, overwritten by the next replay (read them before the next call);
* **a new capture whenever the recorded kernels would change**: every call passes a *key*
  (batch shape, manifestation, the identities of the parameters, the learning rate, ...); a new
  key releases the old graph and captures again.  :func:`train_step_key` builds the key of an
  SGD step;
* **warm-up**: after a new key the first ``warmup`` calls run eagerly on a side stream (lazy
  cuDNN/cuBLAS set-up, SGD's momentum buffers), as ordinary steps on their own batches, then the
  next call captures and replays.  The sequence of computations is the same as in eager mode.

The step body must not synchronise with the host (no ``.item()``, no data-dependent Python
branches): the numerics core never does.  On the CPU every call runs eagerly.  Graphs are on by
default on CUDA; the session's setting ``cuda_graphs=False`` (``CNET_CUDA_GRAPHS=0``), or
``TrainConfig(cuda_graphs=False)``, ``python -m cnet_lib train --no-cuda-graphs``,
``evaluate(..., graphs=False)``, turns them off.
"""
from __future__ import annotations

import contextlib
import gc
from typing import Callable, Hashable, Optional, Sequence

import torch

__all__ = ["graphs_enabled", "graph_class", "StepRunner", "EagerGraph", "GraphKey", "module_key", "train_step_key"]

Tensors = tuple  # a tuple of tensors


def graphs_enabled(device: torch.device, requested: bool = True) -> bool:
    """Whether steps on ``device`` are captured: only on CUDA, and only when ``requested`` (the
    run's ``cuda_graphs``, which a session's setting fills)."""
    return bool(requested) and torch.device(device).type == "cuda"


def graph_class(device: torch.device, requested: bool = True) -> Optional[type]:
    """The graph type steps on ``device`` are captured with, or ``None`` to run them eagerly
    (see :func:`graphs_enabled`).  Tests on the CPU replace this function to return
    :class:`EagerGraph`."""
    return _CudaGraph if graphs_enabled(device, requested) else None


class _CudaGraph:
    """``body(*static_inputs)`` captured into a ``torch.cuda.CUDAGraph`` (nothing runs yet).

    Python's garbage collector is run first and kept off during the capture: a collection in the
    middle of it can free an older graph (objects in reference cycles die only then), and freeing
    a graph while a stream captures invalidates the capture (seen on an H200: "operation not
    permitted when stream is capturing").  Recent torch versions no longer collect on entry.
    """

    def __init__(self, body: Callable[..., Tensors], static_inputs: Tensors):
        gc.collect()
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.outputs = body(*static_inputs)
        finally:
            if was_enabled:
                gc.enable()

    def replay(self) -> Tensors:
        self.graph.replay()
        return self.outputs


class EagerGraph:
    """Stand-in for a CUDA graph with the same contract, for tests on the CPU: 'capture' records
    the body, each 'replay' runs it on the static inputs."""

    def __init__(self, body: Callable[..., Tensors], static_inputs: Tensors):
        self.body, self.static_inputs = body, static_inputs

    def replay(self) -> Tensors:
        return self.body(*self.static_inputs)


class StepRunner:
    """Run ``body(*inputs)`` through a graph captured per key (see the module docstring).

    ``graph_cls`` is the graph type (:func:`graph_class`); ``None`` runs every call eagerly, and
    so does a call with ``capture=False`` (e.g. a last, partial batch).  While the body runs,
    :attr:`graphed` says whether this call belongs to a graph (its warm-up, capture or replay).
    ``captures`` counts the captures made so far.
    """

    def __init__(self, body: Callable[..., Tensors], graph_cls: Optional[type], warmup: int = 2):
        if warmup < 1:
            raise ValueError("a CUDA graph needs at least one eager warm-up call (warmup >= 1)")
        self.body = body
        self.graph_cls = graph_cls
        self.warmup = int(warmup)
        self.captures = 0
        self.graphed = False
        self._key: Optional[Hashable] = None
        self._graph = None
        self._static: Tensors = ()
        self._warm = 0

    def reset(self) -> None:
        """Release the graph (its memory pool too); the next call warms up and captures again."""
        self._key, self._graph, self._static, self._warm = None, None, (), 0

    def __call__(self, key: Hashable, *inputs: torch.Tensor, capture: bool = True) -> Tensors:
        self.graphed = self.graph_cls is not None and capture
        if not self.graphed:
            return self.body(*inputs)
        if key != self._key:
            self.reset()
            self._key = key
        if self._graph is not None:
            for static, new in zip(self._static, inputs):
                static.copy_(new)
            return self._graph.replay()
        if self._warm < self.warmup:
            self._warm += 1
            with _side_stream(inputs):
                return self.body(*inputs)
        self._static = tuple(t.clone() for t in inputs)
        self._graph = self.graph_cls(self.body, self._static)
        self.captures += 1
        return self._graph.replay()


@contextlib.contextmanager
def _side_stream(inputs: Sequence[torch.Tensor]):
    """Run the block on a fresh CUDA stream (as graph warm-up must), joined before and after."""
    device = next((t.device for t in inputs if t.is_cuda), None)
    if device is None:
        yield
        return
    current = torch.cuda.current_stream(device)
    side = torch.cuda.Stream(device)
    side.wait_stream(current)
    with torch.cuda.stream(side):
        yield
    current.wait_stream(side)


class GraphKey:
    """What a captured step depends on besides its inputs' values: plain values compared with
    ``==`` and tensors compared by identity.  The key holds its tensors, so none of them can be
    freed, and its address reused by another tensor, while a graph captured under it lives."""

    def __init__(self, plain: Hashable, tensors: Sequence[torch.Tensor] = ()):
        self.plain = plain
        self.tensors = tuple(tensors)

    def __eq__(self, other) -> bool:
        return (isinstance(other, GraphKey) and self.plain == other.plain and len(self.tensors) == len(other.tensors)
                and all(a is b for a, b in zip(self.tensors, other.tensors)))

    def __hash__(self) -> int:
        return hash((self.plain, tuple(id(t) for t in self.tensors)))


def module_key(module: torch.nn.Module, *inputs: torch.Tensor) -> GraphKey:
    """The key of a captured forward of ``module``: its train/eval mode, its manifestation
    (scheme and N_t per OdeBlock, when it has one, and its tolerances when adaptive), every parameter
    and buffer (refinement and projection replace them) and the inputs' shapes and dtypes."""
    manifestation = getattr(module, "manifestation", None)
    if isinstance(manifestation, list):
        manifestation = tuple(manifestation)
    tolerances = getattr(module, "tolerances", None)
    shapes = tuple((tuple(t.shape), t.dtype) for t in inputs)
    return GraphKey((module.training, manifestation, tolerances, shapes), [*module.parameters(), *module.buffers()])


def train_step_key(module: torch.nn.Module, optimizer: torch.optim.Optimizer, *inputs: torch.Tensor) -> GraphKey:
    """The key of a captured SGD step: :func:`module_key` plus the optimizer's parameters and
    hyper-parameters (the learning rate is a constant of the captured kernels)."""
    base = module_key(module, *inputs)
    hyper = tuple(tuple(sorted((k, v) for k, v in g.items() if k != "params" and isinstance(v, (int, float, bool))))
                  for g in optimizer.param_groups)
    params = [p for g in optimizer.param_groups for p in g["params"]]
    return GraphKey((base.plain, hyper), [*base.tensors, *params])
