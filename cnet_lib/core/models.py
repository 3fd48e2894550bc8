"""ContinuousNet for images: stem -> OdeBlock -> stitch -> OdeBlock -> stitch -> OdeBlock -> head.

The residual R(x, θ) of every OdeBlock is the paper's pre-activation unit
BN–ReLU–conv3×3–BN–ReLU–conv3×3.  A stitch changes resolution and width between
blocks: x_out = downsample(x) + ε_stitch R_stitch(x), with a strided 1×1 convolution as
``downsample`` (guarded on the CPU against a oneDNN fault: :mod:`.conv_guard`) and a strided
pre-activation unit as R_stitch.  With the piecewise-constant basis, Euler and N_t = M, each
OdeBlock is M ResNet layers, so the whole model is a pre-activation ResNet; other
manifestations are other graphs on the same θ.
"""
from __future__ import annotations

import contextlib
from typing import Iterator, Optional, Sequence, Union

import torch
from torch import nn

from .bases import Basis
from .conv_guard import GuardedConv1x1
from .odeblock import OdeBlock
from .schemes import Tableau

__all__ = ["PreActResidual", "Stitch", "ContinuousNet", "wide_continuous_net", "count_parameters"]


def count_parameters(module: nn.Module) -> int:
    """Number of trainable scalars."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def _conv3x3(c_in: int, c_out: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)


class PreActResidual(nn.Module):
    """The paper's pre-activation residual: R(x, θ) is BN, ReLU, a 3×3 convolution, BN, ReLU, a 3×3 convolution."""

    def __init__(self, channels: int, out_channels: Optional[int] = None, stride: int = 1):
        super().__init__()
        out_channels = channels if out_channels is None else out_channels
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv1 = _conv3x3(channels, out_channels, stride)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.conv2 = _conv3x3(out_channels, out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """R(x): ``conv2(relu(bn2(h)))`` with ``h = conv1(relu(bn1(x)))``."""
        h = self.conv1(torch.relu(self.bn1(x)))
        return self.conv2(torch.relu(self.bn2(h)))


class Stitch(nn.Module):
    """x_out = downsample(x) + ε_stitch R(x): halves the resolution and changes the width."""

    def __init__(self, c_in: int, c_out: int, epsilon: float = 1.0, stride: int = 2):
        super().__init__()
        self.downsample = GuardedConv1x1(c_in, c_out, stride)  # an nn.Conv2d; see conv_guard (oneDNN issue 6035)
        self.residual = PreActResidual(c_in, c_out, stride)
        self.epsilon = float(epsilon)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """downsample(x) + ε_stitch R(x)."""
        return self.downsample(x) + self.epsilon * self.residual(x)


def _per_block(value, n: int, name: str) -> tuple:
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} has {len(value)} entries but the model has {n} OdeBlocks")
        return tuple(value)
    return (value,) * n


def _one_or_each(values: list):
    """One value when every block has it, else the list of each block's."""
    return values[0] if all(v == values[0] for v in values) else values


class ContinuousNet(nn.Module):
    """A ContinuousNet classifier (paper Sec. 4): one OdeBlock per resolution.

    ``n_basis`` (M), ``n_steps`` (N_t, ``None``: N_t = M), ``scheme``, ``basis`` and the adaptive
    options (``rtol``, ``atol``, ``max_steps``, ``norm``: with ``rtol`` and ``atol`` an embedded pair
    chooses its own steps, :meth:`OdeBlock.manifest`) may be one value or one per block.  ``epsilon``
    scales the blocks' rate, ``epsilon_stitch`` the stitches' residual.  ``skip_init`` multiplies each
    block's rate by a zero-initialised learned s(t), so training starts from the identity.

    :meth:`config` gives these arguments back as they stand now (after :meth:`refine`, :meth:`project`
    or :meth:`manifest`): ``ContinuousNet(**model.config())`` and ``load_state_dict`` rebuild the same
    computation (:func:`cnet_lib.save_model` and :func:`cnet_lib.load_model` do both with a file).

    Example::

        model = ContinuousNet(channels=(16, 32, 64), n_basis=2, scheme="rk4_classic")
        logits = model(torch.randn(8, 3, 32, 32))  # (8, 10)
    """

    def __init__(
        self,
        channels: Sequence[int] = (16, 32, 64),
        n_basis: Union[int, Sequence[int]] = 1,
        n_steps: Union[int, Sequence[int], None] = None,
        scheme: Union[str, Tableau, Sequence[Union[str, Tableau]]] = "euler",
        basis: Union[str, Basis, Sequence[Union[str, Basis]]] = "piecewise_constant",
        epsilon: float = 1.0,
        epsilon_stitch: float = 1.0,
        num_classes: int = 10,
        in_channels: int = 3,
        skip_init: bool = True,
        T: float = 1.0,
        rtol: Union[float, Sequence[Optional[float]], None] = None,
        atol: Union[float, Sequence[Optional[float]], None] = None,
        max_steps: Union[int, Sequence[int]] = 10_000,
        norm: Union[str, Sequence[str]] = "max",
    ):
        super().__init__()
        channels = tuple(int(c) for c in channels)
        if not channels or min(channels) < 1:
            raise ValueError(f"channels must be a non-empty sequence of positive widths, got {channels}")
        n = len(channels)
        each = {name: _per_block(value, n, name) for name, value in (
            ("n_basis", n_basis), ("n_steps", n_steps), ("scheme", scheme), ("basis", basis), ("rtol", rtol),
            ("atol", atol), ("max_steps", max_steps), ("norm", norm))}
        self._config = dict(channels=list(channels), epsilon=float(epsilon), epsilon_stitch=float(epsilon_stitch),
                            num_classes=int(num_classes), in_channels=int(in_channels), skip_init=bool(skip_init),
                            T=float(T))
        self.stem = _conv3x3(in_channels, channels[0])
        self.blocks = nn.ModuleList(
            OdeBlock(PreActResidual(c), m, basis=b, scheme=sc, n_steps=nt, epsilon=epsilon, T=T, skip_init=skip_init,
                     rtol=rt, atol=at, max_steps=ms, norm=nm)
            for c, m, nt, sc, b, rt, at, ms, nm in zip(channels, *each.values())
        )
        for i, block in enumerate(self.blocks):
            block._label = f"ContinuousNet.blocks[{i}] ({channels[i]} channels)"
        self.stitches = nn.ModuleList(
            Stitch(c_in, c_out, epsilon_stitch) for c_in, c_out in zip(channels[:-1], channels[1:])
        )
        self.head_norm = nn.BatchNorm2d(channels[-1])
        self.fc = nn.Linear(channels[-1], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The logits of a batch of images ``x`` of shape ``(batch, in_channels, height, width)``."""
        want = self._config["in_channels"]
        if x.dim() != 4 or x.shape[1] != want:
            raise ValueError(f"ContinuousNet takes images of shape (batch, {want}, height, width) (in_channels={want}), "
                             f"got a tensor of shape {tuple(x.shape)}"
                             + (": add the batch dimension, x.unsqueeze(0)" if x.dim() == 3 and x.shape[0] == want else ""))
        x = self.stem(x)
        for i, block in enumerate(self.blocks):
            if i:
                x = self.stitches[i - 1](x)
            x = block(x)
        x = torch.relu(self.head_norm(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    # ---------------------------------------------------------------- model-level controls
    def config(self) -> dict:
        """The constructor's arguments as the model stands now, plain values only: ``ContinuousNet(**config())``
        followed by ``load_state_dict`` computes what this model computes.  Per block: ``n_basis`` and
        ``n_steps`` (lists), ``scheme``, ``basis`` and the adaptive options (one value when the blocks agree,
        else a list); ``rtol`` and ``atol`` are None for fixed steps."""
        blocks = [b.config() for b in self.blocks]
        each = {k: [c[k] for c in blocks] for k in ("scheme", "basis", "rtol", "atol", "max_steps", "norm")}
        return {**self._config, "n_basis": [c["n_basis"] for c in blocks], "n_steps": [c["n_steps"] for c in blocks],
                **{k: _one_or_each(v) for k, v in each.items()}}

    @property
    def manifestation(self) -> list[tuple[str, int]]:
        """Each block's (scheme name, N_t): the graph the next call builds."""
        return [b.manifestation for b in self.blocks]

    @property
    def tolerances(self) -> tuple:
        """Each block's :class:`~cnet_lib.core.step_control.Tolerances` (None for fixed steps)."""
        return tuple(b.tolerances for b in self.blocks)

    @property
    def solve_stats(self) -> list:
        """What each block's last adaptive forward did (:class:`~cnet_lib.core.adaptive.AdaptiveStats`,
        None for a block that has not run adaptively)."""
        return [b.last_solve for b in self.blocks]

    def manifest(self, scheme=None, n_steps=None, **adaptive) -> "ContinuousNet":
        """Set every block's scheme and N_t (each one value or one per block), or an embedded pair with
        ``rtol`` and ``atol`` (:meth:`OdeBlock.manifest`: adaptive steps); parameters untouched."""
        n = len(self.blocks)
        for b, sc, nt in zip(self.blocks, _per_block(scheme, n, "scheme"), _per_block(n_steps, n, "n_steps")):
            b.manifest(sc, nt, **adaptive)
        return self

    @contextlib.contextmanager
    def manifested(self, scheme=None, n_steps=None, **adaptive) -> Iterator["ContinuousNet"]:
        """Context manager: :meth:`manifest` for the body, then every block's manifestation restored."""
        n = len(self.blocks)
        with contextlib.ExitStack() as stack:
            for b, sc, nt in zip(self.blocks, _per_block(scheme, n, "scheme"), _per_block(n_steps, n, "n_steps")):
                stack.enter_context(b.manifested(sc, nt, **adaptive))
            yield self

    def refine(self, optimizer: Optional[torch.optim.Optimizer] = None) -> "ContinuousNet":
        """Every block: M -> 2M, N_t -> 2 N_t, θ(t) unchanged; with the ``optimizer`` that trains the model,
        its state (momentum) is carried over to the new coefficients (:meth:`OdeBlock.refine`)."""
        for b in self.blocks:
            b.refine(optimizer)
        return self

    def project(self, n_basis, basis=None, n_steps=None,
                optimizer: Optional[torch.optim.Optimizer] = None) -> "ContinuousNet":
        """Compress every block's θ to ``n_basis`` functions (one value or one per block) by L2 projection
        (:meth:`OdeBlock.project`); with the ``optimizer`` that trains the model, its state is projected too."""
        nb = _per_block(n_basis, len(self.blocks), "n_basis")
        nt = _per_block(n_steps, len(self.blocks), "n_steps")
        for b, m, k in zip(self.blocks, nb, nt):
            b.project(m, basis, k, optimizer)
        return self

    def n_parameters(self) -> int:
        """The number of trainable scalars (:func:`count_parameters`)."""
        return count_parameters(self)


def wide_continuous_net(num_classes: int = 100, **kwargs) -> ContinuousNet:
    """The wide variant (64-128-256) used for CIFAR-100."""
    return ContinuousNet(channels=(64, 128, 256), num_classes=num_classes, **kwargs)
