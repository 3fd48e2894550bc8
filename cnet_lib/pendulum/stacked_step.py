"""One training step of many ODE-Nets at once: their one-step losses and gradients, by hand, over stacked weights.

M ODE-Nets ``G_m(x) = A_m tanh(W_m x + b_m)`` (one hidden width) are held as stacked tensors,
:class:`StackedParams`: ``Wt`` (M, 2, H) = W_mᵀ, ``b`` (M, 1, H), ``A`` (M, 2, H) = A_m.  Every (M, ·, H)
layout puts the hidden units last, where the batched products with two rows or columns are fastest: with
``A`` stored as (M, H, 2) the products ``tanh · Aᵀ`` and ``tanhᵀ · dk`` took twice and three times as long on
a CPU (MKL, float64, measured).  Each model has
its own training pairs (its own Δt_data, so its own count N_m), its own scheme and its own step h = Δt_data.

*Blocks.*  The pairs of every model are cut into blocks of ``r`` rows (the last one padded with masked rows),
so that the pairs of all models form one tensor (B, r, 2) whatever their counts, and each block reads its
model's weights (a gather of B small matrices).  The blocks of the models trained with one scheme form a
*group*; a group runs its scheme's stages with batched matrix products (``torch.baddbmm``/``torch.bmm``), so
no model computes a stage its scheme does not have and no pair is computed twice.

*Gradients by hand.*  The step ``y = x + h Σ_i b_i k_i``, ``k_i = G(x + h Σ_j a_ij k_j)``, is differentiated in
reverse stage order (``dk_j = h b_j dy + Σ_{i>j} h a_ij dx_i``; through G: ``dz = (dk A) ⊙ (1 − tanh²)``,
``dW += dzᵀ x_i``, ``db += Σ dz``, ``dA += dkᵀ tanh``, ``dx_i = dz W``): the same products autograd would
form, without its bookkeeping, and with no host synchronisation (so a CUDA graph can record the step).  The
loss of model m is ``Σ_k ‖F(x_k) − x_{k+1}‖² / N_m / Δt_m²``, that of :func:`cnet_lib.pendulum.train_odenet`;
tests/test_pendulum_batched.py checks the gradients against autograd and the training against training alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch

from ..core.integrate import weighted_sum
from ..core.schemes import Tableau

__all__ = ["StackedParams", "ModelPairs", "StepGroup", "BlockLayout", "block_rows_for", "make_layout", "fast_tanh",
           "stacked_loss_and_grads"]


GROUP_ROWS = 1000
"""Rows of pairs per group at most (see :func:`make_layout`)."""


@dataclass
class StackedParams:
    """The weights of M ODE-Nets (module doc): ``Wt`` (M, 2, H), ``b`` (M, 1, H), ``A`` (M, 2, H)."""

    Wt: torch.Tensor
    b: torch.Tensor
    A: torch.Tensor

    def tensors(self) -> tuple:
        return self.Wt, self.b, self.A

    @classmethod
    def from_models(cls, models: Sequence[torch.nn.Module], device: torch.device) -> "StackedParams":
        """Stack :class:`cnet_lib.pendulum.ODENet` modules (float64) onto ``device``."""
        with torch.no_grad():
            Wt = torch.stack([m.inner.weight.t() for m in models]).to(device, torch.float64).contiguous()
            b = torch.stack([m.inner.bias for m in models]).unsqueeze(1).to(device, torch.float64).contiguous()
            A = torch.stack([m.outer.weight for m in models]).to(device, torch.float64).contiguous()
        return cls(Wt, b, A)

    def write_into(self, m: int, model: torch.nn.Module) -> None:
        """Copy model ``m``'s weights into an ODENet ``model`` (on the CPU, float64)."""
        with torch.no_grad():
            model.inner.weight.copy_(self.Wt[m].t().cpu())
            model.inner.bias.copy_(self.b[m, 0].cpu())
            model.outer.weight.copy_(self.A[m].cpu())


@dataclass(frozen=True)
class ModelPairs:
    """What one model of a batch trains on: its index in the stack, its scheme, ``dt`` (= Δt_data, the step)
    and its pairs ``x_in``, ``x_out`` (N, 2)."""

    index: int
    tab: Tableau
    dt: float
    x_in: torch.Tensor
    x_out: torch.Tensor


@dataclass
class StepGroup:
    """The blocks of the models trained with one scheme: ``idx`` (B,) the model of each block and ``member``
    (M, B) its one-hot matrix (block sums are gathered per model by a matrix product, the same order on every
    device, where ``index_add_`` adds in a varying order on CUDA), ``x_in``, ``x_out`` (B, r, 2), ``mask``
    (B, r, 1) 1 on real pairs and 0 on padding, ``h`` (B, 1, 1) the step and ``c`` (B, 1, 1) the loss's factor
    1 / N_m / Δt_m² of each block's model."""

    tab: Tableau
    idx: torch.Tensor
    member: torch.Tensor
    x_in: torch.Tensor
    x_out: torch.Tensor
    mask: torch.Tensor
    h: torch.Tensor
    c: torch.Tensor


@dataclass
class BlockLayout:
    """The groups of one batch, the number of models ``M`` of the stack, ``inv_n`` and ``inv_dt2`` (M,)
    (1/N_m and 1/Δt_m²; 0 for a model not in the batch) and the block rows ``r``."""

    groups: list
    M: int
    inv_n: torch.Tensor
    inv_dt2: torch.Tensor
    r: int


def block_rows_for(counts: Sequence[int], smallest: int = 32, padded: int = 100) -> int:
    """Rows per block for models with these pair counts: their greatest common divisor when it is at least
    ``smallest`` (no padding at all), else ``padded`` (each model's last block padded), never more than the
    largest count."""
    r = math.gcd(*counts)
    return r if r >= smallest else min(padded, max(counts))


def _blocks(p: ModelPairs, r: int, dtype, device) -> tuple:
    """``(x_in, x_out, mask)`` of one model cut into blocks of ``r`` rows, the last block padded by
    repeating the last pair (masked out, so it adds nothing)."""
    n = p.x_in.shape[0]
    nb = -(-n // r)
    pad = nb * r - n
    x_in = torch.cat([p.x_in, p.x_in[-1:].expand(pad, 2)]) if pad else p.x_in
    x_out = torch.cat([p.x_out, p.x_out[-1:].expand(pad, 2)]) if pad else p.x_out
    mask = torch.cat([torch.ones(n, 1, dtype=dtype), torch.zeros(pad, 1, dtype=dtype)])
    to = dict(device=device, dtype=dtype)
    return x_in.reshape(nb, r, 2).to(**to), x_out.reshape(nb, r, 2).to(**to), mask.reshape(nb, r, 1).to(**to)


def _group(tab: Tableau, blocks: Sequence[tuple], M: int, device: torch.device) -> StepGroup:
    """A :class:`StepGroup` of ``blocks``: ``(model index, dt, c, x_in, x_out, mask)`` each."""
    dtype = torch.float64
    idx = torch.tensor([bl[0] for bl in blocks], device=device)
    h = torch.tensor([bl[1] for bl in blocks], dtype=dtype, device=device).view(-1, 1, 1)
    c = torch.tensor([bl[2] for bl in blocks], dtype=dtype, device=device).view(-1, 1, 1)
    member = (torch.arange(M, device=device).unsqueeze(1) == idx.unsqueeze(0)).to(dtype)
    x_in, x_out, mask = (torch.stack([bl[k] for bl in blocks]).to(device) for k in (3, 4, 5))
    return StepGroup(tab, idx, member, x_in, x_out, mask, h, c)


def make_layout(pairs: Sequence[ModelPairs], M: int, device: torch.device, r: int,
                group_rows: int = GROUP_ROWS) -> BlockLayout:
    """The :class:`BlockLayout` of the models ``pairs`` (a subset of a stack of ``M``) in blocks of ``r`` rows,
    the blocks of one scheme in groups of at most ``group_rows`` rows (at least one block each)."""
    dtype = torch.float64
    by_scheme: dict = {}
    for p in pairs:
        x_in, x_out, mask = _blocks(p, r, dtype, torch.device("cpu"))
        c = 1.0 / p.dt**2 / p.x_in.shape[0]
        tab, blocks = by_scheme.setdefault(p.tab.name, (p.tab, []))
        blocks += [(p.index, p.dt, c, x_in[k], x_out[k], mask[k]) for k in range(x_in.shape[0])]
    per_group = max(1, group_rows // r)
    groups = [_group(tab, blocks[k:k + per_group], M, device)
              for tab, blocks in by_scheme.values() for k in range(0, len(blocks), per_group)]
    inv_n = torch.zeros(M, dtype=dtype)
    inv_dt2 = torch.zeros(M, dtype=dtype)
    for p in pairs:
        inv_n[p.index], inv_dt2[p.index] = 1.0 / p.x_in.shape[0], 1.0 / p.dt**2
    return BlockLayout(groups, M, inv_n.to(device), inv_dt2.to(device), r)


def fast_tanh(z2: torch.Tensor) -> torch.Tensor:
    """``tanh(z) = 2σ(2z) − 1`` from ``z2`` = 2z, in place.  On the CPU torch's float64 sigmoid is vectorised and
    its tanh is not: this is about 4 times faster (measured on 2 cores); it is within 4e-16 of ``torch.tanh``
    (tests/test_pendulum_batched.py)."""
    return torch.sigmoid_(z2).mul_(2.0).sub_(1.0)


def _forward(g: StepGroup, wt, bb, a) -> tuple:
    """The scheme's stages on every block: ``(stage inputs, tanh values, stage rates, y)``; the pre-activation is
    computed doubled, from doubled weights (exact: a power of two), for :func:`fast_tanh`."""
    tab, h, x = g.tab, g.h, g.x_in
    wt2, bb2, at = 2.0 * wt, 2.0 * bb, a.transpose(1, 2)
    xs, ts, ks = [None] * tab.stages, [None] * tab.stages, [None] * tab.stages
    for i in tab.used_stages:
        xi = x + h * weighted_sum(tab.float_a[i], ks) if tab.float_a[i] else x
        xs[i] = xi
        ts[i] = fast_tanh(torch.baddbmm(bb2, xi, wt2))
        ks[i] = torch.bmm(ts[i], at)
    return xs, ts, ks, x + h * weighted_sum(tab.float_b, ks)


def _backward(g: StepGroup, wt, a, xs, ts, hdy) -> tuple:
    """Reverse stage order from ``hdy`` = h·∂L/∂y: the block gradients ``(dWt, db, dA)``."""
    tab = g.tab
    b = dict(tab.float_b)
    later = {j: [(i, w) for i in tab.used_stages for jj, w in tab.float_a[i] if jj == j] for j in tab.used_stages}
    dws, dbs, das = [], [], []
    hdx = [None] * tab.stages  # h·∂L/∂x_i of the stages whose input reads earlier stages
    for j in reversed(tab.used_stages):
        terms = ([(0, b[j])] if j in b else []) + [(1 + i, w) for i, w in later[j]]
        dk = weighted_sum(terms, [hdy] + hdx)
        dz = torch.ops.aten.tanh_backward(torch.bmm(dk, a), ts[j])
        das.append(torch.bmm(dk.transpose(1, 2), ts[j]))
        dws.append(torch.bmm(xs[j].transpose(1, 2), dz))
        dbs.append(dz.sum(1, keepdim=True))
        if tab.float_a[j]:
            hdx[j] = g.h * torch.bmm(dz, wt.transpose(1, 2))
    return sum(dws[1:], dws[0]), sum(dbs[1:], dbs[0]), sum(das[1:], das[0])


def stacked_loss_and_grads(params: StackedParams, layout: BlockLayout) -> tuple:
    """``(loss (M,), (gWt, gb, gA))``: each model's one-step loss and its gradients (module doc); zero for
    the models of the stack that are not in ``layout``.  No host synchronisation."""
    Wt, b, A = params.tensors()
    raw = torch.zeros(layout.M, dtype=Wt.dtype, device=Wt.device)
    grads = [torch.zeros_like(t) for t in (Wt, b, A)]
    for g in layout.groups:
        wt, bb, a = Wt.index_select(0, g.idx), b.index_select(0, g.idx), A.index_select(0, g.idx)
        xs, ts, _, y = _forward(g, wt, bb, a)
        diff = (y - g.x_out) * g.mask
        raw.addmv_(g.member, (diff * diff).sum((1, 2)))
        hdy = g.h * (g.c * (2 * diff))
        for full, block in zip(grads, _backward(g, wt, a, xs, ts, hdy)):
            full.view(layout.M, -1).addmm_(g.member, block.reshape(block.shape[0], -1))
    return raw * layout.inv_n * layout.inv_dt2, tuple(grads)
