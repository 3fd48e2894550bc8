"""Beyond the paper: is a ContinuousNet robust to weight noise, to quantization, to input noise?

The seed paper expects, without measuring it, that ContinuousNets trained with refinement are
"more robust with respect to parameter perturbations" and therefore "well-suited to compression and
other quantization strategies".  This module measures it for any trained ContinuousNet and any
manifestation, on the same test images for every model:

* **weight perturbation** (:func:`perturb_coefficients`): every coefficient tensor θ̂ of every
  OdeBlock (and the coefficients of its gain s(t)) gets Gaussian noise of relative size σ,
  ‖noise‖ = σ ‖θ̂‖ per tensor; σ on a log grid, several seeds;
* **post-training quantization** (:func:`quantize_per_channel`, :func:`quantized_copy`): every
  weight (coefficients, stem, stitches, head) rounded to ``b``-bit symmetric integers with one scale
  per output channel (8 and 4 bits), or stored as bfloat16 / float16; with the model's size in bytes;
* **input noise**: Gaussian noise of standard deviation τ added to the normalised images.

The perturbations live in :mod:`cnet_lib.images.perturbations` and the paired statistics in
:mod:`cnet_lib.images.paired_stats` (both re-exported here).  Every measurement keeps the per-image
outcome (right or wrong), so that two conditions are compared *on the same images*.
:func:`robustness_study` runs the whole grid and returns plain rows; :func:`judge` computes, and
:func:`word_verdict` words, whether the refined RK4 model loses less than the Euler model; the
tables format them; :func:`conditions_to_json` stores them.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Sequence

import torch
from torch import nn

from .evaluation import Evaluator
from .paired_stats import holm, mcnemar, paired_difference, with_seed_variance
from .perturbations import (coefficient_tensors, identity_copy, input_noise, model_bytes, perturb_coefficients,
                            quantize_per_channel, quantized_copy)
from ..runtime.tables import format_table
from ..runtime.vocabulary import run_label

__all__ = [
    "DEFAULT_GRID",
    "coefficient_tensors",
    "perturb_coefficients",
    "quantize_per_channel",
    "quantized_copy",
    "model_bytes",
    "identity_copy",
    "input_noise",
    "paired_difference",
    "mcnemar",
    "with_seed_variance",
    "holm",
    "robustness_rows",
    "robustness_study",
    "summarise",
    "Judgement",
    "judge",
    "word_verdict",
    "format_verdict",
    "drops_table",
    "quantization_error_table",
    "size_table",
]

DEFAULT_GRID = dict(sigmas=(0.01, 0.03, 0.1, 0.3), seeds=(0, 1, 2, 3, 4, 5), bits=(8, 4), float_formats=("bf16", "fp16"),
                    input_noise=(0.1, 0.2, 0.4), noise_seeds=(0, 1))


# --------------------------------------------------------------------------- the study
@dataclass
class Condition:
    """One evaluated condition: its kind and level, and the per-image outcomes of its seeds."""

    kind: str  # clean | weight_noise | quantized | input_noise | identity | identity_input_noise
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
    g = {**DEFAULT_GRID, **(grid or {})}
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
    for fmt in list(g["bits"]) + list(g["float_formats"]):
        q = quantized_copy(model, fmt)
        conds.append(Condition("quantized", fmt, [measure("quantized", fmt, q)], model_bytes(model, fmt)))
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


# --------------------------------------------------------------------------- the verdict
@dataclass
class Judgement:
    """The numbers of the verdict: per condition, each model's drop from its clean accuracy and
    the difference of the drops on the same images."""

    clean: dict  # label -> clean accuracy (points)
    gaps: dict  # label -> clean minus blocks-as-identity accuracy (points), where measured
    drops: list  # rows: kind, level, label -> drop (points), and the paired comparison of the two
    more_robust: str  # "a", "b", "neither" (no significant difference anywhere) or "mixed"
    blocks_matter: bool
    matter_points: float
    a: str
    b: str
    n: int
    clean_test: dict = field(default_factory=dict)  # McNemar's test of the two clean outcomes


def _gap(conds: Sequence[Condition], identity_from: Sequence[Condition]) -> Optional[float]:
    """Clean accuracy of ``conds`` minus the blocks-as-identity accuracy found in ``identity_from``
    (points); None when that has no identity row."""
    clean = next(c for c in conds if c.kind == "clean")
    ident = next((c for c in identity_from if c.kind == "identity"), None)
    if ident is None:
        return None
    return 100 * (clean.mean_correct.mean().item() - ident.mean_correct.mean().item())


def judge(study: Mapping[str, Sequence[Condition]], a: str, b: str, alpha: float = 0.05,
          matter_points: float = 10.0, identity_of: Optional[Mapping[str, str]] = None) -> Judgement:
    """Compare model ``a`` (e.g. the refined RK4 model) with ``b`` (the Euler model) condition by
    condition: each model's drop = clean − perturbed per image (averaged over seeds), and the paired
    difference drop_b − drop_a with its standard error and p-value, widened by the spread over the
    seeds of a random perturbation (:func:`with_seed_variance`).  Comparing drops, not
    accuracies, is what "at equal clean accuracy" means here.  With many conditions some would look
    significant by chance, so each row's p is also Holm-adjusted over all rows (``p_holm``, see
    :func:`holm`), and significance means ``p_holm`` < ``alpha``.  ``more_robust`` is ``a`` when ``a``
    drops significantly less in at least one condition and never significantly more.
    The blocks **matter** when removing them costs each model at least ``matter_points`` (the
    identity rows, taken from ``identity_of[label]`` when a label has none of its own); otherwise a
    robustness difference says nothing about the blocks."""
    ca, cb = {c.kind + str(c.level): c for c in study[a]}, {c.kind + str(c.level): c for c in study[b]}
    clean_a, clean_b = ca["cleanNone"].mean_correct, cb["cleanNone"].mean_correct
    rows = []
    for key, cond_a in ca.items():
        if cond_a.kind in ("clean", "identity", "identity_input_noise") or key not in cb:
            continue
        drop_a = clean_a - cond_a.mean_correct
        drop_b = clean_b - cb[key].mean_correct
        cmp = with_seed_variance(paired_difference(drop_b, drop_a), cond_a.accuracies(), cb[key].accuracies())
        rows.append({"kind": cond_a.kind, "level": cond_a.level, "drop_a": 100 * drop_a.mean().item(),
                     "drop_b": 100 * drop_b.mean().item(), "seeds": min(len(cond_a.correct), len(cb[key].correct)),
                     **cmp})
    for r, adjusted in zip(rows, holm([r["p"] for r in rows])):
        r["p_holm"] = adjusted
    better_a = any(r["p_holm"] < alpha and r["diff"] > 0 for r in rows)
    better_b = any(r["p_holm"] < alpha and r["diff"] < 0 for r in rows)
    verdict = "mixed" if better_a and better_b else "a" if better_a else "b" if better_b else "neither"
    identity_of = dict(identity_of or {})
    gaps = {}
    for label in (a, b):
        gap = _gap(study[label], study[label])
        if gap is None and identity_of.get(label) in study:
            gap = _gap(study[label], study[identity_of[label]])
        gaps[label] = gap
    matter = all(g is not None and g >= matter_points for g in gaps.values())
    return Judgement({a: 100 * clean_a.mean().item(), b: 100 * clean_b.mean().item()}, gaps, rows, verdict, matter,
                     matter_points, a, b, int(clean_a.numel()), mcnemar(clean_a, clean_b))


_KIND_WORDS = {"weight_noise": "weight noise σ = {}", "quantized": "weights in {}", "input_noise": "input noise τ = {}"}


def _level(kind, level) -> str:
    if kind == "quantized":
        return f"{level} bits" if isinstance(level, int) else str(level)
    return f"{level:g}"


def word_verdict(j: Judgement, labels: Optional[Mapping[str, str]] = None, alpha: float = 0.05) -> list[str]:
    """Sentences that state what :func:`judge` found, quoting the numbers, and where the paper's
    expectation (the refined RK4 model is more robust) does not hold.  Models are named by
    ``labels`` (default: the book's run labels)."""
    lab = {j.a: run_label(j.a), j.b: run_label(j.b), **(labels or {})}
    s = [f"Both models are measured on the same {j.n} test images: {lab[j.a]} {j.clean[j.a]:.1f}% clean, "
         f"{lab[j.b]} {j.clean[j.b]:.1f}% clean. Each perturbation is judged by the drop from a model's own clean "
         f"accuracy, and the two drops are compared image by image (difference ± its standard error, which also counts "
         f"the spread over the seeds of a random perturbation; p-value of no difference, Holm-adjusted over the "
         f"{len(j.drops)} comparisons)."]
    for r in j.drops:
        what = _KIND_WORDS[r["kind"]].format(_level(r["kind"], r["level"]))
        sig = r["p_holm"] < alpha
        who = (lab[j.a] if r["diff"] > 0 else lab[j.b]) if sig else None
        s.append(f"{what}: {lab[j.a]} loses {r['drop_a']:.1f} points, {lab[j.b]} {r['drop_b']:.1f}; difference "
                 f"{r['diff']:+.1f} ± {r['se']:.1f} points (p = {r['p_holm']:.2g})"
                 + (f": {who} is more robust here." if sig else ": no significant difference."))
    if j.clean_test and j.clean_test["p"] < alpha:
        s.insert(1, f"The clean accuracies differ (McNemar: {j.clean_test['only_a']} images right only for {lab[j.a]}, "
                    f"{j.clean_test['only_b']} only for {lab[j.b]}, p = {j.clean_test['p']:.2g}), so the two are not at "
                    "equal clean accuracy: read each drop together with the accuracy it starts from (a model near chance "
                    "has little left to lose).")
    for label in (j.a, j.b):
        if j.gaps.get(label) is not None:
            s.insert(1 if label == j.a else 2, f"{lab[label]}: removing its blocks costs {j.gaps[label]:.1f} points.")
    if not j.blocks_matter:
        s.append(f"VERDICT: the blocks do not matter enough (removing them costs less than {j.matter_points:g} points "
                 "for at least one model, or it was not measured): whatever the drops above say, they are not about "
                 "the continuous blocks, and cannot test the paper's expectation.")
        return s
    if j.more_robust == "a":
        s.append(f"VERDICT: {lab[j.a]} is more robust: it loses significantly less under at least one perturbation and "
                 "never significantly more. The paper's expectation holds here, by the margins above.")
    elif j.more_robust == "b":
        s.append(f"VERDICT: the paper's expectation does not hold here: {lab[j.b]} loses significantly less under at "
                 f"least one perturbation, and {lab[j.a]} never does.")
    elif j.more_robust == "mixed":
        s.append("VERDICT: mixed: each model is significantly more robust under some perturbation; the paper's "
                 "blanket expectation does not hold as stated.")
    else:
        s.append(f"VERDICT: no significant difference in robustness (Holm-adjusted p < {alpha:g}) under any perturbation measured: "
                 "these numbers do not support the paper's expectation, nor its opposite; each row's 95% interval "
                 "bounds the differences they cannot rule out (more test images narrow every interval, more seeds those "
                 "of the random perturbations).")
    return s


def drops_table(j: Judgement, alpha: float = 0.05) -> str:
    """The verdict's rows as a plain-text table: per perturbation, the points each model loses,
    the paired difference with its 95% interval, and the Holm-adjusted p."""
    cols = [("perturbation", lambda r: _KIND_WORDS[r["kind"]].format(_level(r["kind"], r["level"])), "{}"),
            ("A loses", "drop_a", "{:.2f}"), ("B loses", "drop_b", "{:.2f}"),
            ("B − A", "diff", "{:+.2f}"), ("95% interval", lambda r: f"[{r['ci95'][0]:+.2f}, {r['ci95'][1]:+.2f}]", "{}"),
            ("Holm p", "p_holm", "{:.2g}"), ("", lambda r: "significant" if r["p_holm"] < alpha else "", "{}")]
    return format_table(j.drops, cols, note=f"A = {run_label(j.a)}, B = {run_label(j.b)}; points of accuracy on "
                        f"{j.n} test images")


def format_verdict(j: Judgement, labels: Optional[Mapping[str, str]] = None, alpha: float = 0.05,
                   width: int = 92) -> str:
    """:func:`word_verdict` as text, each sentence wrapped to ``width`` characters."""
    return "\n".join(textwrap.fill(sentence, width, subsequent_indent="  ")
                     for sentence in word_verdict(j, labels, alpha))


def quantization_error_table(quantize: Callable[[torch.Tensor, int], torch.Tensor], weights: Mapping[str, torch.Tensor],
                             bits: Sequence[int] = (8, 4, 2)) -> str:
    """For each named weight, the relative error ‖quantize(w, b) − w‖ / ‖w‖ of ``quantize`` (e.g. the
    reader's own function) at each bit width ``b``: one row per weight, one column per width."""
    rows = []
    for name, w in weights.items():
        w = w.detach()
        rows.append({"weight": f"{name} {tuple(w.shape)}",
                     **{b: ((quantize(w, b) - w).norm() / w.norm()).item() for b in bits}})
    return format_table(rows, [("weight", "weight", "{}")] + [(f"{b} bits", b, "{:.1e}") for b in bits],
                        note="relative error ‖w̃ − w‖ / ‖w‖")


def size_table(study: Mapping[str, Sequence[Condition]]) -> str:
    """Each model's size in bytes and accuracy for every weight format measured (one row per format)."""
    rows = []
    for label, conds in study.items():
        for c in conds:
            if c.kind in ("clean", "quantized"):
                rows.append({"model": run_label(label), "format": "float32" if c.kind == "clean" else _level("quantized", c.level),
                             "bytes": c.bytes, "accuracy": sum(c.accuracies()) / len(c.correct)})
    return format_table(rows, [("model", "model", "{}"), ("weights", "format", "{}"), ("bytes", "bytes", "{:,}"),
                               ("accuracy", "accuracy", "{:.4f}")], left=2)


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
