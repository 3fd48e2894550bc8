"""θ(t) of a trained run: recorded while it trains, a snapshot of a few weights after every epoch
(:func:`theta_snapshot`: the coefficients θ̂_β of a few entries of one weight and of the skip gain s(t) per OdeBlock,
as JSON-able lists), in ``theta_snapshots.json`` beside the checkpoint; the curve of such a recorded θ(t)
(:func:`theta_curve`); and how rough a trained θ(t) is from piece to piece (:func:`theta_roughness`).  The studies
that read θ(t) (the chapters *ContinuousNet* and *Refinement training*, the integrator x refinement factorial) share
these.

A snapshots file that cannot be read is set aside (one sentence,
:func:`cnet_lib.runtime.checkpoint.read_cache`); a finished run then gets its first and last epoch back
from its checkpoint (:func:`rebuilt_snapshots`), and a run in training starts its record again.
"""
from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path
from typing import Any, Optional, Sequence

import torch

from ...core.bases import make_basis
from ...core.odeblock import coefficient_key
from ...runtime.checkpoint import load_checkpoint, read_cache, write_cache
from ..training.train_config import TrainConfig, build_model
from ..training.train_state import CHECKPOINT
from .image_presets import run_hash

__all__ = ["THETA_PARAM", "THETA_ENTRIES", "theta_entries", "theta_snapshot", "SNAPSHOTS", "read_snapshots",
           "initial_snapshot", "write_snapshots", "rebuilt_snapshots", "SnapshotRecorder", "theta_curve",
           "theta_roughness"]

SNAPSHOTS = "theta_snapshots.json"

# the weights whose θ(t) the chapters plot: centre taps of the first convolution of each block
THETA_PARAM = "conv1.weight"


THETA_ENTRIES = ((0, 0, 1, 1), (0, 1, 1, 1), (1, 0, 1, 1), (1, 1, 1, 1))


def theta_entries(t: torch.Tensor, entries) -> dict[str, list[float]]:
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
            "entries": theta_entries(coeffs, entries),
            "gain": gain.detach().double().cpu().tolist() if gain is not None else None,
        })
        b += 1
    return {"epoch": int(epoch), "refined": bool(refined), "blocks": blocks}


def _snapshots_problem(obj: Any) -> Optional[str]:
    """What is wrong with the parsed contents of a θ snapshots file (``None``: nothing)."""
    snaps = obj.get("snapshots") if isinstance(obj, dict) else None
    if not isinstance(snaps, list) or not all(
            isinstance(s, dict) and isinstance(s.get("epoch"), int) and isinstance(s.get("blocks"), list) for s in snaps):
        return "it does not hold a list of snapshots, each with an epoch and its blocks (an older format?)"
    return None


def read_snapshots(folder: Path, label: str) -> Optional[list]:
    """The θ snapshots recorded in ``folder`` (``None`` without a usable file: a damaged or
    older-format one is set aside with one sentence, :func:`cnet_lib.runtime.checkpoint.read_cache`)."""
    obj = read_cache(folder / SNAPSHOTS, f"{label}: the θ(t) snapshots", _snapshots_problem)
    return None if obj is None else obj["snapshots"]


def initial_snapshot(cfg: TrainConfig) -> dict:
    """θ̂ of the model the run starts from (built from its seed exactly as training builds it), epoch 0."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)  # train() builds the initial model exactly like this
        init = build_model(cfg)
    return theta_snapshot(init, cfg.basis, epoch=0)


def write_snapshots(folder: Path, cfg: TrainConfig, snaps: list, label: str) -> bool:
    """Write ``snaps`` to ``folder``'s snapshots file (a cache: an unwritable folder is said in one
    sentence, and False returned)."""
    return write_cache(folder / SNAPSHOTS, json.dumps({"run_hash": run_hash(cfg), "snapshots": snaps}),
                       f"{label}: the θ(t) snapshots")


def rebuilt_snapshots(folder: Path, cfg: TrainConfig, model_state: dict, history: list, label: str,
                      writable: bool) -> list:
    """The θ snapshots of a finished run in ``folder``: those recorded, else (the file was damaged and set
    aside) the first and the last epoch's, rebuilt from the checkpoint's ``model_state``, said in one
    sentence and written back when ``writable``.  A run that never recorded any gets none."""
    recorded = os.path.lexists(folder / SNAPSHOTS)
    snaps = read_snapshots(folder, label)
    if snaps is not None:
        return snaps
    if not recorded:
        return []
    snaps = [initial_snapshot(cfg), theta_snapshot(model_state, cfg.basis, epoch=history[-1]["epoch"],
                                                   refined=bool(history[-1].get("refined")))]
    print(f"{label}: θ(t) is now recorded for epochs 0 and {history[-1]['epoch']} only (from the checkpoint); "
          "the epochs between were in the damaged file.")
    if writable:
        write_snapshots(folder, cfg, snaps, label)
    return snaps


class SnapshotRecorder:
    """``on_epoch`` callback of :func:`train`: reads the checkpoint just written and appends θ̂.

    A snapshots file that cannot be read is set aside (one sentence) and the record starts again
    from the initial θ(t): the epochs it held are not recorded any more."""

    def __init__(self, out: Path, cfg: TrainConfig, verbose: bool, label: str):
        self.out, self.cfg, self.verbose, self.label = out, cfg, verbose, label
        self.snaps = read_snapshots(out, label) or []
        if not self.snaps:
            self.snaps = [initial_snapshot(cfg)]
            self._write()

    def _write(self):
        write_snapshots(self.out, self.cfg, self.snaps, self.label)

    def __call__(self, row: dict) -> None:
        ck = load_checkpoint(self.out / CHECKPOINT, map_location="cpu")
        self.snaps = [s for s in self.snaps if s["epoch"] < row["epoch"]]
        self.snaps.append(theta_snapshot(ck["model"], self.cfg.basis, epoch=row["epoch"], refined=row["refined"]))
        self._write()
        if self.verbose:
            print(f"  {self.label}: epoch {row['epoch']}/{self.cfg.epochs}  N_t={row['n_steps']}  "
                  f"loss {row['train_loss']:.3f}  test acc {row['test_acc']:.3f}  {row['train_seconds']:.1f} s"
                  + ("  (refined before this epoch)" if row["refined"] else ""))


# --------------------------------------------------------------------------- a recorded θ(t) as a curve, and its roughness
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


@torch.no_grad()
def theta_roughness(model: torch.nn.Module) -> list[dict]:
    """How far apart neighbouring pieces of θ(t) are, per OdeBlock: over its convolution coefficients, the norm of
    the jump between pieces β and β + 1 relative to the two pieces' mean norm, ‖θ̂_{β+1} − θ̂_β‖ / ((‖θ̂_β‖ + ‖θ̂_{β+1}‖)/2),
    averaged over the jumps (one row ``{"block", "n_basis", "roughness", "largest"}`` per block; ``None`` for a block
    of one piece).  0 for a θ(t) that is one constant; about 1.4 for independent pieces of equal size (a freshly
    initialised block); small for a θ(t) whose pieces are samples of a smooth function.  The paper's Figure 8 reads
    the smoothness of its trained weights by eye; this is a number for it."""
    rows = []
    for i, b in enumerate(model.blocks):
        jumps = []
        for name, c in getattr(b, "coeffs", {}).items():
            if c.dim() < 3 or c.shape[0] < 2:  # convolution weights only (M, out, in, k, k)
                continue
            flat = c.detach().double().flatten(1)
            norms = flat.norm(dim=1)
            jumps += ((flat[1:] - flat[:-1]).norm(dim=1) / ((norms[1:] + norms[:-1]) / 2)).tolist()
        rows.append({"block": i + 1, "n_basis": getattr(b, "n_basis", None),
                     "roughness": sum(jumps) / len(jumps) if jumps else None, "largest": max(jumps) if jumps else None})
    return rows
