"""OdeBlock: exact stage pieces, the ResNet identity, manifestation, refinement, projection,
time-dependent BatchNorm, optimizer state, state dicts and bad input."""
import copy
import math
from fractions import Fraction

import pytest
import torch
from torch import nn
from torch.func import functional_call

from cnet_lib import OdeBlock, get_scheme


class Recorder(nn.Module):
    """R(x, θ) = 0 · x + w that records the value of w it is called with (w = piece index)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(()))
        self.seen = []

    def forward(self, x):
        self.seen.append(self.w.item())
        return 0 * x + self.w


def _expected_piece(k, c, n_steps, m):
    """The piece an independent rule says stage (k, c) must read: look a hair inside
    step k's own interval from the stage's point (left of it for c = 1, right otherwise)."""
    tau = (k + c) / Fraction(n_steps)
    eps = Fraction(1, 10**12)
    probe = tau - eps if c == 1 else tau + eps
    piece = math.floor(probe * m)
    # the piece overlaps step k's interval with positive length
    lo, hi = max(Fraction(piece, m), Fraction(k, n_steps)), min(Fraction(piece + 1, m), Fraction(k + 1, n_steps))
    assert hi > lo
    return piece


@pytest.mark.parametrize("scheme", ["euler", "midpoint", "heun", "ralston", "rk3", "rk4_classic", "rk4_38"])
@pytest.mark.parametrize("n_steps", [1, 3, 7, 8])
@pytest.mark.parametrize("m", [1, 2, 3, 8])
def test_every_stage_reads_the_exact_piece(scheme, n_steps, m):
    rec = Recorder()
    block = OdeBlock(rec, m, scheme=scheme, n_steps=n_steps, T=2.0)
    with torch.no_grad():
        block.coefficient("w").copy_(torch.arange(m, dtype=torch.float32))
    times = []
    rate = block.rate
    block.rate = lambda pos, x, pieces=None: (times.append(pos.t), rate(pos, x, pieces))[1]
    block(torch.zeros(1))
    tab = get_scheme(scheme)
    expected = [(2.0 * float((k + c) / Fraction(n_steps)), _expected_piece(k, c, n_steps, m))
                for k in range(n_steps) for c in tab.c]
    assert list(zip(times, rec.seen)) == [(t, float(p)) for t, p in expected]


def test_authors_float_trap_is_avoided():
    """N_t = M = 3 with Euler must use all three pieces (int(t*M) on a float32 grid does not)."""
    rec = Recorder()
    block = OdeBlock(rec, 3, scheme="euler")
    with torch.no_grad():
        block.coefficient("w").copy_(torch.arange(3.0))
    block(torch.zeros(1))
    assert rec.seen == [0.0, 1.0, 2.0]


def mlp(width=6):
    return nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, width))


@pytest.mark.parametrize("n", [3, 7, 32])
@pytest.mark.parametrize("T,epsilon", [(None, 1.0), (1.0, 0.5)])
def test_resnet_identity_bitwise(n, T, epsilon):
    """Euler + piecewise constant + M = N_t is a ResNet loop over the same weights, bit for bit."""
    torch.manual_seed(n)
    T = float(n) if T is None else T  # T = N_t: h = 1, the textbook x + R(x)
    block = OdeBlock(mlp(), n, scheme="euler", T=T, epsilon=epsilon)
    layers = []
    for k in range(n):
        lin1, lin2 = nn.Linear(6, 6), nn.Linear(6, 6)
        with torch.no_grad():
            lin1.weight.copy_(block.coefficient("0.weight")[k]); lin1.bias.copy_(block.coefficient("0.bias")[k])
            lin2.weight.copy_(block.coefficient("2.weight")[k]); lin2.bias.copy_(block.coefficient("2.bias")[k])
        layers.append((lin1, lin2))
    x = torch.randn(4, 6)
    ref, h = x, T / n
    for lin1, lin2 in layers:
        r = lin2(torch.tanh(lin1(ref)))
        ref = ref + r if (h == 1.0 and epsilon == 1.0) else ref + h * (epsilon * r)
    assert torch.equal(block(x), ref)


@pytest.mark.parametrize("n", [3, 7])
def test_every_piece_gets_a_gradient(n):
    torch.manual_seed(0)
    block = OdeBlock(mlp(), n, scheme="euler")
    block(torch.randn(5, 6)).pow(2).sum().backward()
    for name in ("0.weight", "2.bias"):
        g = block.coefficient(name).grad
        assert all(g[k].abs().sum() > 0 for k in range(n))


def test_manifest_changes_only_the_graph():
    torch.manual_seed(1)
    block = OdeBlock(mlp(), 4, scheme="euler")
    before = {k: v.clone() for k, v in block.state_dict().items() if torch.is_tensor(v)}
    x = torch.randn(3, 6)
    y_euler = block(x)
    assert block.manifest("rk4_classic", 8) is block
    assert block.manifestation == ("rk4_classic", 8)
    y_rk4 = block(x)
    assert not torch.equal(y_euler, y_rk4)
    with block.manifested("euler", 4):
        assert torch.equal(block(x), y_euler)
    assert block.manifestation == ("rk4_classic", 8)
    after = block.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_theta_at_float_break_points_reads_the_intended_piece():
    block = OdeBlock(Recorder(), 3, T=1.0)
    with torch.no_grad():
        block.coefficient("w").copy_(torch.arange(3.0))
    h = 1 / 3
    assert [block.theta(k * h)["w"].item() for k in range(3)] == [0.0, 1.0, 2.0]
    assert block.theta(Fraction(1, 3), side=-1)["w"].item() == 0.0
    assert block.theta(1.0)["w"].item() == 2.0
    assert block.theta(0.3333)["w"].item() == 0.0  # a genuinely different time is not snapped


def test_theta_works_with_functional_call():
    torch.manual_seed(2)
    block = OdeBlock(mlp(), 3, basis="piecewise_linear")
    x = torch.randn(2, 6)
    th = block.theta(0.25)
    # hats on nodes 0, 1/2, 1: θ(1/4) is the mean of the first two coefficient sets
    assert torch.allclose(th["0.weight"], block.coefficient("0.weight")[:2].mean(0))
    y = functional_call(block.residual, th, (x,))
    lin1w, lin1b, lin2w, lin2b = th["0.weight"], th["0.bias"], th["2.weight"], th["2.bias"]
    assert torch.allclose(y, torch.tanh(x @ lin1w.T + lin1b) @ lin2w.T + lin2b)
    assert set(th) == {"0.weight", "0.bias", "2.weight", "2.bias"}


@pytest.mark.parametrize("basis", ["piecewise_constant", "piecewise_linear", "legendre"])
@pytest.mark.parametrize("scheme", ["euler", "rk4_classic", "rk4_38"])
def test_refinement_keeps_theta_and_output(basis, scheme):
    torch.manual_seed(3)
    block = OdeBlock(mlp(), 3, basis=basis, scheme=scheme).double()
    x = torch.randn(4, 6, dtype=torch.float64)
    y = block(x)
    ts = [k / 17 for k in range(18)]
    thetas = [block.theta(t) for t in ts]
    n_steps = block.n_steps
    block.refine()
    assert block.n_steps == 2 * n_steps
    for t, th in zip(ts, thetas):
        new = block.theta(t)
        for k in th:
            if basis == "piecewise_constant":
                assert torch.equal(th[k], new[k])
            else:
                assert torch.allclose(th[k], new[k], atol=1e-14)
    with block.manifested(n_steps=n_steps):
        if basis == "piecewise_constant":
            assert torch.equal(block(x), y)
        else:
            assert torch.allclose(block(x), y, atol=1e-13)


def test_project_back_after_refine_recovers_the_block():
    torch.manual_seed(4)
    block = OdeBlock(mlp(), 4).double()
    original = copy.deepcopy(block)
    block.refine().project(4)
    assert block.n_basis == 4 and block.n_steps == 4
    for k, v in original.coeffs.items():
        assert torch.allclose(block.coeffs[k], v, atol=1e-12)


def test_compression_halves_pieces_by_averaging():
    block = OdeBlock(Recorder(), 4)
    with torch.no_grad():
        block.coefficient("w").copy_(torch.tensor([1.0, 3.0, 5.0, 9.0]))
    block.project(2)
    assert torch.allclose(block.coefficient("w"), torch.tensor([2.0, 7.0]))
    assert block.n_steps == 2


class BNResidual(nn.Module):
    def __init__(self, c=3):
        super().__init__()
        self.bn = nn.BatchNorm1d(c)
        self.lin = nn.Linear(c, c)

    def forward(self, x):
        return self.lin(torch.relu(self.bn(x)))


def test_batchnorm_statistics_are_per_interval_and_refine_copies_them():
    torch.manual_seed(5)
    block = OdeBlock(BNResidual(), 3, scheme="euler", epsilon=3.0)
    block.train()
    block(torch.randn(64, 3) * 2 + 1)
    mean = block.bn__bn__running_mean
    assert mean.shape == (3, 3)
    assert not torch.allclose(mean[0], mean[1]) and not torch.allclose(mean[1], mean[2])
    block.eval()
    x = torch.randn(8, 3)
    y = block(x)
    block.refine()
    assert block.bn__bn__running_mean.shape == (6, 3)
    assert torch.equal(block.bn__bn__running_mean[0::2], mean) and torch.equal(block.bn__bn__running_mean[1::2], mean)
    with block.manifested(n_steps=3):
        assert torch.equal(block(x), y)
    # the residual itself holds no parameters or statistics of its own any more
    assert list(block.residual.parameters()) == []


def test_skip_init_starts_as_identity_and_learns():
    torch.manual_seed(6)
    block = OdeBlock(mlp(), 2, scheme="rk4_classic", skip_init=True)
    x = torch.randn(3, 6)
    assert torch.equal(block(x), x)
    block(x).sum().backward()
    assert block.skip_gain.grad.abs().sum() > 0


def test_refine_carries_sgd_momentum():
    torch.manual_seed(7)
    block = OdeBlock(mlp(), 2, skip_init=True)
    opt = torch.optim.SGD(block.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        opt.zero_grad()
        block(torch.randn(4, 6)).pow(2).sum().backward()
        opt.step()
    old = block.coefficient("0.weight")
    buf = opt.state[old]["momentum_buffer"].clone()
    block.refine(opt)
    new = block.coefficient("0.weight")
    assert new is not old and old not in opt.state
    held = [p for g in opt.param_groups for p in g["params"]]
    assert any(p is new for p in held) and not any(p is old for p in held)
    assert {id(p) for p in held} == {id(p) for p in block.parameters()}
    new_buf = opt.state[new]["momentum_buffer"]
    assert new_buf.shape == (4, 6, 6)
    assert torch.equal(new_buf[0], buf[0]) and torch.equal(new_buf[1], buf[0]) and torch.equal(new_buf[3], buf[1])
    opt.zero_grad()
    block(torch.randn(4, 6)).pow(2).sum().backward()
    opt.step()  # shapes agree: no error
    assert not torch.equal(block.coefficient("0.weight")[0], block.coefficient("0.weight")[1])


def test_refine_with_a_live_graph_gives_gradients_of_the_new_shape():
    """A loss from before refine() that is still alive must not fold the new gradients back."""
    torch.manual_seed(10)
    block = OdeBlock(mlp(), 2)
    opt = torch.optim.SGD(block.parameters(), lr=0.1, momentum=0.9)
    loss = block(torch.randn(3, 6)).pow(2).sum()
    loss.backward(retain_graph=True)
    opt.step()
    block.refine(opt)  # `loss` and its graph are still alive here
    opt.zero_grad()
    block(torch.randn(3, 6)).pow(2).sum().backward()
    for name, p in block.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape, name
    assert loss.requires_grad


def test_state_dict_round_trip_and_refusal():
    torch.manual_seed(8)
    block = OdeBlock(BNResidual(), 4, basis="piecewise_linear", skip_init=True)
    block.train(); block(torch.randn(16, 3))
    block.eval()
    other = OdeBlock(BNResidual(), 4, basis="piecewise_linear", skip_init=True).eval()
    other.load_state_dict(block.state_dict())
    x = torch.randn(5, 3)
    assert torch.equal(other(x), block(x))
    wrong = OdeBlock(BNResidual(), 2, basis="piecewise_linear", skip_init=True)
    with pytest.raises(ValueError, match="n_basis"):
        wrong.load_state_dict(block.state_dict())
    with pytest.raises(ValueError, match="basis"):
        OdeBlock(BNResidual(), 4, skip_init=True).load_state_dict(block.state_dict())


def test_state_dict_survives_torch_save_weights_only(tmp_path):
    block = OdeBlock(mlp(), 3, scheme="midpoint")
    torch.save(block.state_dict(), tmp_path / "b.pt")
    sd = torch.load(tmp_path / "b.pt", weights_only=True)
    fresh = OdeBlock(mlp(), 3)
    fresh.load_state_dict(sd)
    x = torch.randn(2, 6)
    assert torch.equal(fresh.manifest("midpoint")(x), block(x))


def test_gradcheck_through_basis_blending():
    torch.manual_seed(9)
    for basis in ("piecewise_linear", "legendre"):
        block = OdeBlock(mlp(3), 3, basis=basis, scheme="rk3", n_steps=2).double()
        coeff = block.coefficient("0.weight")
        x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)

        def f(w, x):  # the block's output as a function of one coefficient tensor and x
            return functional_call(block, {"coeffs.0__weight": w}, (x,))

        w = coeff.detach().clone().requires_grad_(True)
        assert torch.autograd.gradcheck(f, (w, x))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(n_basis=0), "n_basis"),
        (dict(n_basis=2, n_steps=0), "n_steps"),
        (dict(n_basis=2, scheme="rk4"), "ambiguous"),
        (dict(n_basis=2, scheme="nope"), "unknown scheme"),
        (dict(n_basis=2, basis="splines"), "unknown basis"),
        (dict(n_basis=2, T=0.0), "T must"),
    ],
)
def test_bad_construction(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        OdeBlock(mlp(), **kwargs)


def test_bad_manifest():
    block = OdeBlock(mlp(), 2)
    with pytest.raises(ValueError, match="n_steps"):
        block.manifest(n_steps=0)
    with pytest.raises(ValueError, match="ambiguous"):
        block.manifest("rk4")
    assert block.manifestation == ("euler", 2)


def test_coefficient_key_names_the_state_dict_entry():
    from cnet_lib.core.odeblock import coefficient_key

    block = OdeBlock(nn.Sequential(nn.Conv2d(2, 2, 3, padding=1), nn.ReLU(), nn.Conv2d(2, 2, 3, padding=1)), 3)
    state = block.state_dict()
    for name in ("0.weight", "0.bias", "2.weight"):
        key = "coeffs." + coefficient_key(name)
        assert "." not in coefficient_key(name)
        assert torch.equal(state[key], block.coefficient(name).detach()) and state[key].shape[0] == 3


def test_the_residual_call_equals_torch_func_functional_call_bit_for_bit():
    """The block calls R with θ(t) by setting R's tensors as plain attributes (``OdeBlock._call_residual``);
    ``torch.func.functional_call`` does the same with its bookkeeping, 2.5–10% slower per training step
    (README, "Exactness").  Both give the same bits, forward and backward, BatchNorm statistics included."""
    import types

    from cnet_lib import ContinuousNet

    def via_functional_call(self, tensors, x):
        return functional_call(self.residual, tensors, (x,))

    torch.manual_seed(0)
    ours = ContinuousNet(channels=(4, 8), n_basis=2, scheme="rk4_classic", skip_init=True)
    with torch.no_grad():
        for b in ours.blocks:
            b.skip_gain.fill_(0.5)
    theirs = copy.deepcopy(ours)
    for b in theirs.blocks:
        b._call_residual = types.MethodType(via_functional_call, b)
    x, y = torch.randn(6, 3, 32, 32), torch.randint(0, 10, (6,))
    for model in (ours, theirs):
        torch.nn.functional.cross_entropy(model(x), y).backward()
    for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert torch.equal(a.grad, b.grad), name
    ours.eval(), theirs.eval()
    assert torch.equal(ours(x), theirs(x)), "eval mode reads the per-interval BatchNorm statistics the same way"
