"""CPU threads for torch, chosen from the size of the work, so that training survives a busy machine.

torch parallelises each operator over its intra-op threads (OpenMP).  For the small models of this
book that is a bad trade on a small machine: an operator on a 4-8-8 ContinuousNet takes
microseconds, thread hand-offs cost as much, and when another job holds the cores, OpenMP threads
that spin while they wait for each other lose their time slices and a step can take many times
longer (measured, ``book/CONTRIBUTING.md``, *Maintainers' measurements*).  So the number
of threads follows the work: :func:`threads_for` gives one thread per :data:`FLOPS_PER_THREAD`
floating-point operations of a step, at least 1 and at most the cores this process may use.

A session's setting (``Settings.threads`` (:class:`cnet_lib.runtime.settings.Settings`), ``CNET_THREADS=<n>``) overrides
the choice for training and sweeps; the pendulum study always runs its tiny models on one thread.
OpenMP's waiting policy is read once, when the runtime starts, so it cannot be changed from
inside Python: the project's scripts export ``OMP_WAIT_POLICY=PASSIVE`` (threads sleep instead of
spinning while they wait), which helped a 2-thread step under contention when measured; set it
yourself before starting Python where you run the library another way.
"""
from __future__ import annotations

import contextlib
import os
from typing import Iterator, Optional, Sequence

import torch

__all__ = ["FLOPS_PER_THREAD", "available_cores", "threads_for", "torch_threads", "image_step_flops"]

FLOPS_PER_THREAD = 4e9
"""Floating-point operations per step for each thread, chosen from the threads' measurements (``book/CONTRIBUTING.md``,
*Maintainers' measurements*)."""


def available_cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def threads_for(step_flops: float, cores: Optional[int] = None, override: Optional[int] = None) -> int:
    """The intra-op threads for a step of ``step_flops`` floating-point operations: ``override`` (the
    session's ``threads`` setting) when given, else one per :data:`FLOPS_PER_THREAD`, between 1 and
    ``cores`` (default: the cores this process may use)."""
    if override is not None:
        if isinstance(override, bool) or not isinstance(override, int) or override < 1:
            raise ValueError(f"threads must be an integer >= 1, got {override!r} (e.g. threads=1)")
        return override
    cores = available_cores() if cores is None else cores
    return max(1, min(cores, int(step_flops // FLOPS_PER_THREAD)))


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[int]:
    """Run the block with ``torch.set_num_threads(n)``; the previous count is restored after."""
    old = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield int(n)
    finally:
        torch.set_num_threads(old)


def image_step_flops(channels: Sequence[int], batch: int, stages: int, n_steps: Sequence[int],
                     image_size: int = 32) -> float:
    """Floating-point operations of one SGD step of a ContinuousNet, counting its 3×3 convolutions
    (the residual units' two per stage evaluation, forward and backward ≈ 3 × forward): block ``b``
    at resolution ``image_size / 2**b`` with ``channels[b]`` channels, ``stages × n_steps[b]``
    evaluations."""
    total = 0.0
    for b, (c, nt) in enumerate(zip(channels, n_steps)):
        side = image_size // 2 ** b
        total += 3 * stages * nt * 2 * (2 * batch * side * side * c * c * 9)
    return total
