"""A guard around a known fault of the CPU convolution library under torch 2.13.

torch 2.13.0's CPU build bundles oneDNN v3.12.0.  On a CPU without AVX-512 its AVX2 kernel for a
**1×1 convolution with stride > 1** computes the weight gradient through a workspace that is too
small when the input is laid out **channels-last** (NHWC) and has fewer input channels than the
kernel's channel block (8 on AVX2): the backward pass writes past the workspace.  The result is a
heap corruption (``double free or corruption``, a segmentation fault), a hang with two or more
threads, or silently wrong gradients (uxlfoundation/oneDNN issue 6035, open).  Measured on this
project's AMD EPYC machine (``torch.backends.cpu.get_cpu_capability()`` = ``AVX2``): every input
width from 2 to 7 fails, 1 and 8 to 32 pass; stride 1, a 3×3 kernel, NCHW input with NCHW weights, and
oneDNN switched off all pass.  ``tests/onednn_6035_repro.py`` is the five-line reproduction.

A channels-last *weight* triggers it as well: torch hands oneDNN the channels-last layout when the
input or the weight is channels-last.  The stitches' downsampling convolution (1×1, stride 2) is the
one convolution of this library of that shape, so it is a :class:`GuardedConv1x1`: on the CPU, when
the fault's conditions can hold, it runs on NCHW copies of its input and weight (the gradient still
reaches the parameter) and says why once.  CUDA and wide inputs are untouched.  The guard covers
inputs narrower than 16 channels, not only 8, because AVX-512 kernels use a block of 16 and could
not be tested here.
"""
from __future__ import annotations

import warnings

import torch
from torch import nn

__all__ = ["GuardedConv1x1", "OneDNNLayoutWarning", "onednn_hazard", "GUARDED_INPUT_CHANNELS"]

# inputs narrower than this take the NCHW path on the CPU (8 confirmed on AVX2; 16 covers AVX-512's block)
GUARDED_INPUT_CHANNELS = 16


class OneDNNLayoutWarning(UserWarning):
    """A channels-last tensor was turned into NCHW on the CPU to avoid oneDNN issue 6035."""


def onednn_hazard(conv: nn.Conv2d, device: torch.device) -> bool:
    """Whether ``conv`` has the shape of oneDNN issue 6035 on ``device``: the CPU, a 1×1 kernel, a
    stride above 1, and fewer than :data:`GUARDED_INPUT_CHANNELS` input channels per group."""
    return (torch.device(device).type == "cpu" and tuple(conv.kernel_size) == (1, 1) and max(conv.stride) > 1
            and conv.in_channels // conv.groups < GUARDED_INPUT_CHANNELS)


class GuardedConv1x1(nn.Conv2d):
    """A strided 1×1 convolution (an ``nn.Conv2d``: same parameters, same state-dict keys) that on
    the CPU never hands oneDNN a channels-last input or weight narrower than
    :data:`GUARDED_INPUT_CHANNELS` channels (see the module docstring)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 2, bias: bool = False):
        super().__init__(in_channels, out_channels, 1, stride=stride, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not onednn_hazard(self, x.device):
            return super().forward(x)
        x_nchw, w_nchw = _nchw(x), _nchw(self.weight)
        if x_nchw is not x or w_nchw is not self.weight:
            warnings.warn(
                f"a channels-last tensor reached a 1×1 stride-{self.stride[0]} convolution with "
                f"{self.in_channels} input channels on the CPU; it runs in NCHW layout instead, because the "
                f"oneDNN bundled with torch {torch.__version__} can corrupt memory, hang or return wrong "
                "gradients there on AVX2 CPUs (oneDNN issue 6035; cnet_lib/core/conv_guard.py). Results are "
                "unchanged; channels-last brings no speed on the CPU, so pass NCHW tensors to silence this.",
                OneDNNLayoutWarning, stacklevel=2)
        return self._conv_forward(x_nchw, w_nchw, self.bias)


def _nchw(t: torch.Tensor) -> torch.Tensor:
    """``t`` itself when its strides are the row-major (NCHW) ones, else a row-major copy (through
    which gradients flow).  Not ``t.contiguous()``: a 1×1 weight in channels-last order counts as
    contiguous, yet torch hands it to oneDNN as channels-last."""
    expected, step = [], 1
    for size in reversed(t.shape):
        expected.append(step)
        step *= size
    if tuple(reversed(expected)) == t.stride():
        return t
    return t.clone(memory_format=torch.contiguous_format)
