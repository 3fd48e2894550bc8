"""Choose the torch device once, with a CPU fallback, and compare devices the way tensors report them.

A tensor's device is always *normalised*: ``cpu`` has no index, an accelerator always has one
(``torch.zeros(1, device="cuda").device`` is ``cuda:0``).  Devices named by users are not
(``"cuda"``, ``"cpu:0"``), and ``torch.device("cuda") != torch.device("cuda:0")``.  Every device
the library compares or hands to ``torch.load`` goes through :func:`resolve_device` first.

Also here (sections below): CPU threads for torch, chosen from the size of the work (:func:`threads_for`); running
out of memory said in one sentence with the batch size to try (:func:`out_of_memory_hint`); how long a T4 would take
for what a faster GPU was measured doing (:func:`t4_estimate`).
"""
from __future__ import annotations

import contextlib
import os
import platform
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator, Mapping, Optional, Sequence, Union

import torch

__all__ = ["DeviceLike", "default_device", "resolve_device", "same_device", "amp_dtype", "Precision", "precision_for",
           "cpu_name", "gpu_words", "environment", "full_float32", "FLOPS_PER_THREAD", "available_cores",
           "threads_for", "torch_threads", "image_step_flops", "OutOfMemory", "is_out_of_memory",
           "out_of_memory_message", "out_of_memory_hint", "FP32_TFLOPS", "FP32_OVER_BF16", "fp32_tflops",
           "t4_estimate"]


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


# CPU threads for torch, chosen from the size of the work, so that training survives a busy machine.
#
# torch parallelises each operator over its intra-op threads (OpenMP).  For the small models of this
# book that is a bad trade on a small machine: an operator on a 4-8-8 ContinuousNet takes
# microseconds, thread hand-offs cost as much, and when another job holds the cores, OpenMP threads
# that spin while they wait for each other lose their time slices and a step can take many times
# longer (measured, ``book/CONTRIBUTING.md``, *Maintainers' measurements*).  So the number
# of threads follows the work: :func:`threads_for` gives one thread per :data:`FLOPS_PER_THREAD`
# floating-point operations of a step, at least 1 and at most the cores this process may use.
#
# A session's setting (``Settings.threads`` (:class:`cnet_lib.runtime.settings.Settings`), ``CNET_THREADS=<n>``) overrides
# the choice for training and sweeps; the pendulum study always runs its tiny models on one thread.
# OpenMP's waiting policy is read once, when the runtime starts, so it cannot be changed from
# inside Python: the project's scripts export ``OMP_WAIT_POLICY=PASSIVE`` (threads sleep instead of
# spinning while they wait), which helped a 2-thread step under contention when measured; set it
# yourself before starting Python where you run the library another way.

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


# Running out of memory, said in one sentence with the batch size to try.
#
# The allocator's own text (``CUDA out of memory. Tried to allocate ...``, ``DefaultCPUAllocator:
# can't allocate memory``) says nothing about what to change.  :func:`out_of_memory_hint` turns it
# into an :class:`OutOfMemory` error that names the device, what was being done, the batch size that
# failed and a smaller one to try, in the command-line and the Python form.

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


# How long a T4 (Colab's free GPU) would take for what a faster GPU was measured doing: an estimate, never a
# measurement, with its two assumptions stated where it is quoted (``book/gpu.md``, *On a GPU*).
#
# * A T4 reaches the same fraction of its float32 peak as the measured GPU did of its own
#   (:data:`FP32_TFLOPS`: the vendors' dense float32 figures), so every GPU time scales by the ratio of the peaks.
# * A T4 has no bf16 hardware and runs float32: the measured bf16 graph step is :data:`FP32_OVER_BF16` times
#   faster than the float32 one (RK4-classic N_t = 4 on an H200: 16.2 against 27.0 ms, measured by the GPU benchmark of
#   2026-11, ``benchmarks/results/bench_gpu.json`` in the git history).
#
# :func:`t4_estimate` applies them to each run's measured seconds (training, evaluation, sweep).  The book and a
# reader's install compute it here from the shipped models' own records (:func:`cnet_lib.book.measurements.t4_estimate`),
# so a Colab reader sees the same estimate as the book.

FP32_TFLOPS = {"T4": 8.1, "H100 PCIe": 51.2, "H100": 67.0, "H200": 67.0}
"""Dense float32 peaks (TFLOP/s) by model name; ``H100`` is the SXM part (``NVIDIA H100 80GB HBM3``)."""

FP32_OVER_BF16 = 27.0 / 16.2
"""The float32 graph step over the bf16 one, measured on an H200 (module doc)."""


def fp32_tflops(device_name: str) -> Optional[float]:
    """The float32 peak of the GPU named ``device_name`` (``torch.cuda.get_device_name``), matched by the longest
    model name of :data:`FP32_TFLOPS` it contains; ``None`` for a GPU not in the table."""
    name = str(device_name or "")
    found = [model for model in FP32_TFLOPS if model in name]
    return FP32_TFLOPS[max(found, key=len)] if found else None


def t4_estimate(runs: Mapping[str, Mapping[str, float]], measured_on: str) -> dict:
    """Minutes a T4 would take for each run and for the image chapters together, from ``runs`` = ``{run:
    {"train": s, "eval": s, "sweep": s}}`` measured on the GPU ``measured_on`` (module doc); ``{}`` when that GPU
    has no peak in :data:`FP32_TFLOPS` or ``runs`` is empty (no estimate rather than a wrong one)."""
    peak = fp32_tflops(measured_on)
    if peak is None or not runs:
        return {}
    ratio = peak / FP32_TFLOPS["T4"]
    out = {name: {"measured_s": {k: float(s[k]) for k in ("train", "eval", "sweep")},
                  "t4_minutes": (s["train"] + s["eval"] + s["sweep"]) * FP32_OVER_BF16 * ratio / 60}
           for name, s in runs.items()}
    return {"assumptions": {"peak_ratio": ratio, "fp32_over_bf16": FP32_OVER_BF16, "measured_on": measured_on},
            "runs": out, "image_chapters_minutes": sum(r["t4_minutes"] for r in out.values())}
