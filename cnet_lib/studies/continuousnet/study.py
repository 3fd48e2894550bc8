"""The study of the chapter *ContinuousNet*, as numbers: the weight functions θ(t) of a trained model and the graphs
its parameters have.

* :func:`theta_by_basis`: a trained block's θ(t) of a few weights, projected onto each of the three bases, beside a
  freshly initialised block's;
* :func:`change_from_initial`: how far training moved θ(t) from where it started, per piece;
* :func:`stage_rows`, :func:`manifestation_reads`: where every stage of a manifestation reads θ;
* :func:`resnet_manifestation`: a model's Euler, N_t = M graph against its ResNet and its own graph;
* :func:`feature_shapes`, :func:`bn_statistics`, :func:`skip_gains`, :func:`blocks_are_identity`: a batch through the
  stem, stitches and blocks; the BatchNorm statistics per piece; the gains ε s(t); whether a block is the identity;
* :func:`model_numbers`: what the chapter says of its two trained models (parameters, epochs, accuracies, where they
  were trained).

Every function returns plain values (numbers, lists, dicts); :mod:`.show` draws and words them.  θ(t) as a curve
and as recorded while a run trains are :mod:`cnet_lib.images.runs.theta_record`'s.
"""
from __future__ import annotations

import copy
from typing import Any, Mapping, Optional, Sequence

import torch

from ...images.runs.run_loading import provenance
from ...images.runs.theta_record import THETA_ENTRIES, THETA_PARAM, theta_curve, theta_entries
from ...core.bases import make_basis
from ...core.integrate import stage_positions
from ...core.models import ContinuousNet, resnet_from_continuousnet
from ...core.schemes import get_scheme

__all__ = ["theta_by_basis", "change_from_initial", "stage_rows", "manifestation_reads", "resnet_manifestation",
           "feature_shapes", "bn_statistics", "skip_gains", "blocks_are_identity", "model_numbers"]


# --------------------------------------------------------------------------- θ(t) of a trained block
def _fresh_block(cfg_channels, block: int, basis: str, n_basis: int, seed: int):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        m = ContinuousNet(channels=cfg_channels, n_basis=n_basis, basis=basis, skip_init=True)
    return m.blocks[block]


def theta_by_basis(model: ContinuousNet, block: int = 0, n_basis: Optional[int] = None, seed: int = 0,
                   param: str = THETA_PARAM, entries: Sequence[tuple] = THETA_ENTRIES) -> dict:
    """θ(t) of a few weights for the three bases: ``{basis: {"untrained": {entry: (t, v)},
    "trained": {entry: (t, v)}}}``.

    *untrained*: a freshly initialised block with that basis and M functions (independent draws
    per θ̂_β, like the layers of a ResNet).  *trained*: the trained block's θ(t) projected (L2) onto
    that basis with M functions (for its own basis at its own M, the trained θ(t) itself).
    M defaults to the trained block's M.
    """
    trained = model.blocks[block]
    m = n_basis or trained.n_basis
    channels = model.config()["channels"]
    out = {}
    for basis in ("piecewise_constant", "piecewise_linear", "legendre"):
        fresh = _fresh_block(channels, block, basis, m, seed)
        if basis == trained.basis.name and m == trained.n_basis:
            proj = trained
        else:
            proj = copy.deepcopy(trained).cpu().project(m, basis)
        res = {}
        for kind, blk in (("untrained", fresh), ("trained", proj)):
            c = blk.coefficient(param).detach().cpu()
            res[kind] = {e: theta_curve(v, basis, blk.T) for e, v in theta_entries(c, entries).items()}
        out[basis] = res
    return out


def change_from_initial(model: ContinuousNet, initial: ContinuousNet, block: int = 0,
                        param: str = THETA_PARAM) -> list[dict]:
    """How far training moved θ(t) of ``param`` in one block, in the middle of each of the trained
    block's pieces: one row ``{"block", "piece", "t", "n_basis", "n_basis_initial", "relative_change"}``
    per piece, ``relative_change`` = ‖θ_trained(t) − θ_initial(t)‖ / ‖θ_initial(t)‖ (``piece``
    counts from 1; ``initial`` is the model as training started, e.g. ``StudyRun.initial_model()``)."""
    trained, start = model.blocks[block], initial.blocks[block]
    m = trained.n_basis
    rows = []
    for k in range(m):
        t = (k + 0.5) / m  # the middle of piece k
        w_tr, w_in = trained.theta(t)[param].detach().cpu(), start.theta(t)[param].detach().cpu()
        rows.append({"block": block + 1, "piece": k + 1, "t": t, "n_basis": m, "n_basis_initial": start.n_basis,
                     "relative_change": ((w_tr - w_in).norm() / w_in.norm()).item()})
    return rows


# --------------------------------------------------------------------------- graphs: where the stages read θ(t)
def stage_rows(scheme: str, n_steps: int, n_basis: int, basis: str = "piecewise_constant") -> list[dict]:
    """Where every stage of a manifestation reads θ: ``{"step", "stage", "t", "pieces"}`` per stage
    evaluation, ``pieces`` being the non-zero (β, φ_β) pairs of the basis at that exact position."""
    b = make_basis(basis, n_basis)
    return [{"step": p.k, "stage": p.stage, "t": p.t, "tau": p.tau,
             "pieces": b.weights(p.tau, p.side)} for p in stage_positions(scheme, n_steps)]


def manifestation_reads(manifestations: Sequence[tuple[str, int]], n_basis: int,
                        basis: str = "piecewise_constant") -> list[dict]:
    """Per manifestation ``(scheme, n_steps)`` of one block with ``n_basis`` functions: ``{"scheme",
    "n_steps", "units", "pieces"}``, ``units`` being the evaluations of R per block (stages × N_t)
    and ``pieces`` the sorted β (from 0) of every θ̂_β some stage reads (:func:`stage_rows`)."""
    rows = []
    for scheme, n in manifestations:
        reads = {beta for r in stage_rows(scheme, n, n_basis, basis) for beta, w in r["pieces"] if w != 0}
        rows.append({"scheme": scheme, "n_steps": int(n), "units": get_scheme(scheme).stages * int(n),
                     "pieces": sorted(reads)})
    return rows


@torch.no_grad()
def resnet_manifestation(model: ContinuousNet, x: torch.Tensor) -> dict:
    """A model's Euler, N_t = M graph (piecewise-constant basis) against the ResNet built from it
    (:func:`cnet_lib.core.models.resnet_from_continuousnet`) and against the model's own graph, on
    the images ``x`` (normalised, on the model's device).

    Returns ``{"manifestation"`` (the model's own graph, per block), ``"basis", "units_per_stage"``
    (residual units of the ResNet per stage), ``"steps"`` (h per stage), ``"n_images", "identical"``
    (ResNet and Euler graph give the same logits bit for bit), ``"max_difference"`` (their largest
    logit difference), ``"max_logit_change"`` (own graph against the Euler graph), ``"same_class"``
    (the fraction of images whose predicted class the two graphs share)``}``.  The model is left as
    it was.
    """
    own = model(x)
    with model.manifested("euler", [b.n_basis for b in model.blocks]):
        resnet = resnet_from_continuousnet(model).eval()
        euler = model(x)
        res = resnet(x)
    return {"manifestation": model.manifestation, "basis": model.blocks[0].basis.name,
            "units_per_stage": [len(s) for s in resnet.stages], "steps": list(resnet.steps), "n_images": len(x),
            "identical": torch.equal(euler, res), "max_difference": (euler - res).abs().max().item(),
            "max_logit_change": (own - euler).abs().max().item(),
            "same_class": (own.argmax(1) == euler.argmax(1)).double().mean().item()}


# --------------------------------------------------------------------------- a batch through the model; BatchNorm; gains
@torch.no_grad()
def feature_shapes(model: ContinuousNet, x: torch.Tensor) -> list[dict]:
    """A batch through the model, layer by layer: one row ``{"layer", "shape"}`` for the input, the
    stem, every stitch (with its ``"epsilon"``) and every OdeBlock (with its ``"scheme"`` and
    ``"n_steps"``), in the order of the forward pass."""
    rows = [{"layer": "input", "shape": tuple(x.shape)}]
    h = model.stem(x)
    rows.append({"layer": "stem", "shape": tuple(h.shape)})
    for i, block in enumerate(model.blocks):
        if i:
            stitch = model.stitches[i - 1]
            h = stitch(h)
            rows.append({"layer": f"stitch {i}", "shape": tuple(h.shape), "epsilon": stitch.epsilon})
        h = block(h)
        scheme, n_steps = block.manifestation
        rows.append({"layer": f"OdeBlock {i + 1}", "shape": tuple(h.shape), "scheme": scheme, "n_steps": n_steps})
    return rows


def bn_statistics(block) -> list[dict]:
    """The running BatchNorm statistics of an OdeBlock, one set per piece: one row per piece,
    ``{"piece"`` (from 1), ``"channels"``, and ``"<layer>.<statistic>"`` (e.g. ``"bn1.running_mean"``)
    averaged over the channels``}``."""
    # buffers "bn__<layer path with __ for .>__<statistic>", shape (pieces, channels)
    stats = {n[len("bn__"):].replace("__", "."): buf for n, buf in block.named_buffers() if n.startswith("bn__")}
    rows = []
    for k in range(block.basis.n_intervals):
        row = {"piece": k + 1}
        for name, buf in stats.items():
            row["channels"] = int(buf.shape[1])
            row[name] = buf[k].mean().item()
        rows.append(row)
    return rows


def skip_gains(model: ContinuousNet) -> list[dict]:
    """ε s(t) of every OdeBlock on its pieces: one row ``{"block", "n_basis", "gains"}`` per block
    (``gains``: ε ŝ_β, a list of floats; ``None`` without skip-init)."""
    rows = []
    for i, b in enumerate(model.blocks):
        gain = getattr(b, "skip_gain", None)
        rows.append({"block": i + 1, "n_basis": b.n_basis,
                     "gains": (b.epsilon * gain).tolist() if gain is not None else None})
    return rows


@torch.no_grad()
def blocks_are_identity(model: ContinuousNet, x: torch.Tensor) -> list[bool]:
    """Whether each OdeBlock returns its input exactly (bit for bit) on a batch through the model
    (``x``: images on the model's device): true for every block of an untrained, skip-init model."""
    out = []
    h = model.stem(x)
    for i, block in enumerate(model.blocks):
        if i:
            h = model.stitches[i - 1](h)
        y = block(h)
        out.append(torch.equal(y, h))
        h = y
    return out


# --------------------------------------------------------------------------- the chapter's two models
def model_numbers(runs: Mapping[str, Any]) -> dict:
    """What the chapter says of its trained models (``runs``: ``{run name: StudyRun}``, ``rk4_refined`` and
    ``euler_fixed``): ``{"parameters": {run: count}, "epochs": {run: epochs}, "accuracy": {run: final held-out
    accuracy}, "provenance": {run: :func:`cnet_lib.images.runs.run_loading.provenance`}}``."""
    return {"parameters": {n: r.model.n_parameters() for n, r in runs.items()},
            "epochs": {n: len(r.history) for n, r in runs.items()},
            "accuracy": {n: r.final_accuracy for n, r in runs.items()},
            "provenance": {n: provenance(r) for n, r in runs.items()}}
