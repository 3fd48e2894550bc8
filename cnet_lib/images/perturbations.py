"""The perturbations of the robustness study (:mod:`cnet_lib.images.robustness`), as plain model and
tensor transforms.

* noise on the weights, :func:`perturb_coefficients`: every coefficient tensor θ̂ of every OdeBlock
  (and the coefficients of its gain s(t)) gets Gaussian noise n with ‖n‖ = σ ‖θ̂‖ per tensor;
* post-training quantization, :func:`quantize_per_channel` and :func:`quantized_copy`: symmetric
  integers with one scale per output channel, or a 16-bit float format; :func:`model_bytes` says
  what the stored model weighs;
* noise on the inputs, :func:`input_noise`;
* the baseline :func:`identity_copy`, the model with every OdeBlock replaced by the identity.

Every transform returns a copy; random draws come from a CPU generator seeded by the caller, so a
perturbation does not depend on the device.
"""
from __future__ import annotations

import copy
import math
from typing import Callable

import torch
from torch import nn

from ..core.odeblock import OdeBlock
from ..core.validation import check_float, check_int

__all__ = ["FLOAT_FORMATS", "coefficient_tensors", "perturb_coefficients", "quantize_per_channel", "quantized_copy",
           "model_bytes", "identity_copy", "input_noise"]

FLOAT_FORMATS = {"bf16": torch.bfloat16, "fp16": torch.float16}


# --------------------------------------------------------------------------- weight noise
def coefficient_tensors(model: nn.Module) -> list[nn.Parameter]:
    """θ̂ of every OdeBlock: each coefficient tensor (shape ``(M, ...)``) and the gain's coefficients."""
    out = []
    for block in model.modules():
        if isinstance(block, OdeBlock):
            out.extend(block.coeffs.values())
            if block.skip_init:
                out.append(block.skip_gain)
    return out


@torch.no_grad()
def perturb_coefficients(model: nn.Module, sigma: float, seed: int) -> nn.Module:
    """A copy of ``model`` whose every coefficient tensor θ̂ gets Gaussian noise n with
    ‖n‖ = σ ‖θ̂‖ (drawn on the CPU from ``seed``, so the noise does not depend on the device)."""
    check_float("sigma", sigma, low=0, example=0.1)
    out = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(int(seed))
    for p in coefficient_tensors(out):
        noise = torch.randn(p.shape, generator=gen, dtype=torch.float64)
        scale = sigma * p.double().norm() / noise.norm().clamp_min(1e-30)
        p.add_((noise * scale).to(device=p.device, dtype=p.dtype))
    return out


# --------------------------------------------------------------------------- quantization
@torch.no_grad()
def quantize_per_channel(w: torch.Tensor, bits: int, channel_dim: int = 0) -> torch.Tensor:
    """``w`` rounded to ``bits``-bit symmetric integers with one scale per slice along
    ``channel_dim``: s_c = max|w_c| / (2^(bits-1) − 1), q = clamp(round(w / s_c)) ∈ [−(2^(bits-1) − 1),
    2^(bits-1) − 1], returned dequantized (q · s_c), in ``w``'s dtype.  A slice of zeros stays zero."""
    check_int("bits", bits, low=2, high=16, example=8)
    levels = 2 ** (bits - 1) - 1
    dims = [d for d in range(w.dim()) if d != channel_dim % max(w.dim(), 1)]
    amax = w.abs().amax(dim=dims, keepdim=True) if dims else w.abs()
    scale = amax / levels
    q = torch.where(scale > 0, torch.round(w / torch.where(scale > 0, scale, 1)), torch.zeros_like(w))
    return (q.clamp(-levels, levels) * scale).to(w.dtype)


def _rows_of(p: torch.Tensor, is_coefficient: bool) -> torch.Tensor:
    """``p`` as a matrix with one row per quantization scale: a coefficient tensor ``(M, out, ...)``
    gets a scale per (β, output channel), ``(M, C)`` one per β, a plain weight ``(out, ...)`` one per
    output channel, any other vector one for the whole tensor."""
    if is_coefficient and p.dim() >= 3:
        return p.reshape(p.shape[0] * p.shape[1], -1)
    if (is_coefficient and p.dim() == 2) or (not is_coefficient and p.dim() >= 2):
        return p.reshape(p.shape[0], -1)
    return p.reshape(1, -1)


@torch.no_grad()
def quantized_copy(model: nn.Module, fmt) -> nn.Module:
    """A copy of ``model`` with every weight stored in ``fmt``: an int bit width (symmetric, one
    scale per output channel: :func:`quantize_per_channel`) or ``"bf16"`` / ``"fp16"`` (rounded to
    that float format).  Computation stays in the model's dtype; BatchNorm statistics are kept."""
    if isinstance(fmt, str) and fmt not in FLOAT_FORMATS:
        raise ValueError(f"fmt must be a bit width (e.g. 8) or one of {', '.join(FLOAT_FORMATS)}; got {fmt!r}")
    out = copy.deepcopy(model)
    coefficient_ids = {id(p) for p in coefficient_tensors(out)}
    for p in out.parameters():
        if isinstance(fmt, str):
            p.copy_(p.to(FLOAT_FORMATS[fmt]).to(p.dtype))
        else:
            rows = _rows_of(p, id(p) in coefficient_ids)
            p.copy_(quantize_per_channel(rows, fmt, 0).reshape(p.shape))
    return out


def model_bytes(model: nn.Module, fmt=None) -> int:
    """Bytes of ``model``'s weights stored in ``fmt`` (None: as they are; a bit width: the packed
    integers plus one float32 scale per row of :func:`quantized_copy`; ``"bf16"``/``"fp16"``: 2
    bytes each), plus its buffers (BatchNorm statistics, kept as they are)."""
    coefficient_ids = {id(p) for p in coefficient_tensors(model)}
    total = sum(b.numel() * b.element_size() for b in model.buffers())
    for p in model.parameters():
        if fmt is None:
            total += p.numel() * p.element_size()
        elif isinstance(fmt, str):
            total += 2 * p.numel()
        else:
            total += math.ceil(p.numel() * fmt / 8) + 4 * _rows_of(p, id(p) in coefficient_ids).shape[0]
    return total


def identity_copy(model: nn.Module) -> nn.Module:
    """A copy of ``model`` with every OdeBlock replaced by the identity: the baseline that says how
    much the blocks are worth at all."""
    out = copy.deepcopy(model)
    out.blocks = nn.ModuleList(nn.Identity() for _ in out.blocks)
    return out


def input_noise(tau: float, seed: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """Adds N(0, τ²) noise to a normalised batch, drawn on the CPU from ``seed`` batch after batch."""
    check_float("input noise", tau, low=0, example=0.1)
    gen = torch.Generator().manual_seed(int(seed))

    def add(xb: torch.Tensor) -> torch.Tensor:
        return xb + tau * torch.randn(xb.shape, generator=gen).to(device=xb.device, dtype=xb.dtype)

    return add
