"""Choose the torch device once, with a CPU fallback."""
from __future__ import annotations

import os
from functools import lru_cache

import torch

__all__ = ["default_device", "amp_dtype"]


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


def amp_dtype(device: torch.device) -> "torch.dtype | None":
    """The autocast dtype for mixed precision on ``device``, or ``None`` for full float32.

    bfloat16 on a CUDA device with native bf16 arithmetic (compute capability 8.0 and newer:
    A100, L4, H100, ...).  Older GPUs such as Colab's T4 (7.5) have no bf16 hardware, and
    float16 would need loss scaling: they run in float32.  Never on the CPU.
    """
    device = torch.device(device)
    if device.type != "cuda":
        return None
    return _cuda_bf16(device.index if device.index is not None else torch.cuda.current_device())


@lru_cache(maxsize=None)
def _cuda_bf16(index: int) -> "torch.dtype | None":
    major, _ = torch.cuda.get_device_capability(index)
    return torch.bfloat16 if major >= 8 else None
