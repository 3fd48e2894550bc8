"""The adaptive manifestation of an OdeBlock and a ContinuousNet: every stage reads its own interval's θ, no step
crosses a break point of θ(t) or of the BatchNorm statistics, the solution converges to a fine fixed-step one, a
trained block agrees with torchdiffeq's dopri5, and the manifestation is chosen, restored and refused as documented."""
import math
from dataclasses import dataclass
from fractions import Fraction

import pytest
import torch
import torchdiffeq
from torch import nn

from cnet_lib import ContinuousNet, OdeBlock
from cnet_lib.core.bases import piece_index
from cnet_lib.images import load_model
from cnet_lib.images.runs.shipped import SHIPPED
from cnet_lib.runtime.cuda_graphs import module_key

F = Fraction


class Recorder(nn.Module):
    """R(x, θ) = 0 · x + w, recording the w it is called with (w = the piece index)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros((), dtype=torch.float64))
        self.seen = []

    def forward(self, x):
        self.seen.append(self.w.item())
        return 0 * x + self.w


@pytest.mark.parametrize("pair", ["bosh3", "dopri5"])
@pytest.mark.parametrize("m", [1, 3, 4])
def test_every_adaptive_stage_reads_its_own_interval(pair, m):
    """M = 3 is the float trap (float(1/3) lies left of 1/3): every stage's piece is the interval of its
    step, read in rational arithmetic; a step ends exactly on each k/M."""
    rec = Recorder()
    block = OdeBlock(rec, m, scheme=pair, T=2.0)
    with torch.no_grad():
        block.coefficient("w").copy_(torch.arange(m, dtype=torch.float64))
    positions = []
    rate = block.rate
    block.rate = lambda pos, x, pieces=None: (positions.append(pos), rate(pos, x, pieces))[1]
    block.manifest(rtol=1e-8, atol=1e-8)
    out = block(torch.zeros(1, dtype=torch.float64))
    assert out.item() == pytest.approx(2.0 / m * sum(range(m)), abs=1e-12)
    assert [piece_index(p.tau, m, p.side) for p in positions] == [p.piece for p in positions] == rec.seen
    grid = block.last_solve.t
    assert all(2.0 * k / m in grid for k in range(m + 1))
    assert block.breakpoints() == tuple(F(k, m) for k in range(m + 1))


def test_breakpoints_of_every_basis_include_the_batchnorm_intervals():
    res = lambda: nn.Sequential(nn.BatchNorm1d(3), nn.Linear(3, 3))
    assert OdeBlock(res(), 3, basis="piecewise_linear").breakpoints() == (0, F(1, 2), 1)
    assert OdeBlock(res(), 3, basis="legendre").breakpoints() == (0, F(1, 3), F(2, 3), 1)  # statistics per M intervals
    assert OdeBlock(res(), 2).breakpoints() == (0, F(1, 2), 1)


def _mlp_block(m: int, basis: str = "piecewise_constant") -> OdeBlock:
    torch.manual_seed(m)
    return OdeBlock(nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 4)), m, basis=basis).double()


@pytest.mark.parametrize("basis", ["piecewise_constant", "piecewise_linear"])
def test_adaptive_block_converges_to_the_fine_fixed_step_solution(basis):
    block = _mlp_block(4, basis)
    x = torch.randn(3, 4, dtype=torch.float64)
    with torch.no_grad(), block.manifested("rk4_classic", 96):  # N_t a multiple of the pieces: exact
        fine = block(x)
        errors = []
        for tol in (1e-3, 1e-6, 1e-9):
            with block.manifested("dopri5", rtol=tol, atol=tol):
                errors.append((block(x) - fine).abs().max().item())
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-8 and errors[0] < 1e-2, errors


@dataclass(frozen=True)
class _At:
    """A position from a float time, for torchdiffeq's calls: right limit (torchdiffeq evaluates a step's c = 1
    stages just before its end and the stage after a jump just after it)."""

    tau: Fraction
    side: int = 1


def test_a_trained_block_agrees_with_torchdiffeq_dopri5():
    """The first block of the shipped cpu RK4 model (M = 4, BatchNorm per interval), in float64: our dopri5 with
    the RMS norm over the batch (torchdiffeq's) and the break points k/4 given to torchdiffeq as jump_t agree
    within a tolerance-sized bound (RMS over the batch), with NFE within 1.5×."""
    model, _ = load_model(SHIPPED / "cpu-rk4_refined")
    model = model.double()
    block = model.blocks[0]
    torch.manual_seed(0)
    with torch.no_grad():
        x = model.stem(torch.randn(2, 3, 32, 32, dtype=torch.float64))
        pieces = block._pieces()
        count = [0]

        def func(t, z):
            count[0] += 1
            return block.rate(_At(Fraction(t.item())), z, pieces)

        for tol in (1e-4, 1e-6):
            ours = block.manifest("dopri5", rtol=tol, atol=tol, norm="rms")(x)
            count[0] = 0
            theirs = torchdiffeq.odeint(func, x, torch.tensor([0.0, 1.0], dtype=torch.float64), method="dopri5",
                                        rtol=tol, atol=tol, options=dict(jump_t=[0.25, 0.5, 0.75], step_t=[1.0]))[-1]
            rms = lambda z: z.square().mean().sqrt().item()
            assert rms(ours - theirs) < 100 * tol * (1 + rms(x))  # both solve to tolerance: a global error of O(tol)
            assert 1 / 1.5 <= block.last_solve.nfe / count[0] <= 1.5, (block.last_solve.nfe, count[0])


def test_manifest_chooses_restores_and_refuses():
    block = _mlp_block(2)
    x = torch.randn(2, 4, dtype=torch.float64)
    with pytest.raises(ValueError, match="both rtol and atol"):
        block.manifest("dopri5", rtol=1e-3)
    with pytest.raises(ValueError, match="give one or the other"):
        block.manifest("dopri5", 4, rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError, match="'euler' is a fixed-step scheme"):
        block.manifest(rtol=1e-3, atol=1e-3)  # the block's own scheme, Euler
    before = module_key(block, x)
    with block.manifested("bosh3", rtol=1e-4, atol=1e-5) as b:
        assert b.tolerances.rtol == 1e-4 and b.tolerances.atol == 1e-5 and "adaptive" in repr(b)
        assert module_key(b, x) != before  # a captured fixed graph is never replayed for it
        b(x)
        assert b.last_solve.pair == "bosh3" and b.last_solve.nfe > 0
    assert block.tolerances is None and block.manifestation == ("euler", 2)
    block.manifest("dopri5", rtol=1e-3, atol=1e-3)
    assert block.manifest(n_steps=8).tolerances is None  # fixed steps again: dopri5 as a 5th-order fixed-step scheme
    assert block.manifestation == ("dopri5", 8)


def test_continuous_net_adaptive_manifestation_reports_every_block():
    torch.manual_seed(0)
    model = ContinuousNet(channels=(4, 8), n_basis=2, scheme="rk4_classic").eval()
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        own = model(x)
        with model.manifested("dopri5", rtol=1e-5, atol=1e-5):
            adaptive = model(x)
            stats = model.solve_stats
        assert model.tolerances == (None, None) and model.manifestation == [("rk4_classic", 2)] * 2
    assert len(stats) == 2 and all(s.nfe > 0 and s.t[-1] == 1.0 and 0.5 in s.t for s in stats)
    assert torch.allclose(adaptive, own, atol=1e-3)  # skip_init: untrained blocks are near the identity
    assert math.isfinite(adaptive.sum().item())
