"""Beyond the paper: is a ContinuousNet robust to weight noise, to quantization, to input noise?

The seed paper expects, without measuring it, that ContinuousNets trained with refinement are
"more robust with respect to parameter perturbations" and therefore "well-suited to compression and
other quantization strategies".  This module measures it for any trained ContinuousNet and any
manifestation, on the same test images for every model:

* **weight perturbation** (:func:`perturb_coefficients`): every coefficient tensor θ̂ of every
  OdeBlock (and the coefficients of its gain s(t)) gets Gaussian noise of relative size σ,
  ‖noise‖ = σ ‖θ̂‖ per tensor; σ on a log grid, several seeds;
* **post-training quantization** to ``b``-bit symmetric integers, one scale per output channel, in
  two schemes: θ̂ only (:func:`quantize_theta`, the scope of the weight noise) and every convolution
  and linear weight (:func:`quantize_weights`); and every parameter stored as bfloat16 / float16
  (:func:`float_format_copy`); with the model's size in bytes;
* **input noise**: Gaussian noise of standard deviation τ added to the normalised images.

The perturbations live in :mod:`cnet_lib.images.studies.robustness_perturbations`, the paired statistics in
:mod:`cnet_lib.images.studies.paired_stats` and the verdict in :mod:`cnet_lib.images.studies.robustness_verdict`.  Every
measurement keeps the per-image outcome (right or wrong), so that two conditions are compared *on
the same images*.  :func:`robustness_study` runs the whole grid and returns plain rows;
:func:`conditions_to_json` stores them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Sequence

import torch
from torch import nn

from ..training.evaluation import Evaluator
from .checks import check_robustness_grid
from .robustness_perturbations import (QUANTIZATION_SCHEMES, float_format_copy, identity_copy, input_noise, model_bytes,
                                       perturb_coefficients, quantize_theta, quantize_weights)

__all__ = ["DEFAULT_GRID", "KINDS", "Condition", "condition_name", "robustness_rows", "robustness_study", "summarise",
           "pack_outcomes", "unpack_outcomes", "conditions_to_json", "conditions_from_json"]

DEFAULT_GRID = dict(sigmas=(0.01, 0.03, 0.1, 0.3), seeds=(0, 1, 2, 3, 4, 5), bits=(8, 4), quantization=QUANTIZATION_SCHEMES,
                    float_formats=("bf16", "fp16"), input_noise=(0.1, 0.2, 0.4), noise_seeds=(0, 1))

# every kind of condition: what it perturbs, in words with a place for its level
KINDS = {"clean": "clean", "weight_noise": "weight noise σ = {}", "quantized_theta": "θ̂ in {}",
         "quantized_weights": "all weights in {}", "float_format": "every parameter in {}",
         "input_noise": "input noise τ = {}", "identity": "blocks removed",
         "identity_input_noise": "blocks removed, input noise τ = {}"}
QUANTIZE = {"quantized_theta": quantize_theta, "quantized_weights": quantize_weights}


def condition_name(kind: str, level) -> str:
    """A condition in words: ``weight noise σ = 0.1``, ``θ̂ in 4 bits``, ``every parameter in bf16``."""
    if kind not in KINDS:
        raise ValueError(f"unknown condition kind {kind!r}; known: {', '.join(KINDS)}")
    if level is None:
        return KINDS[kind]
    return KINDS[kind].format(f"{level} bits" if isinstance(level, int) else level if isinstance(level, str) else f"{level:g}")


# --------------------------------------------------------------------------- the study
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
    g = check_robustness_grid({**DEFAULT_GRID, **(grid or {})})
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


# --------------------------------------------------------------------------- storage
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
