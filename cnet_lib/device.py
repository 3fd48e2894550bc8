"""Choose the torch device once, with a CPU fallback."""
from __future__ import annotations

import os
from functools import lru_cache

import torch

__all__ = ["default_device"]


@lru_cache(maxsize=None)
def default_device() -> torch.device:
    """``CNET_DEVICE`` if set (e.g. ``cpu``, ``cuda``, ``mps``), else CUDA when available, else CPU."""
    name = os.environ.get("CNET_DEVICE")
    if name:
        dev = torch.device(name)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(f"CNET_DEVICE={name!r} but CUDA is not available here; unset it to use the CPU")
        return dev
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
