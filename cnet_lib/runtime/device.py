"""Choose the torch device once, with a CPU fallback, and compare devices the way tensors report them.

A tensor's device is always *normalised*: ``cpu`` has no index, an accelerator always has one
(``torch.zeros(1, device="cuda").device`` is ``cuda:0``).  Devices named by users are not
(``"cuda"``, ``"cpu:0"``), and ``torch.device("cuda") != torch.device("cuda:0")``.  Every device
the library compares or hands to ``torch.load`` goes through :func:`resolve_device` first.
"""
from __future__ import annotations

import contextlib
import os
import platform
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Union

import torch

__all__ = ["DeviceLike", "default_device", "resolve_device", "same_device", "amp_dtype", "Precision", "precision_for",
           "cpu_name", "gpu_words", "environment", "full_float32"]

DeviceLike = Union[str, torch.device, None]


def resolve_device(device: DeviceLike = None) -> torch.device:
    """``device`` in the form a tensor on it reports: ``None`` -> :func:`default_device`;
    ``"cpu:0"`` -> ``cpu``; ``"cuda"`` -> ``cuda:<current device>``; ``"cuda:1"`` unchanged.

    Raises a ValueError that names the argument for a string torch cannot parse, and a
    RuntimeError when CUDA is asked for where there is none.
    """
    if device is None:
        return default_device()
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device {device!r} is not a torch device; use e.g. 'cpu', 'cuda' or 'cuda:0'") from None
    if dev.type == "cpu":
        return torch.device("cpu")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(f"device {str(device)!r} asks for CUDA, but CUDA is not available here; use 'cpu'")
        index = torch.cuda.current_device() if dev.index is None else dev.index
        if not 0 <= index < torch.cuda.device_count():
            raise ValueError(f"device {str(device)!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
        return torch.device("cuda", index)
    return torch.device(dev.type, 0 if dev.index is None else dev.index)


def same_device(a: DeviceLike, b: DeviceLike) -> bool:
    """Whether ``a`` and ``b`` name the same device (``cuda`` and ``cuda:0`` do, when 0 is current)."""
    return resolve_device(a) == resolve_device(b)


@lru_cache(maxsize=None)
def default_device() -> torch.device:
    """CUDA when available (the current CUDA device), else the CPU; normalised like a tensor's device
    (see :func:`resolve_device`).  A session's own choice is its setting
    (``Settings.device`` (:class:`cnet_lib.runtime.settings.Settings`), ``CNET_DEVICE``)."""
    return resolve_device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def amp_dtype(device: DeviceLike) -> "torch.dtype | None":
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


@dataclass(frozen=True)
class Precision:
    """How a model runs on a device: the autocast dtype (``None``: full float32) and whether
    image batches are laid out channels-last.  :func:`precision_for` chooses it."""

    autocast_dtype: Optional[torch.dtype] = None
    channels_last: bool = False

    def autocast(self, device: torch.device, cache_enabled: bool = True):
        """The autocast context (a no-op context without an autocast dtype).  Inside a CUDA graph
        capture pass ``cache_enabled=False``: autocast's weight-cast cache would outlive the graph."""
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=torch.device(device).type, dtype=self.autocast_dtype,
                              cache_enabled=cache_enabled)

    def prepare(self, x: torch.Tensor) -> torch.Tensor:
        """An image batch in the memory format this precision wants."""
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last and x.dim() == 4 else x


def precision_for(device: DeviceLike, amp: bool = True, graphs: bool = True) -> Precision:
    """The precision of training and evaluation on ``device``.

    With ``amp`` on CUDA: channels-last batches, and bf16 autocast where the GPU has native bf16
    (:func:`amp_dtype`) *and* steps replay CUDA graphs: with graphs bf16 is the fastest, eagerly its
    cast kernels make a launch-bound step slower (measured on an H200; the book's page On a GPU).  Float32
    everywhere else (the CPU always).
    """
    device = torch.device(device)
    if not amp or device.type != "cuda":
        return Precision()
    return Precision(amp_dtype(device) if graphs else None, channels_last=True)


def cpu_name() -> str:
    """The CPU's model name (Linux: from /proc/cpuinfo), else the processor or machine type."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_words(name: str) -> str:
    """A GPU as a reader names it, by its model alone with its article: ``"NVIDIA H100 80GB HBM3"`` -> ``"an H100"``,
    ``"Tesla T4"`` -> ``"a T4"``."""
    words = str(name).split()
    model = words[1] if words[0] in ("NVIDIA", "Tesla") and len(words) > 1 else words[0]
    return f"{'an' if model[:1].upper() in 'AEFHILMNORSX' else 'a'} {model}"


def environment(device: DeviceLike) -> dict:
    """The machine and versions a result was computed with, for results files."""
    device = torch.device(device)
    env = {
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name(),
        "torch": str(torch.__version__),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
    }
    if device.type == "cuda":
        env["cuda"] = str(torch.version.cuda)
    return env


@contextlib.contextmanager
def full_float32():
    """Inside: CUDA convolutions and matrix products in full float32, not TF32 (cuDNN's convolutions use TF32
    by default on Ampere and later GPUs, a 10-bit mantissa).  A study that says it ran in float32 runs inside
    this, and records ``"tf32": False``; the flags are restored on the way out.  Nothing changes on a CPU."""
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
