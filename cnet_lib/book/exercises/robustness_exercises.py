"""Exercise of the chapter "Beyond the paper: robustness and quantization": per-channel
symmetric quantization of a weight tensor (:func:`check_quantize_per_channel`)."""
from __future__ import annotations

from typing import Callable, Optional

import torch

from ...images import paired_stats as image_stats
from ...images import perturbations as image_perturbations
from ...images import robustness_conditions as image_robustness
from .framework import Case, Forbidden, check

__all__ = ["reference_quantize_per_channel", "check_quantize_per_channel", "QUANTIZE_HINTS"]

QUANTIZE_HINTS = (
    "every output channel w[c] (a slice along the first dimension, of any shape) gets its own scale, "
    "set by its largest weight in magnitude, so that this weight lands exactly on the last level.",
    "L = 2**(bits - 1) - 1 levels on each side; s_c = max |w[c]| / L; q = round(w / s_c) lies in [-L, L]; "
    "return q * s_c. Reduce over every dimension but the first (amax with keepdim=True broadcasts back).",
    "a channel of zeros has s_c = 0: do not divide by it, return zeros there (torch.where, or a scale of 1 "
    "where s_c = 0). Return a tensor of w's shape and dtype.",
)


def reference_quantize_per_channel(w: torch.Tensor, bits: int) -> torch.Tensor:
    """``w`` rounded to ``bits``-bit symmetric integers, one scale per output channel, dequantized."""
    return image_perturbations.quantize_per_channel(w, bits, channel_dim=0)


def _cases() -> list:
    g = torch.Generator().manual_seed(11)
    spread = torch.tensor([1e-3, 1.0, 30.0, 0.25], dtype=torch.float64)
    linear = torch.randn(4, 6, generator=g, dtype=torch.float64) * spread[:, None]
    conv = torch.randn(3, 2, 3, 3, generator=g, dtype=torch.float64) * spread[:3, None, None, None]
    with_zero = torch.randn(3, 5, generator=g, dtype=torch.float64)
    with_zero[1] = 0.0
    return [
        Case((linear, 8), label="a (4, 6) float64 weight whose rows differ in scale by 10⁴, 8 bits"),
        Case((linear, 4), label="the same weight, 4 bits"),
        Case((linear, 2), label="the same weight, 2 bits (levels -1, 0, 1)"),
        Case((conv, 4), label="a (3, 2, 3, 3) convolution weight, 4 bits: one scale per output channel"),
        Case((with_zero, 8), label="a (3, 5) weight whose second row is all zeros, 8 bits"),
        Case((linear.float(), 8), label="a float32 weight, 8 bits: the result keeps float32"),
    ]


def _same(got, expected) -> bool:
    return (isinstance(got, torch.Tensor) and got.shape == expected.shape and got.dtype == expected.dtype
            and torch.allclose(got, expected, rtol=1e-6, atol=1e-12))


def check_quantize_per_channel(student_fn: Callable, hint: Optional[int] = None) -> bool:
    """Check ``quantize_per_channel(w, bits)`` on weights of several shapes, scales and bit widths."""
    return check(student_fn, reference_quantize_per_channel, _cases(), name="quantize_per_channel",
                 hints=QUANTIZE_HINTS, hint=hint, checker="check_quantize_per_channel",
                 forbidden=[Forbidden(modules=(image_robustness, image_perturbations, image_stats),
                                      why="the robustness study quantizes for you; write the three lines yourself.")],
                 compare=_same)
