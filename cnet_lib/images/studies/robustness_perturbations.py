"""The perturbations of the robustness study (:mod:`cnet_lib.images.studies.robustness_measure`), as plain model and
tensor transforms.

* noise on the weights, :func:`perturb_coefficients`: every coefficient tensor θ̂ of every OdeBlock
  (and the coefficients of its gain s(t)) gets Gaussian noise n with ‖n‖ = σ ‖θ̂‖ per tensor;
* post-training quantization to symmetric integers with one scale per output channel
  (:func:`quantize_per_channel`), in two schemes that say exactly what they round:
  :func:`quantize_theta` (θ̂ only, the scope of the weight noise) and :func:`quantize_weights` (every
  convolution and linear weight, the deployment baseline); :func:`float_format_copy` stores every
  parameter in a 16-bit float format; :func:`model_bytes` says what the stored model weighs;
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

from ...core.odeblock import OdeBlock
from ...core.validation import check_float, check_int

__all__ = ["FLOAT_FORMATS", "QUANTIZATION_SCHEMES", "coefficient_tensors", "perturb_coefficients", "quantize_per_channel",
           "quantize_theta", "quantize_weights", "float_format_copy", "model_bytes", "identity_copy", "input_noise"]

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
        scale = sigma * p.double().norm().cpu() / noise.norm().clamp_min(1e-30)  # on the CPU, beside the noise
        p.add_((noise * scale).to(device=p.device, dtype=p.dtype))
    return out


# --------------------------------------------------------------------------- quantization
QUANTIZATION_SCHEMES = ("theta", "weights")
"""The integer quantization schemes (:func:`quantize_theta`, :func:`quantize_weights`)."""


@torch.no_grad()
def quantize_per_channel(w: torch.Tensor, bits: int, channel_dim: int = 0) -> torch.Tensor:
    """``w`` rounded to ``bits``-bit symmetric integers with one scale per slice along
    ``channel_dim``: s_c = max|w_c| / L with L = 2^(bits-1) − 1, q = clamp(round(w / s_c), −L, L),
    returned dequantized (q · s_c), in ``w``'s dtype.  An entry that rounds to ±L is returned as
    ±max|w_c| (the value q · s_c stands for, without the rounding of the product), so each slice's
    largest entry is kept exactly and a slice of one entry, or of zeros, comes out unchanged."""
    check_int("bits", bits, low=2, high=16, example=8)
    levels = 2 ** (bits - 1) - 1
    dims = [d for d in range(w.dim()) if d != channel_dim % max(w.dim(), 1)]
    amax = w.abs().amax(dim=dims, keepdim=True) if dims else w.abs()
    scale = amax / levels
    q = torch.where(scale > 0, torch.round(w / torch.where(scale > 0, scale, 1)), torch.zeros_like(w)).clamp(-levels, levels)
    return torch.where(q.abs() == levels, torch.sign(q) * amax, q * scale).to(w.dtype)


def _quantized_rows(model: nn.Module, scheme: str) -> dict:
    """``{id(parameter): (parameter, rows)}`` of the parameters ``scheme`` quantizes, ``rows`` being the
    number of scales (one per (β, output channel) of a coefficient tensor, one per output channel of
    any other weight)."""
    if scheme not in QUANTIZATION_SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(QUANTIZATION_SCHEMES)}; got {scheme!r}")
    coefficients = {id(p): p for p in coefficient_tensors(model)}
    out = {i: (p, p.shape[0] * p.shape[1]) for i, p in coefficients.items() if p.dim() >= 3}  # θ̂ of conv weights
    if scheme == "weights":
        out.update({id(p): (p, p.shape[0]) for p in model.parameters() if p.dim() >= 2 and id(p) not in coefficients})
    return out


@torch.no_grad()
def _quantize(model: nn.Module, scheme: str, bits: int) -> nn.Module:
    check_int("bits", bits, low=2, high=16, example=4)
    out = copy.deepcopy(model)
    for p, rows in _quantized_rows(out, scheme).values():
        p.copy_(quantize_per_channel(p.reshape(rows, -1), bits, 0).reshape(p.shape))
    return out


def quantize_theta(model: nn.Module, bits: int) -> nn.Module:
    """Scheme (a), **θ̂ only**: a copy of ``model`` whose OdeBlocks' convolution coefficients θ̂
    (shape ``(M, C_out, C_in, k, k)``) are rounded to ``bits``-bit symmetric integers with one scale
    per basis function β and output channel (:func:`quantize_per_channel` on the ``M·C_out`` rows).
    Everything else stays float32: the blocks' other coefficients (their BatchNorm γ/β, shape
    ``(M, C)``, and the gain s(t)'s, shape ``(M,)``: with one scale per (β, channel) they would come
    out unchanged), the stem, the stitches, the head and every buffer.  The same θ̂ as
    :func:`perturb_coefficients` perturbs, less the vectors that per-channel rounding cannot change."""
    return _quantize(model, "theta", bits)


def quantize_weights(model: nn.Module, bits: int) -> nn.Module:
    """Scheme (b), **weight-only post-training quantization** (the usual deployment baseline): a copy
    of ``model`` whose every convolution and linear weight is rounded to ``bits``-bit symmetric
    integers with one scale per output channel — the OdeBlocks' convolution coefficients per (β,
    output channel) as in :func:`quantize_theta`, the stem's, the stitches' and the classifier's
    weights per output channel.  Every 1-D tensor (biases, BatchNorm γ/β inside and outside the
    blocks, the gains' coefficients) and every buffer stays float32.

    (A scheme (c) that folds BatchNorm into the convolutions first is not offered: in the
    pre-activation unit BN–ReLU–conv–BN–ReLU–conv only the second BatchNorm directly follows a
    convolution (the first follows the sum of the skip and the residual), and inside the blocks both
    change with t.)"""
    return _quantize(model, "weights", bits)


@torch.no_grad()
def float_format_copy(model: nn.Module, fmt: str) -> nn.Module:
    """A copy of ``model`` with **every parameter** (weights and vectors) rounded to the 16-bit float
    format ``fmt`` (``"bf16"`` or ``"fp16"``) and back; buffers kept; computation in float32."""
    if fmt not in FLOAT_FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FLOAT_FORMATS)}; got {fmt!r}")
    out = copy.deepcopy(model)
    for p in out.parameters():
        p.copy_(p.to(FLOAT_FORMATS[fmt]).to(p.dtype))
    return out


def model_bytes(model: nn.Module, scheme: "str | None" = None, level=None) -> int:
    """Bytes of ``model`` stored as a scheme leaves it: ``None`` as it is; ``"theta"`` or
    ``"weights"`` with ``level`` bits (each quantized tensor as packed integers plus one float32 scale
    per row, every other parameter in float32); ``"float"`` with ``level`` ``"bf16"``/``"fp16"`` (2
    bytes per parameter).  Buffers (BatchNorm statistics) are counted as they are."""
    total = sum(b.numel() * b.element_size() for b in model.buffers())
    if scheme is None:
        return total + sum(p.numel() * p.element_size() for p in model.parameters())
    if scheme == "float":
        if level not in FLOAT_FORMATS:
            raise ValueError(f"level must be one of {', '.join(FLOAT_FORMATS)} for scheme 'float'; got {level!r}")
        return total + sum(2 * p.numel() for p in model.parameters())
    check_int("bits", level, low=2, high=16, example=4)
    quantized = _quantized_rows(model, scheme)
    for p in model.parameters():
        if id(p) in quantized:
            total += math.ceil(p.numel() * level / 8) + 4 * quantized[id(p)][1]
        else:
            total += 4 * p.numel()
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
