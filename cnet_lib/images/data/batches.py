"""Batches of images for training and evaluation: normalisation, random crop and flip (and, when asked,
cutout), all on the images' own device.

The whole split stays one ``uint8`` tensor ``(N, 3, 32, 32)`` on the training device; random crop (zero
pad 4) + horizontal flip + normalisation are done for a whole batch at once with tensor indexing (no
per-image Python).  All randomness comes from one CPU :class:`torch.Generator`, so a run is reproducible
and resumable from its state.
"""
from __future__ import annotations

from typing import Iterator, Optional

import torch

from ...runtime.distributed import shard_bounds

__all__ = ["normalize", "draw_augmentation", "apply_augmentation", "cutout_mask", "augment", "iterate_batches",
           "n_batches"]


def normalize(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """uint8 ``(B, 3, H, W)`` -> float32, (x/255 - mean) / std per channel."""
    scale = (1.0 / (255.0 * std)).view(1, -1, 1, 1)
    shift = (mean / std).view(1, -1, 1, 1)
    return x.float() * scale - shift


def draw_augmentation(batch: int, generator: torch.Generator, pad: int = 4, flip: bool = True) -> torch.Tensor:
    """The random crop offsets and flips of one batch, drawn on the CPU from ``generator``.

    Returns an int64 tensor ``(3, batch)``: rows ``dy``, ``dx`` (in ``0..2*pad``) and ``flip``
    (0 or 1).  Drawing them on the CPU makes results independent of the device.
    """
    dy = torch.randint(0, 2 * pad + 1, (batch,), generator=generator)
    dx = torch.randint(0, 2 * pad + 1, (batch,), generator=generator)
    fl = torch.rand(batch, generator=generator) < 0.5 if flip else torch.zeros(batch, dtype=torch.bool)
    return torch.stack([dy, dx, fl.long()])


def cutout_mask(params: torch.Tensor, cutout: int, height: int, width: int) -> torch.Tensor:
    """Cutout (DeVries and Taylor, 2017): a ``(B, 1, H, W)`` float mask, 0 on a ``cutout`` × ``cutout`` square
    centred on the row and column in rows 3 and 4 of ``params`` (:func:`iterate_batches` draws them), cut off
    where it passes the image's edge, 1 elsewhere.  Multiplying a normalised batch by it sets the square to the mean colour."""
    cy, cx = params[3], params[4]
    lo_y, lo_x = cy - cutout // 2, cx - cutout // 2
    ys = torch.arange(height, device=params.device)[None, :]
    xs = torch.arange(width, device=params.device)[None, :]
    in_y = (ys >= lo_y[:, None]) & (ys < lo_y[:, None] + cutout)  # (B, H)
    in_x = (xs >= lo_x[:, None]) & (xs < lo_x[:, None] + cutout)  # (B, W)
    return (~(in_y[:, :, None] & in_x[:, None, :])).unsqueeze(1).float()


def apply_augmentation(x: torch.Tensor, params: torch.Tensor, pad: int = 4) -> torch.Tensor:
    """Crop ``x`` ``(B, C, H, W)`` from its zero-padded copy at the offsets of ``params`` and flip
    the images marked there (see :func:`draw_augmentation`), with one gather on ``x``'s device."""
    B, C, H, W = x.shape
    dev = x.device
    params = params.to(dev)
    dy, dx, fl = params[0], params[1], params[2].bool()
    xp = torch.nn.functional.pad(x, (pad, pad, pad, pad))
    rows = dy[:, None] + torch.arange(H, device=dev)  # (B, H)
    ar = torch.arange(W, device=dev)
    cols = dx[:, None] + torch.where(fl[:, None], W - 1 - ar, ar)  # (B, W): flip = read columns backwards
    b = torch.arange(B, device=dev)[:, None, None]
    out = xp.permute(0, 2, 3, 1)[b, rows[:, :, None], cols[:, None, :]]  # (B, H, W, C)
    return out.permute(0, 3, 1, 2).contiguous()


def augment(x: torch.Tensor, generator: torch.Generator, pad: int = 4, flip: bool = True) -> torch.Tensor:
    """Random crop of the zero-padded image (pad ``pad``) and random horizontal flip, batched.

    ``x`` is ``(B, C, H, W)`` (any dtype, any device); the random offsets and flips are drawn
    on the CPU from ``generator`` (so results do not depend on the device) and applied with one
    gather.  Returns a tensor of ``x``'s dtype and shape.
    """
    return apply_augmentation(x, draw_augmentation(len(x), generator, pad, flip), pad)


def _draw_pass(starts, batch_size: int, n: int, generator: torch.Generator, cutout: int, shape) -> torch.Tensor:
    """The augmentation numbers of one pass (:func:`iterate_batches`): each batch's crop and flip in turn, then,
    with cutout, the squares' centres (rows, then columns) for the whole pass, so that the crops and flips are
    those of a run without cutout."""
    aug = torch.cat([draw_augmentation(min(batch_size, n - s), generator) for s in starts], dim=1)
    if cutout > 0:
        aug = torch.cat([aug, torch.randint(0, shape[0], (1, aug.shape[1]), generator=generator),
                         torch.randint(0, shape[1], (1, aug.shape[1]), generator=generator)])
    return aug


def iterate_batches(
    x: torch.Tensor,
    y: Optional[torch.Tensor],
    batch_size: int,
    mean: torch.Tensor,
    std: torch.Tensor,
    generator: Optional[torch.Generator] = None,
    shuffle: bool = False,
    train_augment: bool = False,
    drop_last: bool = False,
    shard: Optional[tuple[int, int]] = None,
    cutout: int = 0,
) -> Iterator[tuple[torch.Tensor, Optional[torch.Tensor]]]:
    """Yield normalised float batches ``(xb, yb)`` from uint8 ``x`` on its own device (``yb`` None when
    ``y`` is None: images without labels, e.g. for predictions).

    With ``shuffle`` the order is a permutation drawn from ``generator`` (CPU); with
    ``train_augment`` every batch is randomly cropped and flipped, and with ``cutout > 0`` as well a square
    of that side set to the mean colour (:func:`cutout_mask`).  ``drop_last`` drops a final partial batch
    (never the only batch).

    All random numbers of the pass are drawn when it starts, in the order a batch-by-batch
    loop would draw them (the permutation, then each batch's :func:`draw_augmentation`; with cutout
    then the squares' centres, rows then columns, for the whole pass), and
    reach the device in one copy: a GPU never waits for a per-batch host-to-device copy, and
    the results are those of :func:`augment` batch by batch, bit for bit.

    ``shard=(rank, size)`` yields only rank ``rank``'s contiguous slice of every batch
    (:func:`cnet_lib.runtime.distributed.shard_bounds`), with the random numbers drawn exactly as
    without it: the ``size`` ranks' slices, put together, are the batches of one process.
    """
    n = len(x)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if (shuffle or train_augment) and generator is None:
        raise ValueError("shuffle / train_augment need a torch.Generator (e.g. torch.Generator().manual_seed(0))")
    order = torch.randperm(n, generator=generator) if shuffle else None
    stop = n - n % batch_size if drop_last and n >= batch_size else n
    starts = range(0, stop, batch_size)
    aug = _draw_pass(starts, batch_size, n, generator, cutout, x.shape[-2:]).to(x.device) if train_augment else None
    if order is not None:
        order = order.to(x.device)
    for s in starts:
        lo, hi = s, min(s + batch_size, n)
        if shard is not None:
            a, b = shard_bounds(hi - lo, *shard)
            lo, hi = s + a, s + b
        if order is None:
            xb, yb = x[lo:hi], None if y is None else y[lo:hi]
        else:
            i = order[lo:hi]
            xb, yb = x[i], None if y is None else y[i]
        if aug is not None:
            xb = apply_augmentation(xb, aug[:, lo:hi])
        xb = normalize(xb, mean, std)
        if aug is not None and cutout > 0:
            xb = xb * cutout_mask(aug[:, lo:hi], cutout, xb.shape[-2], xb.shape[-1])
        yield xb, yb


def n_batches(n: int, batch_size: int, drop_last: bool = False) -> int:
    """How many batches :func:`iterate_batches` yields for ``n`` examples."""
    return n // batch_size if drop_last and n >= batch_size else -(-n // batch_size)
