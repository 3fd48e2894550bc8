"""A plain pre-activation ResNet, and the map ContinuousNet -> ResNet.

With the piecewise-constant basis, Euler and N_t = M, an OdeBlock is the residual loop

    x_{k+1} = x_k + h ε s_k R(x_k, θ̂_k),   h = T / N_t,

so a ContinuousNet in that manifestation *is* this ResNet (same weights, same numbers,
bit for bit).  :func:`resnet_from_continuousnet` builds it with copied weights.
"""
from __future__ import annotations

import copy

import torch
from torch import nn

from .models import ContinuousNet, PreActResidual

__all__ = ["PreActResNet", "resnet_from_continuousnet"]


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
