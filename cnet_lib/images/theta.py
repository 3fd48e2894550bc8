"""θ(t) of a trained ContinuousNet as plain values: coefficients of a few weights, curves, the
stages that read them.

* :func:`theta_snapshot`: the coefficients θ̂_β of a few entries of one weight (and of the skip
  gain s(t)) per OdeBlock, as JSON-able lists (recorded after every training epoch);
* :func:`theta_curve`: (t, θ(t)) of a scalar weight function, exact at the break points;
* :func:`theta_by_basis`: a trained block's θ(t) projected onto each of the three bases;
* :func:`stage_table`: where every stage of a manifestation reads θ.
"""
from __future__ import annotations

import copy
from fractions import Fraction
from typing import Optional, Sequence

import torch

from ..core.bases import make_basis
from ..core.integrate import stage_positions
from ..core.models import ContinuousNet
from ..core.odeblock import coefficient_key

__all__ = ["THETA_PARAM", "THETA_ENTRIES", "theta_snapshot", "theta_curve", "theta_by_basis", "stage_table"]

# the weights whose θ(t) the chapters plot: centre taps of the first convolution of each block
THETA_PARAM = "conv1.weight"
THETA_ENTRIES = ((0, 0, 1, 1), (0, 1, 1, 1), (1, 0, 1, 1), (1, 1, 1, 1))


def _entries_of(t: torch.Tensor, entries) -> dict[str, list[float]]:
    out = {}
    for e in entries:
        if all(i < s for i, s in zip(e, t.shape[1:])):
            out[str(tuple(e))] = t[(slice(None),) + tuple(e)].detach().double().cpu().tolist()
    return out


def theta_snapshot(model_or_state, basis: str = "piecewise_constant", param: str = THETA_PARAM,
                   entries: Sequence[tuple] = THETA_ENTRIES, epoch: int = 0, refined: bool = False) -> dict:
    """The coefficients θ̂_β of a few entries of ``param`` and of the skip gain s(t), per block.

    Works on a :class:`ContinuousNet` or on its state dict (e.g. read from a checkpoint).  Plain
    JSON-able values: ``{"epoch", "refined", "blocks": [{"n_basis", "basis", "entries": {entry:
    [θ̂_0..θ̂_{M-1}]}, "gain": [s_0..]}]}``.
    """
    state = model_or_state.state_dict() if isinstance(model_or_state, torch.nn.Module) else model_or_state
    key = coefficient_key(param)
    blocks = []
    b = 0
    while f"blocks.{b}.coeffs.{key}" in state:
        coeffs = state[f"blocks.{b}.coeffs.{key}"]
        gain = state.get(f"blocks.{b}.skip_gain")
        blocks.append({
            "n_basis": int(coeffs.shape[0]), "basis": basis, "param": param,
            "entries": _entries_of(coeffs, entries),
            "gain": gain.detach().double().cpu().tolist() if gain is not None else None,
        })
        b += 1
    return {"epoch": int(epoch), "refined": bool(refined), "blocks": blocks}


def _curve_points(basis) -> list[tuple[Fraction, int]]:
    pts = basis.breakpoints
    if basis.degree <= 1:
        out = []
        for lo, hi in zip(pts[:-1], pts[1:]):
            out += [(lo, 1), (hi, -1)]
        return out
    n = 120
    return [(Fraction(k, n), 1 if k < n else -1) for k in range(n + 1)]


def theta_curve(coeffs: Sequence[float], basis: str = "piecewise_constant", T: float = 1.0) -> tuple[list, list]:
    """(t, θ(t)) of a scalar weight function Σ_β φ_β(t/T) θ̂_β, exact at the break points
    (both one-sided limits, so jumps of the piecewise-constant basis are drawn as jumps)."""
    coeffs = [float(c) for c in coeffs]
    b = make_basis(basis, len(coeffs))
    ts, vs = [], []
    for tau, side in _curve_points(b):
        ts.append(float(tau) * T)
        vs.append(sum(w * coeffs[beta] for beta, w in b.weights(tau, side)))
    return ts, vs


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
            res[kind] = {e: theta_curve(v, basis, blk.T) for e, v in _entries_of(c, entries).items()}
        out[basis] = res
    return out



def stage_table(scheme: str, n_steps: int, n_basis: int, basis: str = "piecewise_constant") -> list[dict]:
    """Where every stage of a manifestation reads θ: ``{"step", "stage", "t", "pieces"}`` per stage
    evaluation, ``pieces`` being the non-zero (β, φ_β) pairs of the basis at that exact position."""
    b = make_basis(basis, n_basis)
    return [{"step": p.k, "stage": p.stage, "t": p.t, "tau": p.tau,
             "pieces": b.weights(p.tau, p.side)} for p in stage_positions(scheme, n_steps)]
