"""Data-parallel training across processes, as ``torchrun`` starts them: the process group, this process's
rank, and the few collectives the training loop needs.

``torchrun --nproc_per_node=N -m cnet_lib -- train ...`` starts N processes with ``RANK``, ``LOCAL_RANK``,
``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` in their environment.
:func:`process_group` turns that environment into PyTorch's default process group (NCCL on CUDA, gloo on the
CPU) for the length of a ``with`` block; :func:`world` says, anywhere, which rank this process is among how
many.  Without a process group it is rank 0 of 1 and every collective here does nothing, so one process runs
exactly the code it ran before.  What :func:`cnet_lib.images.training.train_loop.train` does with a world of several:

* the model is wrapped in :class:`torch.nn.parallel.DistributedDataParallel` (:func:`wrap`): gradients are
  averaged over the ranks during the backward pass.  On CUDA its BatchNorm layers become
  :class:`torch.nn.SyncBatchNorm` (:func:`sync_batchnorm`): normalised with the statistics of the whole
  global batch, as one process would.  On the CPU they stay per rank (PyTorch's SyncBatchNorm accepts only
  accelerator tensors): each rank normalises its own shard;
* every rank takes its contiguous slice of every global batch (:func:`shard_bounds`), drawn from the same
  random generator as one process, so the global batches and their order are one process's;
* running BatchNorm statistics are not broadcast at every forward (they do not enter a training step); rank 0's
  are copied to every rank after each epoch (:func:`broadcast_buffers`), before evaluation and saving;
* rank 0 alone holds the run folder's lock and writes (:func:`main_first`); the others wait for it to hold it;
* the replicas are compared after a resume and after every refinement (:func:`check_replicas`).
"""
from __future__ import annotations

import contextlib
import hashlib
import inspect
from dataclasses import dataclass
from typing import Callable, ContextManager, Iterator, Mapping, Optional

import torch
import torch.distributed as dist
from torch import nn

__all__ = ["World", "PeerFailed", "ReplicasDiffer", "world", "launched_world", "rank_device", "process_group",
           "shard_bounds", "check_divides", "all_sum", "any_rank", "broadcast_buffers", "broadcast_object",
           "state_digest", "check_replicas", "sync_batchnorm", "wrap", "main_first"]


class PeerFailed(RuntimeError):
    """Another rank (rank 0) stopped; it said why on its own output."""


class ReplicasDiffer(RuntimeError):
    """The model or optimizer state is not the same on every rank."""


@dataclass(frozen=True)
class World:
    """This process's ``rank`` among ``size`` processes; ``local_rank`` and ``local_size`` on its node."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    local_size: int = 1

    @property
    def main(self) -> bool:
        """Whether this is rank 0, the one that writes and prints."""
        return self.rank == 0

    @property
    def parallel(self) -> bool:
        return self.size > 1


_LAUNCHED = World()
"""The world :func:`process_group` was opened with (its local ranks: a process group knows only the global ones)."""


def launched_world(environ: Mapping[str, str]) -> World:
    """The world ``torchrun`` describes in ``environ`` (its variables as :attr:`cnet_lib.runtime.settings.Settings.launch`
    holds them): one process when it sets nothing."""
    env = environ
    try:
        size = int(env.get("WORLD_SIZE", "1"))
        rank = int(env.get("RANK", "0"))
        local_rank = int(env.get("LOCAL_RANK", str(rank)))
        local_size = int(env.get("LOCAL_WORLD_SIZE", str(size)))
    except ValueError:
        raise ValueError("RANK, LOCAL_RANK, WORLD_SIZE and LOCAL_WORLD_SIZE must be integers; they are set by torchrun "
                         "(torchrun --nproc_per_node=N -m cnet_lib -- train ...): do not set them by hand") from None
    if not 0 <= rank < size or not 0 <= local_rank < local_size:
        raise ValueError(f"RANK={rank} of WORLD_SIZE={size} (LOCAL_RANK={local_rank} of {local_size}) is not a rank of "
                         "that world; start the processes with torchrun")
    return World(rank, size, local_rank, local_size)


def world() -> World:
    """This process's place in the current default process group (rank 0 of 1 without one)."""
    if not (dist.is_available() and dist.is_initialized()):
        return World()
    rank, size = dist.get_rank(), dist.get_world_size()
    if (_LAUNCHED.rank, _LAUNCHED.size) == (rank, size):
        return _LAUNCHED
    return World(rank, size, rank, size)  # a process group opened elsewhere: one node assumed


def rank_device(device, w: World) -> torch.device:
    """The device this rank trains on: with several processes on CUDA, the GPU of its local rank
    (``cuda:LOCAL_RANK``, whatever index ``device`` names); otherwise ``device``."""
    device = torch.device(device)
    if device.type != "cuda" or not w.parallel:
        return device
    n = torch.cuda.device_count()
    if w.local_rank >= n:
        raise RuntimeError(f"local rank {w.local_rank} has no GPU: this node has {n}; start at most one process per "
                           f"GPU (torchrun --nproc_per_node={n})")
    return torch.device("cuda", w.local_rank)


@contextlib.contextmanager
def process_group(device, environ: Mapping[str, str]) -> Iterator[World]:
    """Under ``torchrun`` with several processes, the default process group for ``device`` (NCCL on CUDA,
    gloo on the CPU; each rank's GPU made current first), destroyed at the end of the block; yields
    :func:`world`.  With one process, or a process group already there, it changes nothing."""
    launched = launched_world(environ)
    if not launched.parallel or dist.is_initialized():
        yield world()
        return
    device = torch.device(device)
    kwargs = {}
    if device.type == "cuda":
        kwargs["device_id"] = rank_device(device, launched)
        torch.cuda.set_device(kwargs["device_id"])
    global _LAUNCHED
    dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo", **kwargs)
    _LAUNCHED = launched
    try:
        yield world()
    finally:
        _LAUNCHED = World()
        dist.destroy_process_group()


def shard_bounds(n: int, rank: int, size: int) -> tuple[int, int]:
    """``(start, stop)`` of rank ``rank``'s contiguous slice of ``n`` items split over ``size`` ranks (sizes
    differ by at most one; equal when ``size`` divides ``n``)."""
    return n * rank // size, n * (rank + 1) // size


def check_divides(batch_size: int, w: World) -> None:
    """Every rank must get the same share of a global batch (DistributedDataParallel averages the ranks'
    gradients with equal weights)."""
    if batch_size % w.size:
        raise ValueError(f"batch_size {batch_size} cannot be split evenly over {w.size} processes: start a number of "
                         f"processes that divides it (torchrun --nproc_per_node=...) or choose a batch size divisible "
                         f"by {w.size}")


def all_sum(t: torch.Tensor) -> torch.Tensor:
    """``t`` summed over the ranks, in place (``t`` itself with one process)."""
    if world().parallel:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t


def any_rank(flag: torch.Tensor) -> torch.Tensor:
    """A bool tensor: whether ``flag`` is true on any rank (``flag`` itself with one process)."""
    if not world().parallel:
        return flag
    n = flag.to(torch.int32)
    dist.all_reduce(n, op=dist.ReduceOp.MAX)
    return n.bool()


def broadcast_buffers(module: nn.Module, src: int = 0) -> None:
    """Copy rank ``src``'s buffers (BatchNorm statistics) into every rank's ``module``."""
    if world().parallel:
        for b in module.buffers():
            dist.broadcast(b, src)


def broadcast_object(obj, src: int = 0):
    """Rank ``src``'s ``obj`` (picklable), on every rank."""
    if not world().parallel:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src)
    return box[0]


def _tensor_bytes(t: torch.Tensor) -> bytes:
    return t.detach().reshape(-1).cpu().contiguous().view(torch.uint8).numpy().tobytes()


def state_digest(model: nn.Module, optimizer: Optional[torch.optim.Optimizer] = None) -> str:
    """SHA-256 of ``model``'s state dict (parameters and buffers, bit for bit) and of ``optimizer``'s
    per-parameter state (momentum), in the model's parameter order."""
    h = hashlib.sha256()
    for name, value in model.state_dict().items():
        if torch.is_tensor(value):
            h.update(name.encode() + _tensor_bytes(value))
    if optimizer is not None:
        for i, p in enumerate(model.parameters()):
            for key, value in sorted(optimizer.state.get(p, {}).items()):
                if torch.is_tensor(value):
                    h.update(f"{i}.{key}".encode() + _tensor_bytes(value))
    return h.hexdigest()


def check_replicas(what: str, model: nn.Module, optimizer: Optional[torch.optim.Optimizer] = None) -> list[str]:
    """Every rank's :func:`state_digest` (gathered); raises :class:`ReplicasDiffer` naming the ranks whose
    model or optimizer state differs from rank 0's after ``what``."""
    digest = state_digest(model, optimizer)
    w = world()
    if not w.parallel:
        return [digest]
    digests = [None] * w.size
    dist.all_gather_object(digests, digest)
    differ = [r for r, d in enumerate(digests) if d != digests[0]]
    if differ:
        raise ReplicasDiffer(f"after {what} the model or optimizer state on rank(s) {differ} differs from rank 0's: "
                             "every rank must start from the same checkpoint (an out_dir on a file system every node "
                             "sees) and the same code")
    return digests


def sync_batchnorm(model: nn.Module, group=None) -> nn.Module:
    """Make every BatchNorm layer of ``model`` a :class:`torch.nn.SyncBatchNorm`, in place, and return ``model``.

    :meth:`torch.nn.SyncBatchNorm.convert_sync_batchnorm` builds new layers and copies each one's weight into
    them as a Parameter; an OdeBlock's residual has no such Parameters (its BatchNorm weights are θ(t), placed
    at every call, and the block keeps references to those very layers), so it refuses it ("cannot assign
    'torch.meta.FloatTensor' as parameter 'weight'").  Here each layer changes class where it is: every
    parameter, buffer, state-dict key and reference stays.  Without a process group of several ranks a
    SyncBatchNorm computes what a BatchNorm does."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and not isinstance(m, nn.SyncBatchNorm):
            m.__class__ = nn.SyncBatchNorm
            m.process_group = group
    return model


def wrap(model: nn.Module, device: torch.device) -> nn.parallel.DistributedDataParallel:
    """``model`` in DistributedDataParallel on ``device``, its BatchNorm layers synchronised on CUDA
    (:func:`sync_batchnorm`); buffers are not broadcast at every forward (see the module docstring).
    Building it copies rank 0's parameters to every rank."""
    device = torch.device(device)
    if device.type == "cuda":
        sync_batchnorm(model)
    params = inspect.signature(nn.parallel.DistributedDataParallel).parameters
    no_sync = {"forward_sync_buffers": False} if "forward_sync_buffers" in params else {"broadcast_buffers": False}
    return nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None,
                                               **no_sync)


@contextlib.contextmanager
def main_first(enter: Callable[[], ContextManager]) -> Iterator[None]:
    """Rank 0 enters ``enter()`` (a run folder's lock) while the others wait for it; then all run the block.
    When rank 0 cannot enter, it raises its error and the others :class:`PeerFailed`.  With one process,
    just ``with enter():``."""
    w = world()
    with contextlib.ExitStack() as stack:
        failure = None
        if w.main:
            try:
                stack.enter_context(enter())
            except Exception as err:  # told to the other ranks, then raised here
                failure = err
        said = broadcast_object(None if failure is None else f"{type(failure).__name__}: {failure}")
        if failure is not None:
            raise failure
        if said is not None:
            raise PeerFailed(f"rank 0 stopped: {said}")
        yield
