"""Running out of memory, said in one sentence with the batch size to try.

The allocator's own text (``CUDA out of memory. Tried to allocate ...``, ``DefaultCPUAllocator:
can't allocate memory``) says nothing about what to change.  :func:`out_of_memory_hint` turns it
into an :class:`OutOfMemory` error that names the device, what was being done, the batch size that
failed and a smaller one to try, in the command-line and the Python form.
"""
from __future__ import annotations

import contextlib
from typing import Iterator, Union

import torch

__all__ = ["OutOfMemory", "is_out_of_memory", "out_of_memory_message", "out_of_memory_hint"]

_OOM_TYPES = tuple(t for t in (getattr(torch, "OutOfMemoryError", None), getattr(torch.cuda, "OutOfMemoryError", None))
                   if t is not None)
_OOM_TEXT = ("out of memory", "can't allocate memory", "defaultcpuallocator", "failed to allocate")


class OutOfMemory(RuntimeError):
    """The device ran out of memory; the message says which batch size to try instead."""


def is_out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` is the allocator running out of memory (CUDA, MPS or the CPU)."""
    if isinstance(err, (MemoryError, *_OOM_TYPES)):
        return True
    return isinstance(err, RuntimeError) and any(t in str(err).lower() for t in _OOM_TEXT)


def out_of_memory_message(device: Union[str, torch.device], doing: str, batch_size: int, flag: str = "--batch-size",
                          keyword: str = "batch_size", then: str = "") -> str:
    """``out of memory on <device> while <doing> with batches of <n> images: try <flag> <n/2> (<keyword>=<n/2>
    in Python)<then>``; ``then`` adds what else to do (where the work is saved, ...)."""
    smaller = max(1, int(batch_size) // 2)
    if int(batch_size) <= 1:
        advice = "the batch is already one image: free memory (close other programs or notebooks) or use a smaller model"
    else:
        advice = f"try smaller batches, {flag} {smaller} ({keyword}={smaller} in Python)"
    images = "image" if int(batch_size) == 1 else "images"
    return f"out of memory on {device} while {doing} with batches of {batch_size} {images}: {advice}{then}"


@contextlib.contextmanager
def out_of_memory_hint(device: Union[str, torch.device], doing: str, batch_size: int, flag: str = "--batch-size",
                       keyword: str = "batch_size", then: str = "") -> Iterator[None]:
    """Inside the block, an out-of-memory error becomes an :class:`OutOfMemory` with
    :func:`out_of_memory_message` (the allocator's text is dropped; CUDA's cache is emptied)."""
    try:
        yield
    except (MemoryError, RuntimeError) as err:
        if isinstance(err, OutOfMemory) or not is_out_of_memory(err):
            raise
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        raise OutOfMemory(out_of_memory_message(device, doing, batch_size, flag, keyword, then)) from None
