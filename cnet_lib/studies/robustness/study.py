"""The robustness study in numbers: is a ContinuousNet robust to weight noise, to rounded weights, to input noise?

The seed paper expects, without measuring it, that ContinuousNets trained with refinement are "more robust with
respect to parameter perturbations" and therefore "well-suited to compression and other quantization strategies".
This module measures it for any trained ContinuousNet and any manifestation, on the same test images for every
model, and judges it; its tables, sentences and figures are :mod:`.show`.  In order:

1. **the grid** of each run-size preset (:data:`GRIDS`, :func:`preset_grid`, checked by :func:`check_grid`);
2. **the perturbations**, as plain model and tensor transforms, each returning a copy: noise on the weights
   (:func:`perturb_coefficients`: every coefficient tensor θ̂ of every OdeBlock, and the coefficients of its gain
   s(t), gets Gaussian noise n with ‖n‖ = σ ‖θ̂‖ per tensor), post-training quantization to symmetric integers
   with one scale per output channel (:func:`quantize_per_channel`) in two schemes, θ̂ only
   (:func:`quantize_theta`) and every convolution and linear weight (:func:`quantize_weights`), every parameter
   in a 16-bit float format (:func:`float_format_copy`) with the model's size (:func:`model_bytes`), noise on the
   inputs (:func:`input_noise`) and the baseline without blocks (:func:`identity_copy`); random draws come from a
   CPU generator seeded by the caller, so a perturbation does not depend on the device;
3. **the measurement**: :func:`robustness_rows` evaluates one model under every condition of a grid, keeping the
   per-image outcome (right or wrong) of every draw (:class:`Condition`), so that two conditions are compared *on
   the same images*; :func:`robustness_study` does it for several models and graphs; :func:`conditions_to_json`
   stores it;
4. **the trained runs' study**, computed once and cached beside the first run's checkpoint through the one study
   runner (:func:`run`, keyed by every checkpoint's SHA-256, the grid, the graphs, the test split, the data set
   and the device type), or read from what ships with the book;
5. **the verdict**: one primary test fixed in advance (:data:`PRIMARY`), the other rows secondary and
   Holm-adjusted within their family (:func:`judge`), the noise-draw rule of the analysis plan
   (:data:`NOISE_DRAWS`, :func:`draw_spread`);
6. **over training seeds**, the trained model as the unit (:func:`robustness_over_seeds`, :func:`over_seeds`).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

import torch
from torch import nn

from ...images.runs.image_presets import short_hash
from ...images.runs.run_loading import StudyRun, study_device
from ...images.runs.study_inputs import study_data
from ...images.training.evaluation import Evaluator
from ...core.odeblock import OdeBlock
from ...core.validation import check_float, check_int, check_ints
from ...runtime.device import full_float32
from ...runtime.settings import select_preset
from ..runner import (Described, StudyFile, announce_recompute, cached_study, check_study_inputs, seed_studies,
    shipped_stand_ins)
from ..stats import holm, mcnemar, paired_difference, spread, welch, with_seed_variance

__all__ = [
    # the grid
    "GRIDS", "DEFAULT_GRID", "preset_grid", "check_grid",
    # the perturbations
    "FLOAT_FORMATS", "QUANTIZATION_SCHEMES", "coefficient_tensors", "perturb_coefficients", "quantize_per_channel",
    "quantize_theta", "quantize_weights", "float_format_copy", "model_bytes", "identity_copy", "input_noise",
    # the measurement
    "KINDS", "condition_name", "Condition", "robustness_rows", "robustness_study", "summarise", "pack_outcomes",
    "unpack_outcomes", "conditions_to_json", "conditions_from_json",
    # the trained runs' study
    "PREFIX", "GRAPHS", "cache_path", "run", "study_file",
    # the verdict
    "PrimaryTest", "PRIMARY", "FAMILIES", "RANDOM_KINDS", "NOISE_DRAWS", "WIDE_SD", "MC_HALF_WIDTH", "draw_spread",
    "OUTCOMES", "decide", "Judgement", "judge",
    # over training seeds
    "SeedRobustness", "robustness_over_seeds", "over_seeds",
]


# --------------------------------------------------------------------------- the grid
GRIDS: dict[str, dict[str, Any]] = {
    # two draws of each random perturbation: with one, the verdict marks it unmeasured
    "smoke": dict(sigmas=(0.1,), seeds=(0, 1), bits=(8, 4), quantization=("theta", "weights"), float_formats=("bf16",),
                  input_noise=(0.2,), noise_seeds=(0, 1)),
    # the noise draws of the analysis plan's rule (NOISE_DRAWS): 16 per weight-noise level, 8 per input-noise level
    "cpu": dict(sigmas=(0.03, 0.1, 0.3), seeds=tuple(range(16)), bits=(8, 4), quantization=("theta", "weights"),
                float_formats=("bf16", "fp16"), input_noise=(0.1, 0.3), noise_seeds=tuple(range(8))),
    # sized for three training seeds, each with this study: 3 σ × 3 draws and 2 τ × 2 draws, about half the
    # evaluations of the paper preset's grid (fewer draws than the rule asks: its rows say so)
    "gpu": dict(sigmas=(0.03, 0.1, 0.3), seeds=(0, 1, 2), bits=(8, 4), quantization=("theta", "weights"),
                float_formats=("bf16", "fp16"), input_noise=(0.1, 0.3), noise_seeds=(0, 1)),
    "paper": dict(sigmas=(0.01, 0.03, 0.1, 0.3), seeds=tuple(range(16)), bits=(8, 4), quantization=("theta", "weights"),
                  float_formats=("bf16", "fp16"), input_noise=(0.1, 0.2, 0.4), noise_seeds=tuple(range(8))),
}
"""The conditions each run-size preset evaluates: weight-noise levels σ (``sigmas``) and their draws (``seeds``),
integer bit widths (``bits``) for each quantization scheme (``quantization``), 16-bit float formats
(``float_formats``), input-noise levels τ (``input_noise``) and their draws (``noise_seeds``).  The cache key holds
the grid, so a change here makes the shipped studies stale (``cnet ship <preset> --restudy``)."""

DEFAULT_GRID = dict(sigmas=(0.01, 0.03, 0.1, 0.3), seeds=(0, 1, 2, 3, 4, 5), bits=(8, 4), quantization=("theta", "weights"),
                    float_formats=("bf16", "fp16"), input_noise=(0.1, 0.2, 0.4), noise_seeds=(0, 1))
"""The grid of a model that belongs to no preset (``cnet robustness`` on any checkpoint), and the keys a partial
grid leaves out."""

_LEVELS = {"sigmas": ("seeds", "weight noise"), "input_noise": ("noise_seeds", "input noise")}


def preset_grid(preset: str) -> dict:
    """The robustness grid of ``preset`` (``ctx.preset`` in a chapter): :data:`GRIDS`."""
    return dict(select_preset(GRIDS, preset))


def check_grid(grid: Mapping[str, Any]) -> dict:
    """``grid`` as a dict, after checking every key it holds among ``sigmas``, ``seeds``, ``input_noise``,
    ``noise_seeds``, ``bits``, ``quantization`` and ``float_formats``: a level that is not a finite number >= 0, a
    seed or a bit width that is not an integer, fewer than 2 bits, an unknown scheme or format, and a random
    perturbation without a seed to draw it with raise a TypeError or ValueError that names the key.  Keys it does not
    know are left to the study."""
    grid = dict(grid)
    for levels, (seeds, what) in _LEVELS.items():
        if levels in grid:
            try:
                items = list(grid[levels])
            except TypeError:
                raise TypeError(f"{levels} must be a sequence of numbers, got {grid[levels]!r} "
                                f"(e.g. {levels}=(0.1, 0.3))") from None
            for i, v in enumerate(items):
                check_float(f"{levels}[{i}]", v, low=0, example=0.1)
        if seeds in grid:
            check_ints(seeds, grid[seeds], example=(0, 1, 2))
        if grid.get(levels) and seeds in grid and not list(grid[seeds]):
            raise ValueError(f"{seeds} is empty, but {what} is drawn at random for every level of {levels}: give at "
                             f"least one seed (e.g. {seeds}=(0, 1, 2)), or no levels ({levels}=())")
    if "bits" in grid:
        check_ints("bits", grid["bits"], low=2, example=(8, 4))
    for key, known in (("quantization", QUANTIZATION_SCHEMES), ("float_formats", tuple(FLOAT_FORMATS))):
        for i, value in enumerate(grid.get(key, ())):
            if value not in known:
                raise ValueError(f"{key}[{i}] must be one of {', '.join(known)}, got {value!r} (e.g. {key}={known!r})")
    return grid


# --------------------------------------------------------------------------- the perturbations
FLOAT_FORMATS = {"bf16": torch.bfloat16, "fp16": torch.float16}

QUANTIZATION_SCHEMES = ("theta", "weights")
"""The integer quantization schemes (:func:`quantize_theta`, :func:`quantize_weights`)."""


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


# --------------------------------------------------------------------------- the measurement
KINDS = {"clean": "clean", "weight_noise": "weight noise σ = {}", "quantized_theta": "θ̂ in {}",
         "quantized_weights": "all weights in {}", "float_format": "every parameter in {}",
         "input_noise": "input noise τ = {}", "identity": "blocks removed",
         "identity_input_noise": "blocks removed, input noise τ = {}"}
"""Every kind of condition: what it perturbs, in words with a place for its level."""
QUANTIZE = {"quantized_theta": quantize_theta, "quantized_weights": quantize_weights}


def condition_name(kind: str, level) -> str:
    """A condition in words: ``weight noise σ = 0.1``, ``θ̂ in 4 bits``, ``every parameter in bf16``."""
    if kind not in KINDS:
        raise ValueError(f"unknown condition kind {kind!r}; known: {', '.join(KINDS)}")
    if level is None:
        return KINDS[kind]
    return KINDS[kind].format(f"{level} bits" if isinstance(level, int) else level if isinstance(level, str) else f"{level:g}")


@dataclass
class Condition:
    """One evaluated condition: its kind and level, and the per-image outcomes of its seeds."""

    kind: str  # one of KINDS
    level: object  # σ, bits / float format, τ, or None
    correct: list = field(default_factory=list)  # one bool tensor per seed
    bytes: Optional[int] = None

    @property
    def mean_correct(self) -> torch.Tensor:
        return torch.stack([c.double() for c in self.correct]).mean(0)

    def accuracies(self) -> list[float]:
        return [c.double().mean().item() for c in self.correct]


def robustness_rows(model: nn.Module, x: torch.Tensor, y: torch.Tensor, mean: torch.Tensor, std: torch.Tensor, *,
                    grid: Optional[Mapping] = None, batch_size: int = 500, evaluator: Optional[Evaluator] = None,
                    baselines: bool = True, progress: Optional[Callable[[str], None]] = None) -> list[Condition]:
    """Every condition of ``grid`` (default :data:`DEFAULT_GRID`) for ``model`` in its current
    manifestation, on the uint8 test images ``x`` (on the model's device).  ``baselines`` adds the
    model without its blocks, clean and under the same input noise (the same for every graph of
    one model, so a second graph of a model can leave it out)."""
    g = check_grid({**DEFAULT_GRID, **(grid or {})})
    ev = evaluator or Evaluator()
    conds: list[Condition] = []

    def measure(kind, level, m, transform=None):
        if progress is not None:
            progress(f"{kind} {level}")
        hits, _ = ev.correct(m, x, y, mean, std, batch_size, transform)
        return hits.cpu()

    conds.append(Condition("clean", None, [measure("clean", None, model)], model_bytes(model)))
    for sigma in g["sigmas"]:
        conds.append(Condition("weight_noise", sigma,
                               [measure("weight_noise", sigma, perturb_coefficients(model, sigma, s)) for s in g["seeds"]]))
    for scheme in g["quantization"]:
        kind = "quantized_" + scheme
        for bits in g["bits"]:
            conds.append(Condition(kind, bits, [measure(kind, bits, QUANTIZE[kind](model, bits))],
                                   model_bytes(model, scheme, bits)))
    for fmt in g["float_formats"]:
        conds.append(Condition("float_format", fmt, [measure("float_format", fmt, float_format_copy(model, fmt))],
                               model_bytes(model, "float", fmt)))
    for tau in g["input_noise"]:
        conds.append(Condition("input_noise", tau, [measure("input_noise", tau, model, input_noise(tau, s))
                                                    for s in g["noise_seeds"]]))
    if not baselines:
        return conds
    ident = identity_copy(model)
    conds.append(Condition("identity", None, [measure("identity", None, ident)], model_bytes(ident)))
    for tau in g["input_noise"]:
        conds.append(Condition("identity_input_noise", tau, [measure("identity_input_noise", tau, ident,
                                                                     input_noise(tau, s)) for s in g["noise_seeds"]]))
    return conds


def summarise(conds: Sequence[Condition]) -> list[dict]:
    """Plain rows of a study: kind, level, mean and spread of the accuracy over seeds, bytes."""
    rows = []
    for c in conds:
        accs = c.accuracies()
        rows.append({"kind": c.kind, "level": c.level, "accuracy": sum(accs) / len(accs), "min": min(accs),
                     "max": max(accs), "std": float(torch.tensor(accs).std()) if len(accs) > 1 else 0.0,
                     "seeds": len(accs), "bytes": c.bytes})
    return rows


def robustness_study(models: Mapping[str, nn.Module], x, y, mean, std, *, graphs: Optional[Mapping[str, tuple]] = None,
                     grid: Optional[Mapping] = None, batch_size: int = 500,
                     progress: Optional[Callable[[str], None]] = None) -> dict:
    """The study of several trained models on the same images: ``{label: [Condition]}``.

    ``graphs`` maps a label to ``(model name, scheme, n_steps)``: the model evaluated in that
    manifestation (default: each model on its own graph, labelled by its name), e.g. the Euler
    model both on its own graph and with RK4-classic."""
    graphs = dict(graphs or {name: (name, None, None) for name in models})
    out, seen = {}, set()
    for label, (name, scheme, n_steps) in graphs.items():
        model = models[name]
        with model.manifested(scheme, n_steps):
            out[label] = robustness_rows(model, x, y, mean, std, grid=grid, batch_size=batch_size, baselines=name not in seen,
                                         progress=(lambda what, label=label: progress(f"{label}: {what}")) if progress else None)
        seen.add(name)
    return out


def pack_outcomes(correct: torch.Tensor) -> str:
    """Per-image outcomes (bool) as a compact hex string (8 images per byte)."""
    bits = correct.bool().cpu().tolist()
    out = bytearray()
    for i in range(0, len(bits), 8):
        byte = 0
        for j, b in enumerate(bits[i:i + 8]):
            byte |= int(b) << j
        out.append(byte)
    return out.hex()


def unpack_outcomes(text: str, n: int) -> torch.Tensor:
    """The inverse of :func:`pack_outcomes` for ``n`` images."""
    data = bytes.fromhex(text)
    return torch.tensor([(data[i // 8] >> (i % 8)) & 1 for i in range(n)], dtype=torch.bool)


def conditions_to_json(conds: Sequence[Condition]) -> list[dict]:
    """Plain JSON values of a study (summary numbers and the packed per-image outcomes)."""
    return [{"kind": c.kind, "level": c.level, "bytes": c.bytes, "n": int(c.correct[0].numel()),
             "accuracies": c.accuracies(), "outcomes": [pack_outcomes(x) for x in c.correct]} for c in conds]


def conditions_from_json(rows: Sequence[Mapping]) -> list[Condition]:
    return [Condition(r["kind"], r["level"], [unpack_outcomes(o, r["n"]) for o in r["outcomes"]], r.get("bytes"))
            for r in rows]


# --------------------------------------------------------------------------- the trained runs' study
PREFIX = "robustness-"
"""The cache file's name starts with this (``cnet ship`` copies such files)."""

GRAPHS = {"rk4_refined": ("rk4_refined", None, None), "euler_fixed": ("euler_fixed", None, None),
          "euler_fixed on rk4_classic": ("euler_fixed", "rk4_classic", None)}
"""The graphs of the trained runs' study: each model on its own graph, and the Euler model on a higher-order graph
(RK4-classic at its own N_t)."""

DESCRIBED = Described("the robustness study", "robustness study", "computing the robustness study")


def cache_path(runs: Mapping[str, StudyRun], grid: Mapping, device) -> tuple:
    """``(path, key)`` of the cached study of ``runs`` over ``grid`` on ``device``; the file lives beside the first
    run's checkpoint."""
    names = list(runs)
    first = runs[names[0]]
    graphs = {k: v for k, v in GRAPHS.items() if v[0] in runs}
    key = {"checkpoints": {n: runs[n].checkpoint_digest[:12] for n in names}, "grid": dict(grid), "graphs": graphs,
           "n_test": first.config.n_test, "seed": first.config.seed, "dataset": first.config.dataset,
           "device": device.type}
    return first.out_dir / f"{PREFIX}{short_hash(key, 12)}.json", key


def run(runs: Mapping[str, StudyRun], grid: Optional[dict] = None, *, device=None, verbose: bool = True,
        progress: bool = False, batch_size: int = 500) -> dict:
    """The study of the trained ``runs`` on the same test images (their graphs: :data:`GRAPHS`), computed once and
    cached beside the first run's checkpoint, keyed by every checkpoint's SHA-256, the grid, the graphs, the test
    split and the device, or read from what ships with the book: ``{label: [Condition]}``.  ``grid`` defaults to the
    preset's (:func:`preset_grid`) and is checked first (:func:`check_grid`); ``device`` defaults to the session's;
    ``batch_size`` is what to lower when the device runs out of memory."""
    names = check_study_inputs(runs)
    check_int("batch_size", batch_size, low=1, example=500)
    first = runs[names[0]]
    g = check_grid(grid if grid is not None else preset_grid(first.config.preset))
    graphs = {k: v for k, v in GRAPHS.items() if v[0] in runs}
    dev = study_device(first, device)
    path, key = cache_path(runs, g, dev)

    def compute():
        announce_recompute(first, PREFIX, DESCRIBED.what)
        data = study_data(first.config, first.settings, dev, with_train=False)
        say = (lambda what: print(f"  {what}", flush=True)) if progress else None
        with full_float32():  # the chapter says float32: no TF32 convolutions on a GPU either
            study = robustness_study({n: runs[n].model.to(dev) for n in names}, data.test_x, data.test_y, data.mean,
                                     data.std, graphs=graphs, grid=g, batch_size=batch_size, progress=say)
        return study, {"n_test": len(data.test_y), "tf32": False,
                       "study": {k: conditions_to_json(v) for k, v in study.items()}}

    done = cached_study(StudyFile(path, key), compute, DESCRIBED, fields=("study",), device=dev, batch_size=batch_size,
                        read=lambda record: {label: conditions_from_json(rows) for label, rows in record["study"].items()},
                        also=shipped_stand_ins(first, PREFIX, key), verbose=verbose)
    if verbose and done.computed:
        print(f"robustness study: {sum(len(c.correct) for v in done.value.values() for c in v)} evaluations on "
              f"{done.record['n_test']} held-out images in {done.record['seconds']:.1f} s"
              + (" (kept for the next time)" if done.kept else ""))
    return done.value


def study_file(runs: Mapping[str, StudyRun]) -> Path:
    """The study of ``runs`` with their preset's grid, on the session's device, computed (or read from its cache) with
    its progress said, and the file it is kept in beside the first run: what ``cnet ship`` ships."""
    run(runs, verbose=True, progress=True)
    first = next(iter(runs.values()))
    return cache_path(runs, preset_grid(first.config.preset), study_device(first))[0]


# --------------------------------------------------------------------------- the verdict
@dataclass(frozen=True)
class PrimaryTest:
    """The test that decides: condition ``(kind, level)``, the minimum effect in points, and α."""

    kind: str
    level: object
    min_effect: float
    alpha: float

    @property
    def name(self) -> str:
        return condition_name(self.kind, self.level)


PRIMARY = PrimaryTest("quantized_theta", 4, min_effect=1.0, alpha=0.05)
"""The one test that decides what the book says about the paper's expectation, fixed before the study's numbers under
it were computed: θ̂ quantized to 4 bits, the Euler model's drop minus the RK4 model's, paired on the same test
images; the expectation is *supported* when that difference is significantly above zero (two-sided α = 0.05) **and**
at least 1 point (``book/measurements.md``, *Beyond the paper*)."""

FAMILIES = {"weight noise": ("weight_noise",), "quantization": ("quantized_theta", "quantized_weights", "float_format"),
            "input noise": ("input_noise",)}
"""The families of secondary tests; Holm's adjustment runs within each.  A kind in no family is not compared."""

RANDOM_KINDS = ("weight_noise", "input_noise")
"""Perturbations drawn at random: they need at least two seeds per model to be judged."""

NOISE_DRAWS = {"weight_noise": 16, "input_noise": 8}
"""Draws per level that a random perturbation's row needs: the rule of the manifestation study's analysis plan
(``cnet_lib/studies/manifestation_factorial/analysis_plan.md``, *Robustness study: noise draws*): with them the 95%
Monte-Carlo half-width of a row's mean accuracy is at most 1 point wherever the accuracy's standard deviation across
draws is at most :data:`WIDE_SD`."""

WIDE_SD = {"weight_noise": 0.018, "input_noise": 0.01}
"""The standard deviation of accuracy across draws (a fraction) above which a row is *wide* (the same plan): shown
with its own, wider interval and said to be wide."""

MC_HALF_WIDTH = 1.0
"""The plan's target for the 95% Monte-Carlo half-width of a row's mean accuracy, in points: a row with fewer draws
than :data:`NOISE_DRAWS` asks is wide when its half-width is larger (with the rule's draws the standard deviations of
:data:`WIDE_SD` keep it within this)."""

OUTCOMES = ("supported", "contradicted", "equivalent", "below minimum", "inconclusive", "unmeasured")
"""The primary outcomes, in this order of precedence: ``supported`` (95% interval above 0, estimate ≥ the minimum
effect), ``contradicted`` (interval below 0, estimate ≤ −the minimum effect), ``below minimum`` (significant, but the
estimate smaller than the minimum effect), ``equivalent`` (not significant, and the whole interval inside ±the minimum
effect), ``inconclusive`` (none of these), ``unmeasured``.  The 95% interval and α = 0.05 are two faces of the same
two-sided test."""


def draw_spread(accuracies: Sequence[float], kind: str) -> dict:
    """How far one model's row of a random perturbation (``kind``) rests on its draws: ``draws`` (how many), ``rule``
    (how many :data:`NOISE_DRAWS` asks), ``sd`` (standard deviation of the accuracy across draws, a fraction; None with
    one draw), ``half_width`` (the 95% Monte-Carlo half-width of the mean, t_{0.975, draws−1} × sd / √draws, in points)
    and ``wide``: sd above :data:`WIDE_SD`, or, with fewer draws than the rule asks, a half-width above
    :data:`MC_HALF_WIDTH`."""
    from scipy import stats  # imported here: scipy.stats takes a moment to import

    k = len(accuracies)
    if kind not in NOISE_DRAWS:
        raise ValueError(f"{kind!r} is not drawn at random; the random kinds are {', '.join(NOISE_DRAWS)}")
    if k < 2:
        return {"draws": k, "rule": NOISE_DRAWS[kind], "sd": None, "half_width": None, "wide": False}
    sd = float(torch.tensor(list(accuracies), dtype=torch.float64).std(unbiased=True))
    half = 100 * float(stats.t.ppf(0.975, k - 1)) * sd / math.sqrt(k)
    return {"draws": k, "rule": NOISE_DRAWS[kind], "sd": sd, "half_width": half,
            "wide": sd > WIDE_SD[kind] or (k < NOISE_DRAWS[kind] and half > MC_HALF_WIDTH)}


def decide(diff: float, ci95: Sequence[float], min_effect: float) -> str:
    """The primary outcome (:data:`OUTCOMES`) of a difference ``diff`` (B's drop − A's, points) with its 95% interval."""
    low, high = ci95
    if low > 0 and diff >= min_effect:
        return "supported"
    if high < 0 and diff <= -min_effect:
        return "contradicted"
    if low > 0 or high < 0:
        return "below minimum"
    if -min_effect < low and high < min_effect:
        return "equivalent"
    return "inconclusive"


def _family(kind: str) -> Optional[str]:
    return next((f for f, kinds in FAMILIES.items() if kind in kinds), None)


def _accuracies(conds) -> dict:
    """``{(kind, level): [accuracy per noise draw]}`` of a model's conditions: :class:`Condition` objects
    or their compact form ``{"kind", "level", "accuracies"}`` (the seeds file's)."""
    out = {}
    for c in conds:
        if isinstance(c, Mapping):
            out[(c["kind"], c["level"])] = [float(a) for a in c["accuracies"]]
        else:
            out[(c.kind, c.level)] = c.accuracies()
    return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _drop(acc: Mapping, key) -> float:
    """Points a model loses under condition ``key`` from its own clean accuracy (its draws averaged)."""
    return 100 * (_mean(acc[("clean", None)]) - _mean(acc[key]))


def _gap(study: Mapping, label: str, identity_of: Mapping[str, str]) -> Optional[float]:
    """Points the blocks are worth to ``label`` (``study``: label -> :func:`_accuracies`): its clean accuracy minus
    that without blocks (its own identity row, else that of ``identity_of[label]``); ``None`` unmeasured."""
    ident = study[label].get(("identity", None)) or study.get(identity_of.get(label), {}).get(("identity", None))
    return 100 * (_mean(study[label][("clean", None)]) - _mean(ident)) if ident else None


def _adjust(rows: list, alpha: float) -> list:
    """Holm within each family for the secondary rows (the primary row is one test: nothing to adjust), significance
    read from the adjusted p; the primary row first."""
    for family in FAMILIES:
        members = [r for r in rows if r["family"] == family and r["role"] == "secondary"]
        for r, adjusted in zip(members, holm([r["p"] for r in members])):
            r["p_holm"] = adjusted
    for r in rows:
        if r["role"] == "primary":
            r["p_holm"] = r["p"]
        if r["role"] != "unmeasured":
            r["significant"] = r["p_holm"] < alpha
    return rows


@dataclass
class Judgement:
    """The numbers of the verdict for models ``a`` and ``b``.  ``rows``: the primary row first, then
    every secondary or unmeasured one, each with ``name``, ``family``, ``role``, both drops, the
    difference B − A with its standard error, 95% interval, ``p`` and ``p_holm`` (None where unmeasured)
    and ``significant``."""

    a: str
    b: str
    n: int
    clean: dict  # label -> clean accuracy (points)
    gaps: dict  # label -> clean minus blocks-removed accuracy (points), or None
    blocks_matter: bool
    matter_points: float
    test: PrimaryTest
    outcome: str  # one of OUTCOMES
    rows: list
    clean_test: dict = field(default_factory=dict)  # McNemar on the two clean outcomes
    models_per_method: int = 1

    @property
    def primary(self) -> Optional[dict]:
        return next((r for r in self.rows if r["role"] == "primary"), None)

    @property
    def clean_differs(self) -> bool:
        return bool(self.clean_test) and self.clean_test["p"] < self.test.alpha


def judge(study: Mapping[str, Sequence[Condition]], a: str, b: str, test: PrimaryTest = PRIMARY,
          matter_points: float = 10.0, identity_of: Optional[Mapping[str, str]] = None,
          models_per_method: int = 1) -> Judgement:
    """Compare model ``a`` (the refined RK4 model) with ``b`` (the Euler model) condition by condition:
    each model's drop = clean − perturbed per image (averaged over seeds), and the paired difference
    drop_b − drop_a with its standard error (images, plus the spread over the seeds of a random
    perturbation: :func:`~cnet_lib.studies.stats.with_seed_variance`), 95% interval and p.
    ``test`` decides (:func:`decide`); the other rows are secondary, Holm-adjusted within their family
    at ``test.alpha``; a random perturbation with fewer than two seeds for either model is unmeasured.
    The blocks **matter** when removing them costs each model at least ``matter_points`` (the
    identity rows, taken from ``identity_of[label]`` when a label has none of its own).  A verdict about two
    trained models is about those two models; a claim about training *methods* takes several training seeds
    (:func:`robustness_over_seeds`)."""
    ca = {(c.kind, c.level): c for c in study[a]}
    cb = {(c.kind, c.level): c for c in study[b]}
    clean_a, clean_b = ca[("clean", None)].mean_correct, cb[("clean", None)].mean_correct
    rows = []
    for key, cond_a in ca.items():
        family = _family(cond_a.kind)
        if family is None or key not in cb:
            continue
        cond_b = cb[key]
        drop_a, drop_b = clean_a - cond_a.mean_correct, clean_b - cond_b.mean_correct
        seeds = min(len(cond_a.correct), len(cond_b.correct))
        row = {"kind": cond_a.kind, "level": cond_a.level, "name": condition_name(*key), "family": family,
               "drop_a": 100 * drop_a.mean().item(), "drop_b": 100 * drop_b.mean().item(), "seeds": seeds}
        if cond_a.kind in RANDOM_KINDS:
            row["draws_a"], row["draws_b"] = (draw_spread(c.accuracies(), c.kind) for c in (cond_a, cond_b))
        if cond_a.kind in RANDOM_KINDS and seeds < 2:
            rows.append({**row, "role": "unmeasured", "diff": row["drop_b"] - row["drop_a"], "se": None,
                         "ci95": None, "p": None, "p_holm": None, "significant": False})
            continue
        cmp = with_seed_variance(paired_difference(drop_b, drop_a), cond_a.accuracies(), cond_b.accuracies())
        role = "primary" if key == (test.kind, test.level) else "secondary"
        rows.append({**row, **cmp, "role": role})
    rows = sorted(_adjust(rows, test.alpha), key=lambda r: r["role"] != "primary")
    primary = next((r for r in rows if r["role"] == "primary"), None)
    outcome = decide(primary["diff"], primary["ci95"], test.min_effect) if primary else "unmeasured"
    acc = {label: _accuracies(study[label]) for label in study}
    gaps = {label: _gap(acc, label, dict(identity_of or {})) for label in (a, b)}
    matter = all(g is not None and g >= matter_points for g in gaps.values())
    return Judgement(a, b, int(clean_a.numel()), {a: 100 * clean_a.mean().item(), b: 100 * clean_b.mean().item()},
                     gaps, matter, matter_points, test, outcome, rows, mcnemar(clean_a, clean_b), int(models_per_method))


# --------------------------------------------------------------------------- over training seeds
@dataclass
class SeedRobustness:
    """The study's rows over training seeds: per row each method's drops (one per seed, points), their
    :func:`~cnet_lib.studies.stats.spread`, and with two or more seeds Welch's difference B − A,
    interval, p and Holm's p; ``outcome`` is the primary test's (:func:`decide`), or ``"one seed"``."""

    a: str
    b: str
    test: PrimaryTest
    seeds: list
    rows: list
    clean: dict  # label -> spread of clean accuracy (%)
    gaps: dict  # label -> the blocks' worth per seed (points)
    outcome: str = "one seed"
    n_images: Optional[int] = None
    matter_points: float = 10.0
    blocks_matter: bool = field(default=False)

    @property
    def primary(self) -> Optional[dict]:
        return next((r for r in self.rows if r["role"] == "primary"), None)


def robustness_over_seeds(studies_by_seed: Mapping[Any, Mapping[str, Sequence]], a: str = "rk4_refined",
                          b: str = "euler_fixed", test: PrimaryTest = PRIMARY, matter_points: float = 10.0,
                          identity_of: Optional[Mapping[str, str]] = None) -> SeedRobustness:
    """Every row of the study over ``studies_by_seed`` (training seed -> ``{label: conditions}``, :class:`Condition`
    lists or their compact form ``{"kind", "level", "accuracies"}``), the trained model as the unit: each model's drop
    from its own clean accuracy (points, averaged over the noise draws), per seed.  With two or more seeds: Welch's
    t-test of B's drops minus A's per row, Holm within each family for the secondary rows, and the primary row's
    outcome by :func:`decide`; the blocks matter when removing them costs each model at least ``matter_points`` in
    every seed (the identity row of ``identity_of[label]`` when a label has none).  With one seed the rows show that
    model's drops and no claim about the training methods is made."""
    if not studies_by_seed:
        raise ValueError("studies_by_seed is empty: give {seed: {label: conditions}} for at least one training seed")
    seeds = list(studies_by_seed)
    per_seed = [{label: _accuracies(conds) for label, conds in s.items()} for s in studies_by_seed.values()]
    for s, seed in zip(per_seed, seeds):
        for label in (a, b):
            if label not in s or ("clean", None) not in s[label]:
                raise ValueError(f"the study of seed {seed} has no clean row for {label!r}; it has {sorted(s)}")
    keys = [k for k in per_seed[0][a] if _family(k[0]) and all(k in s[a] and k in s[b] for s in per_seed)]
    rows = []
    for key in keys:
        da, db = [_drop(s[a], key) for s in per_seed], [_drop(s[b], key) for s in per_seed]
        row = {"kind": key[0], "level": key[1], "name": condition_name(*key), "family": _family(key[0]),
               "role": "primary" if key == (test.kind, test.level) else "secondary", "drops_a": da, "drops_b": db,
               "a": spread(da), "b": spread(db), "diff": _mean(db) - _mean(da), "ci95": None,
               "p": None, "p_holm": None, "significant": False}
        if key[0] in RANDOM_KINDS:  # each model's draws in every seed, by the analysis plan's rule
            row["draws"] = [draw_spread(s[m][key], key[0]) for s in per_seed for m in (a, b)]
        if len(per_seed) >= 2:
            row.update({k: v for k, v in welch(da, db, test.alpha).items() if k in ("diff", "ci95", "p", "se", "df")})
        rows.append(row)
    if len(per_seed) >= 2:
        _adjust(rows, test.alpha)
    rows.sort(key=lambda r: r["role"] != "primary")
    gaps = {label: [_gap(s, label, dict(identity_of or {})) for s in per_seed] for label in (a, b)}
    r = SeedRobustness(a, b, test, seeds, rows, {label: spread([100 * _mean(s[label][("clean", None)]) for s in per_seed])
                                                 for label in (a, b)}, gaps, matter_points=matter_points)
    r.blocks_matter = all(g is not None and g >= matter_points for gs in gaps.values() for g in gs)
    if len(seeds) >= 2:
        r.outcome = decide(r.primary["diff"], r.primary["ci95"], test.min_effect) if r.primary else "unmeasured"
    return r


def over_seeds(runs: Mapping[str, StudyRun], study: Mapping[str, Sequence], verbose: bool = True) -> SeedRobustness:
    """:func:`robustness_over_seeds` of ``study`` (the loaded runs' study, :func:`run`) and of every other training
    seed that the seeds file beside the runs holds for these models
    (:func:`cnet_lib.studies.runner.seed_studies`); the loaded models alone when there is none."""
    return robustness_over_seeds(seed_studies(runs, study, verbose=verbose))
