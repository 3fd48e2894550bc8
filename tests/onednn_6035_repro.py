"""The reproduction of oneDNN issue 6035 with torch alone (not a test: it can crash its process).

Recorded 2026-11-26 with torch 2.13.0+cpu (bundled oneDNN v3.12.0, commit 80afa71) on an AMD EPYC
machine whose ``torch.backends.cpu.get_cpu_capability()`` is ``AVX2`` (no AVX-512):

    OMP_NUM_THREADS=1 python tests/onednn_6035_repro.py 4   # double free or corruption (exit 134) or SIGSEGV (139)
    OMP_NUM_THREADS=2 python tests/onednn_6035_repro.py 4   # hangs in backward
    OMP_NUM_THREADS=1 python tests/onednn_6035_repro.py 8   # ok
    ONEDNN_VERBOSE=1 ...                                     # the kernel: jit_1x1:avx2, backward_weights, src acdb

Every input width from 2 to 7 fails there; 1 and 8..32 pass; so do stride 1, a 3x3 kernel and an NCHW
input with NCHW weight.  ``--guarded`` runs the same loop through the library's
:class:`cnet_lib.core.models.GuardedConv1x1`, which must always finish
(tests/test_conv_guard.py runs it in a subprocess).
"""
import sys

import torch

guarded = "--guarded" in sys.argv
args = [a for a in sys.argv[1:] if not a.startswith("--")]
channels = int(args[0]) if args else 4
if guarded:
    from cnet_lib.core.models import GuardedConv1x1
    conv = GuardedConv1x1(channels, channels, stride=2)
else:
    conv = torch.nn.Conv2d(channels, channels, kernel_size=1, stride=2, bias=False)
x = torch.randn(8, channels, 32, 32).contiguous(memory_format=torch.channels_last).requires_grad_()
for i in range(20):
    conv(x).square().sum().backward()
print(f"ok: {channels} channels, 20 backward passes, torch {torch.__version__}, "
      f"CPU capability {torch.backends.cpu.get_cpu_capability()}, guarded={guarded}")
