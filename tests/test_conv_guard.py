"""The guard against oneDNN issue 6035 (cnet_lib/core/models.py): a channels-last ContinuousNet
trains on the CPU of any x86_64 machine, the guard changes no number, and the CPU's precision is
contiguous float32.  Every run that could meet the fault runs in a subprocess, so that a heap
corruption or a hang fails its test instead of ending the whole test run.  Seconds."""
from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from cnet_lib.core.models import (ContinuousNet, GUARDED_INPUT_CHANNELS, GuardedConv1x1, OneDNNLayoutWarning,
    onednn_hazard)
from cnet_lib.runtime.device import Precision, precision_for

ROOT = Path(__file__).resolve().parents[1]
LIMIT_S = 300  # each subprocess needs about two seconds; a hang is what this limit catches

TRAIN_CHANNELS_LAST = """
import sys, warnings, torch
from cnet_lib import ContinuousNet
from cnet_lib.core.models import OneDNNLayoutWarning
torch.manual_seed(0)
m = ContinuousNet(channels=(2, 4, 4), n_basis=1, scheme="rk4_classic").train()
if sys.argv[1] == "model":
    m.stitches.to(memory_format=torch.channels_last)  # channels-last weights too (the blocks' are 5-D)
opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
x = torch.randn(8, 3, 32, 32).contiguous(memory_format=torch.channels_last)
y = torch.randint(0, 10, (8,))
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    for i in range(6):
        opt.zero_grad(); loss = torch.nn.functional.cross_entropy(m(x), y); loss.backward(); opt.step()
assert torch.isfinite(loss), loss
assert any(issubclass(w.category, OneDNNLayoutWarning) for w in seen), [str(w.message) for w in seen]
print("trained", float(loss))
"""


def _run(code_or_args: list[str], threads: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *code_or_args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=LIMIT_S)


@pytest.mark.parametrize("threads, layout", [(1, "input"), (2, "input"), (1, "model")])
def test_continuousnet_trains_with_channels_last_input_on_the_cpu(threads, layout):
    """The issue's own reproduction with the library: aborted (1 thread) or hung (2) before the guard."""
    out = _run(["-c", TRAIN_CHANNELS_LAST, layout], threads)
    assert out.returncode == 0, f"rc={out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    assert "trained" in out.stdout


@pytest.mark.parametrize("channels", [2, 4, 7, 8])
def test_the_guarded_reproduction_finishes(channels):
    out = _run(["-W", "ignore", "tests/onednn_6035_repro.py", str(channels), "--guarded"], threads=1)
    assert out.returncode == 0, f"rc={out.returncode}\n{out.stderr[-2000:]}"
    assert out.stdout.startswith(f"ok: {channels} channels")


GRADIENTS = """
import torch, warnings
from cnet_lib.core.models import GuardedConv1x1
warnings.simplefilter("ignore")
torch.manual_seed(1)
conv = GuardedConv1x1(4, 6, stride=2).double()
x = torch.randn(3, 4, 9, 9, dtype=torch.float64)
grads = []
for layout_x, layout_w in ((False, False), (True, False), (False, True), (True, True)):
    c = GuardedConv1x1(4, 6, stride=2).double()
    c.load_state_dict(conv.state_dict())
    if layout_w:
        c = c.to(memory_format=torch.channels_last)
    xi = (x.contiguous(memory_format=torch.channels_last) if layout_x else x.clone()).requires_grad_()
    y = c(xi)
    (y * torch.arange(y.numel(), dtype=y.dtype).reshape(y.shape)).sum().backward()
    grads.append((y.detach().contiguous(), c.weight.grad.contiguous(), xi.grad.contiguous()))
ref = grads[0]
for g in grads[1:]:
    for a, b in zip(ref, g):
        assert torch.equal(a, b), (a - b).abs().max()
# against the convolution written out: y[n, o, i, j] = sum_c w[o, c] x[n, c, 2i, 2j]
w = conv.weight[:, :, 0, 0]
expected = torch.einsum("oc,ncij->noij", w, x[:, :, ::2, ::2])
assert torch.allclose(ref[0], expected, rtol=0, atol=1e-12)
print("equal")
"""


def test_the_guard_changes_no_number():
    """Output, weight gradient and input gradient are the same for every layout of input and weight
    (float64), and equal the 1×1 stride-2 convolution written out."""
    out = _run(["-c", GRADIENTS], threads=1)
    assert out.returncode == 0 and "equal" in out.stdout, f"rc={out.returncode}\n{out.stderr[-2000:]}"


def test_hazard_predicate():
    cpu, cuda = torch.device("cpu"), torch.device("cuda", 0)
    assert onednn_hazard(torch.nn.Conv2d(4, 4, 1, stride=2), cpu)
    assert onednn_hazard(torch.nn.Conv2d(GUARDED_INPUT_CHANNELS - 1, 4, 1, stride=2), cpu)
    assert not onednn_hazard(torch.nn.Conv2d(GUARDED_INPUT_CHANNELS, 4, 1, stride=2), cpu)
    assert not onednn_hazard(torch.nn.Conv2d(4, 4, 1, stride=1), cpu)
    assert not onednn_hazard(torch.nn.Conv2d(4, 4, 3, stride=2), cpu)
    assert not onednn_hazard(torch.nn.Conv2d(4, 4, 1, stride=2), cuda)


def test_the_warning_says_why_and_only_for_channels_last():
    conv = GuardedConv1x1(4, 4)
    x = torch.randn(2, 4, 8, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        conv(x)  # NCHW: silent
    with pytest.warns(OneDNNLayoutWarning, match=r"oneDNN issue 6035.*pass NCHW tensors"):
        conv(x.contiguous(memory_format=torch.channels_last))


def test_every_stitch_is_guarded_and_checkpoints_keep_their_keys():
    model = ContinuousNet(channels=(2, 4, 8), n_basis=1)
    assert all(isinstance(s.downsample, GuardedConv1x1) for s in model.stitches)
    assert isinstance(model.stitches[0].downsample, torch.nn.Conv2d)
    assert "stitches.0.downsample.weight" in model.state_dict()


def test_precision_on_the_cpu_is_contiguous_float32():
    for device in ("cpu", "cpu:0", torch.device("cpu")):
        for amp in (True, False):
            for graphs in (True, False):
                p = precision_for(device, amp=amp, graphs=graphs)
                assert p == Precision(None, channels_last=False), (device, amp, graphs, p)
    x = torch.randn(2, 3, 8, 8)
    assert precision_for("cpu").prepare(x).is_contiguous()
