"""Answers for the live apps that come at once, with their sampling error said.

A live app's control moves; evaluating a trained model on 1,000 held-out images takes seconds on two CPU
cores (RK4-classic at N_t = 8: 8.9 s with the shipped `cpu` models, the book's page Measurements, *Live apps*).  So an answer
comes, in order of preference,

1. from what is already computed: the run's cached sweep (:func:`sweep_answer`: any scheme and N_t of its
   grid, or a compression it evaluated) or the cached robustness study (:func:`study_answer`: any single
   perturbation of its grid on a model's own graph), measured on all of their held-out images;
2. else from the first ``n`` of the app's images, ``n`` chosen so that the forward pass costs at most
   :data:`QUICK_FLOPS` floating-point operations on the device (:func:`quick_size`: a design constant per
   device type, so the count of images a first answer evaluates does not depend on how fast the machine
   is), with its binomial standard error √(p(1 − p)/n);

and the app then refines a sampled answer to all of its images in the background.  :class:`Estimate`
carries the number, how many images stand behind it, its standard error and where it comes from.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import torch

from ..runtime.rows import find_row
from ..runtime.threads import image_step_flops

__all__ = ["QUICK_FLOPS", "Estimate", "binomial_se", "follow_text", "forward_flops", "quick_size", "sweep_answer", "study_answer",
           "estimate_from"]

QUICK_FLOPS = {"cpu": 3e9, "cuda": 5e12, "mps": 1e12}
"""Forward-pass floating-point operations a first answer may spend, per device type: on the CPU about
0.4 s at the 8 GFLOP/s that two idle cores reach on these narrow convolutions (the `cpu` models: 1,000
images at RK4-classic N_t = 4, 37 MFLOP each, in 4.6 s), leaving the rest of a second for the thumbnails
and the figure; on a GPU enough for every image of an app."""


def binomial_se(p: float, n: int) -> float:
    """The standard error √(p(1 − p)/n) of an accuracy ``p`` measured on ``n`` images (0 for n = 0)."""
    return math.sqrt(max(p * (1 - p), 0.0) / n) if n > 0 else float("nan")


@dataclass(frozen=True)
class Estimate:
    """An accuracy on ``n`` images with its standard error ``se`` and its ``source`` in words; ``draws``
    > 1 when it is the mean over several random draws of a perturbation (``spread``: their range)."""

    accuracy: float
    n: int
    se: float
    source: str
    draws: int = 1
    spread: Optional[tuple] = None

    @property
    def final(self) -> bool:
        """Whether nothing better will follow (cached, or every image of the app)."""
        return not self.source.startswith("first")

    def text(self) -> str:
        """``0.725 ± 0.020`` (the 95% half-width, 1.96 se), with how many images and where it comes from (a source
        that counts its images, ``first 96 of 1000 images``, says it once)."""
        draws = f", mean of {self.draws} draws {self.spread[0]:.3f}–{self.spread[1]:.3f}" if self.draws > 1 else ""
        count = "" if self.source.startswith(("first ", "all ")) else f"{self.n} images, "
        return f"{self.accuracy:.3f} ± {1.96 * self.se:.3f} ({count}{self.source}{draws})"


def estimate_from(correct: torch.Tensor, source: str) -> Estimate:
    """The :class:`Estimate` of a bool tensor of per-image outcomes."""
    n = int(correct.numel())
    p = correct.double().mean().item() if n else float("nan")
    return Estimate(p, n, binomial_se(p, n), source)


def follow_text(n_all: int, n_done: int, seconds_per_image: float) -> str:
    """What a sampled answer says of the refinement that follows: ``all 1000 images follow within 4 s``, the time an upper
    estimate (twice the seconds per image the sample took, for the images left, and a second for the figure),
    rounded up to a whole second."""
    bound = math.ceil(2.0 * seconds_per_image * max(n_all - n_done, 0) + 1.0)
    return f"all {n_all} images follow within {bound} s"


def forward_flops(model) -> float:
    """Floating-point operations of one image's forward pass through ``model``'s blocks at their current
    manifestation (a third of :func:`cnet_lib.runtime.threads.image_step_flops` of a batch of one)."""
    blocks = [b for b in model.blocks if hasattr(b, "scheme")]
    if not blocks:
        return 1.0
    channels = model.config()["channels"]
    return image_step_flops(channels, 1, blocks[0].scheme.stages, [b.n_steps for b in blocks]) / 3


def quick_size(model, device: torch.device, n_max: int, evaluations: int = 1, n_min: int = 32) -> int:
    """How many images a first answer evaluates: as many as :data:`QUICK_FLOPS` of ``device``'s type
    allows for ``evaluations`` forward passes of ``model`` per image, at least ``n_min`` and at most
    ``n_max``."""
    budget = QUICK_FLOPS.get(torch.device(device).type, QUICK_FLOPS["cpu"])
    n = int(budget // (max(evaluations, 1) * forward_flops(model)))
    return max(min(n_max, n), min(n_min, n_max))


def sweep_answer(rows: Sequence[Mapping], n_images: int, scheme: str, n_steps: int, compress: int = 0) -> Optional[Estimate]:
    """The accuracy of the manifestation (``scheme``, ``n_steps``), or of θ compressed to M = ``compress``
    at N_t = M, from a run's cached sweep ``rows`` measured on ``n_images`` held-out images; ``None`` when the
    sweep did not evaluate it."""
    if compress:
        row = find_row(rows, kind="compressed", scheme=scheme, n_steps=int(n_steps), n_basis=int(compress), default=None)
    else:
        row = find_row(rows, kind="manifestation", scheme=scheme, n_steps=int(n_steps), default=None)
    if row is None:
        return None
    return Estimate(row["accuracy"], int(n_images), binomial_se(row["accuracy"], int(n_images)), "from the cached sweep")


def study_answer(study: Mapping[str, Sequence], label: str, kind: str, level) -> Optional[Estimate]:
    """The accuracy of condition (``kind``, ``level``) of ``label`` in a cached robustness study (mean over
    its draws, with their range); ``None`` when the study did not measure it."""
    cond = next((c for c in study.get(label, ()) if c.kind == kind and c.level == level), None)
    if cond is None:
        return None
    accs = cond.accuracies()
    n = int(cond.correct[0].numel())
    p = sum(accs) / len(accs)
    return Estimate(p, n, binomial_se(p, n), "from the cached robustness study", len(accs), (min(accs), max(accs)))
