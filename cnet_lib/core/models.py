"""ContinuousNet for images: stem -> OdeBlock -> stitch -> OdeBlock -> stitch -> OdeBlock -> head.

The residual R(x, θ) of every OdeBlock is the paper's pre-activation unit
BN–ReLU–conv3×3–BN–ReLU–conv3×3.  A stitch changes resolution and width between
blocks: x_out = downsample(x) + ε_stitch R_stitch(x), with a strided 1×1 convolution as
``downsample`` (guarded on the CPU against a oneDNN fault: :class:`GuardedConv1x1`) and a strided
pre-activation unit as R_stitch.  With the piecewise-constant basis, Euler and N_t = M, each
OdeBlock is M ResNet layers, so the whole model is a pre-activation ResNet; other
manifestations are other graphs on the same θ.

Also here: the plain pre-activation ResNet a ContinuousNet is with Euler and N_t = M
(:func:`resnet_from_continuousnet`), and the guard around a oneDNN fault of the CPU's strided 1×1 convolution
(:class:`GuardedConv1x1`).
"""
from __future__ import annotations

import contextlib
import copy
import warnings
from typing import Iterator, Optional, Sequence, Union

import torch
from torch import nn

from .bases import Basis
from .odeblock import OdeBlock
from .schemes import Tableau

__all__ = ["PreActResidual", "Stitch", "ContinuousNet", "wide_continuous_net", "count_parameters", "PreActResNet",
           "resnet_from_continuousnet", "GuardedConv1x1", "OneDNNLayoutWarning", "onednn_hazard",
           "GUARDED_INPUT_CHANNELS"]


# A guard around a known fault of the CPU convolution library under torch 2.13.
#
# torch 2.13.0's CPU build bundles oneDNN v3.12.0.  On a CPU without AVX-512 its AVX2 kernel for a
# **1×1 convolution with stride > 1** computes the weight gradient through a workspace that is too
# small when the input is laid out **channels-last** (NHWC) and has fewer input channels than the
# kernel's channel block (8 on AVX2): the backward pass writes past the workspace.  The result is a
# heap corruption (``double free or corruption``, a segmentation fault), a hang with two or more
# threads, or silently wrong gradients (uxlfoundation/oneDNN issue 6035, open).  Measured on this
# project's AMD EPYC machine (``torch.backends.cpu.get_cpu_capability()`` = ``AVX2``): every input
# width from 2 to 7 fails, 1 and 8 to 32 pass; stride 1, a 3×3 kernel, NCHW input with NCHW weights, and
# oneDNN switched off all pass.  ``tests/onednn_6035_repro.py`` is the five-line reproduction.
#
# A channels-last *weight* triggers it as well: torch hands oneDNN the channels-last layout when the
# input or the weight is channels-last.  The stitches' downsampling convolution (1×1, stride 2) is the
# one convolution of this library of that shape, so it is a :class:`GuardedConv1x1`: on the CPU, when
# the fault's conditions can hold, it runs on NCHW copies of its input and weight (the gradient still
# reaches the parameter) and says why once.  CUDA and wide inputs are untouched.  The guard covers
# inputs narrower than 16 channels, not only 8, because AVX-512 kernels use a block of 16 and could
# not be tested here.

# inputs narrower than this take the NCHW path on the CPU (8 confirmed on AVX2; 16 covers AVX-512's block)
GUARDED_INPUT_CHANNELS = 16


class OneDNNLayoutWarning(UserWarning):
    """A channels-last tensor was turned into NCHW on the CPU to avoid oneDNN issue 6035."""


def onednn_hazard(conv: nn.Conv2d, device: torch.device) -> bool:
    """Whether ``conv`` has the shape of oneDNN issue 6035 on ``device``: the CPU, a 1×1 kernel, a
    stride above 1, and fewer than :data:`GUARDED_INPUT_CHANNELS` input channels per group."""
    return (torch.device(device).type == "cpu" and tuple(conv.kernel_size) == (1, 1) and max(conv.stride) > 1
            and conv.in_channels // conv.groups < GUARDED_INPUT_CHANNELS)


class GuardedConv1x1(nn.Conv2d):
    """A strided 1×1 convolution (an ``nn.Conv2d``: same parameters, same state-dict keys) that on
    the CPU never hands oneDNN a channels-last input or weight narrower than
    :data:`GUARDED_INPUT_CHANNELS` channels (see the module docstring)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 2, bias: bool = False):
        super().__init__(in_channels, out_channels, 1, stride=stride, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not onednn_hazard(self, x.device):
            return super().forward(x)
        x_nchw, w_nchw = _nchw(x), _nchw(self.weight)
        if x_nchw is not x or w_nchw is not self.weight:
            warnings.warn(
                f"a channels-last tensor reached a 1×1 stride-{self.stride[0]} convolution with "
                f"{self.in_channels} input channels on the CPU; it runs in NCHW layout instead, because the "
                f"oneDNN bundled with torch {torch.__version__} can corrupt memory, hang or return wrong "
                "gradients there on AVX2 CPUs (oneDNN issue 6035; cnet_lib/core/models.py). Results are "
                "unchanged; channels-last brings no speed on the CPU, so pass NCHW tensors to silence this.",
                OneDNNLayoutWarning, stacklevel=2)
        return self._conv_forward(x_nchw, w_nchw, self.bias)


def _nchw(t: torch.Tensor) -> torch.Tensor:
    """``t`` itself when its strides are the row-major (NCHW) ones, else a row-major copy (through
    which gradients flow).  Not ``t.contiguous()``: a 1×1 weight in channels-last order counts as
    contiguous, yet torch hands it to oneDNN as channels-last."""
    expected, step = [], 1
    for size in reversed(t.shape):
        expected.append(step)
        step *= size
    if tuple(reversed(expected)) == t.stride():
        return t
    return t.clone(memory_format=torch.contiguous_format)


# ---------------------------------------------------------------------- the module's own part (its docstring above)

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
        """Each block's :class:`~cnet_lib.core.adaptive.Tolerances` (None for fixed steps)."""
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


# A plain pre-activation ResNet, and the map ContinuousNet -> ResNet.
#
# With the piecewise-constant basis, Euler and N_t = M, an OdeBlock is the residual loop
#
#     x_{k+1} = x_k + h ε s_k R(x_k, θ̂_k),   h = T / N_t,
#
# so a ContinuousNet in that manifestation *is* this ResNet (same weights, same numbers,
# bit for bit).  :func:`resnet_from_continuousnet` builds it with copied weights.

class PreActResNet(nn.Module):
    """stem -> [layers, stitch]* -> norm/ReLU -> pool -> linear, with explicit residual layers.

    Layer k of stage s computes x + h_s * (gain_{s,k} * R_{s,k}(x)).
    """

    def __init__(self, stem, stages, stitches, head_norm, fc, steps, gains):
        super().__init__()
        self.stem, self.stitches, self.head_norm, self.fc = stem, stitches, head_norm, fc
        self.stages = nn.ModuleList(nn.ModuleList(s) for s in stages)
        self.steps = list(steps)  # h per stage
        self.register_buffer("gains", gains)  # (n_stages, max layers) ε s_k

    def forward(self, x):
        x = self.stem(x)
        for i, layers in enumerate(self.stages):
            if i:
                x = self.stitches[i - 1](x)
            h = self.steps[i]
            for k, layer in enumerate(layers):
                x = x + h * (self.gains[i, k] * layer(x))
        x = torch.relu(self.head_norm(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def resnet_from_continuousnet(model: ContinuousNet) -> PreActResNet:
    """The explicit ResNet that ``model`` is in its Euler, piecewise-constant, N_t = M manifestation,
    on the model's device and in its dtype."""
    stages, steps, gain_rows = [], [], []
    width = max(b.n_basis for b in model.blocks)
    for block in model.blocks:
        if block.basis.name != "piecewise_constant" or block.scheme.name != "euler" or block.n_steps != block.n_basis:
            raise ValueError(
                f"only the Euler, piecewise-constant, N_t = M manifestation is a plain ResNet; this block is "
                f"{block.basis.name}, {block.manifestation}. Call model.manifest('euler', M) first."
            )
        layers = []
        like = block.coefficient("conv1.weight")
        for k in range(block.n_basis):
            layer = PreActResidual(like.shape[2]).to(device=like.device, dtype=like.dtype)
            with torch.no_grad():
                for name, p in layer.named_parameters():
                    p.copy_(block.coefficient(name)[k])
                for name in ("bn1", "bn2"):
                    bn = getattr(layer, name)
                    bn.running_mean.copy_(block.running_stats(f"{name}.running_mean")[k])
                    bn.running_var.copy_(block.running_stats(f"{name}.running_var")[k])
            layers.append(layer)
        stages.append(layers)
        steps.append(block.T / block.n_steps)
        g = (block.skip_gain.detach() * block.epsilon if block.skip_init
             else torch.full((block.n_basis,), block.epsilon, device=like.device, dtype=like.dtype))
        gain_rows.append(torch.cat([g, g.new_zeros(width - len(g))]))
    return PreActResNet(
        copy.deepcopy(model.stem), stages, copy.deepcopy(model.stitches), copy.deepcopy(model.head_norm),
        copy.deepcopy(model.fc), steps, torch.stack(gain_rows),
    ).train(model.training)
