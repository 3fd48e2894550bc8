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
    """R(x, θ) = conv(ReLU(BN(conv(ReLU(BN(x)))))): the paper's pre-activation residual."""

    def __init__(self, channels: int, out_channels: Optional[int] = None, stride: int = 1):
        super().__init__()
        out_channels = channels if out_channels is None else out_channels
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv1 = _conv3x3(channels, out_channels, stride)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.conv2 = _conv3x3(out_channels, out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
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
        return self.downsample(x) + self.epsilon * self.residual(x)


def _per_block(value, n: int, name: str) -> tuple:
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} has {len(value)} entries but the model has {n} OdeBlocks")
        return tuple(value)
    return (value,) * n


class ContinuousNet(nn.Module):
    """A ContinuousNet classifier (paper Sec. 4): one OdeBlock per resolution.

    ``n_basis`` (M) and ``n_steps`` (N_t, ``None``: N_t = M) may be one value or one per
    block.  ``epsilon`` scales the blocks' rate, ``epsilon_stitch`` the stitches'
    residual.  ``skip_init`` multiplies each block's rate by a zero-initialised learned
    s(t), so training starts from the identity.
    """

    def __init__(
        self,
        channels: Sequence[int] = (16, 32, 64),
        n_basis: Union[int, Sequence[int]] = 1,
        n_steps: Union[int, Sequence[int], None] = None,
        scheme: Union[str, Tableau] = "euler",
        basis: Union[str, Basis] = "piecewise_constant",
        epsilon: float = 1.0,
        epsilon_stitch: float = 1.0,
        num_classes: int = 10,
        in_channels: int = 3,
        skip_init: bool = True,
        T: float = 1.0,
    ):
        super().__init__()
        channels = tuple(int(c) for c in channels)
        if not channels or min(channels) < 1:
            raise ValueError(f"channels must be a non-empty sequence of positive widths, got {channels}")
        n = len(channels)
        ms = _per_block(n_basis, n, "n_basis")
        nts = _per_block(n_steps, n, "n_steps")
        self._config = dict(
            channels=list(channels), n_basis=list(ms), basis=basis if isinstance(basis, str) else basis.name,
            epsilon=float(epsilon), epsilon_stitch=float(epsilon_stitch), num_classes=int(num_classes),
            in_channels=int(in_channels), skip_init=bool(skip_init), T=float(T),
        )
        self.stem = _conv3x3(in_channels, channels[0])
        self.blocks = nn.ModuleList(
            OdeBlock(PreActResidual(c), m, basis=basis, scheme=scheme, n_steps=nt, epsilon=epsilon, T=T, skip_init=skip_init)
            for c, m, nt in zip(channels, ms, nts)
        )
        self.stitches = nn.ModuleList(
            Stitch(c_in, c_out, epsilon_stitch) for c_in, c_out in zip(channels[:-1], channels[1:])
        )
        self.head_norm = nn.BatchNorm2d(channels[-1])
        self.fc = nn.Linear(channels[-1], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for i, block in enumerate(self.blocks):
            if i:
                x = self.stitches[i - 1](x)
            x = block(x)
        x = torch.relu(self.head_norm(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    # ---------------------------------------------------------------- model-level controls
    def config(self) -> dict:
        """Constructor arguments that a checkpoint must match (current M per block included)."""
        return {**self._config, "n_basis": [b.n_basis for b in self.blocks], "basis": self.blocks[0].basis.name}

    @property
    def manifestation(self) -> list[tuple[str, int]]:
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
        """Set every block's scheme and N_t (one value or one per block), or an embedded pair with
        ``rtol`` and ``atol`` (:meth:`OdeBlock.manifest`: adaptive steps); parameters untouched."""
        for b, nt in zip(self.blocks, _per_block(n_steps, len(self.blocks), "n_steps")):
            b.manifest(scheme, nt, **adaptive)
        return self

    @contextlib.contextmanager
    def manifested(self, scheme=None, n_steps=None, **adaptive) -> Iterator["ContinuousNet"]:
        """Context manager: :meth:`manifest` for the body, then every block's manifestation restored."""
        with contextlib.ExitStack() as stack:
            for b, nt in zip(self.blocks, _per_block(n_steps, len(self.blocks), "n_steps")):
                stack.enter_context(b.manifested(scheme, nt, **adaptive))
            yield self

    def refine(self, optimizer: Optional[torch.optim.Optimizer] = None) -> "ContinuousNet":
        """Every block: M -> 2M, N_t -> 2 N_t, θ(t) unchanged, optimizer momentum carried over."""
        for b in self.blocks:
            b.refine(optimizer)
        return self

    def project(self, n_basis, basis=None, n_steps=None) -> "ContinuousNet":
        """Compress every block's θ to ``n_basis`` functions (one value or one per block)."""
        nb = _per_block(n_basis, len(self.blocks), "n_basis")
        nt = _per_block(n_steps, len(self.blocks), "n_steps")
        for b, m, k in zip(self.blocks, nb, nt):
            b.project(m, basis, k)
        return self

    def n_parameters(self) -> int:
        return count_parameters(self)


def wide_continuous_net(num_classes: int = 100, **kwargs) -> ContinuousNet:
    """The wide variant (64-128-256) used for CIFAR-100."""
    return ContinuousNet(channels=(64, 128, 256), num_classes=num_classes, **kwargs)
