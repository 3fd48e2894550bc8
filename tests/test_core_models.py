"""ContinuousNet: structure, the ResNet identity at model level, refinement, compression, checkpoints."""
import pytest
import torch

from cnet_lib.core.models import resnet_from_continuousnet
from cnet_lib import ContinuousNet, count_parameters, wide_continuous_net


def small(**kw):
    kw.setdefault("channels", (4, 8, 8))
    return ContinuousNet(**kw)


def test_shapes_and_parameter_count():
    torch.manual_seed(0)
    m = small(n_basis=2, num_classes=7)
    assert m(torch.randn(2, 3, 16, 16)).shape == (2, 7)
    per_block_unit = lambda c: 2 * 9 * c * c + 4 * c  # two 3x3 convs + two BN affine pairs
    blocks = sum(2 * (per_block_unit(c) + 1) for c in (4, 8, 8))  # M = 2 sets + skip gains
    stitches = (4 * 8 + 9 * 4 * 8 + 9 * 8 * 8 + 2 * 4 + 2 * 8) + (8 * 8 + 9 * 8 * 8 * 2 + 2 * 8 * 2)
    stem_head = 9 * 3 * 4 + 2 * 8 + 8 * 7 + 7
    assert count_parameters(m) == m.n_parameters() == blocks + stitches + stem_head


def test_wide_variant():
    m = wide_continuous_net(n_basis=1)
    assert m.config()["channels"] == [64, 128, 256] and m.fc.out_features == 100


@pytest.mark.parametrize("skip_init", [False, True])
def test_euler_piecewise_constant_is_a_resnet_bitwise(skip_init):
    torch.manual_seed(1)
    m = small(n_basis=(3, 2, 4), T=1.0, epsilon=0.7, skip_init=skip_init)
    if skip_init:
        with torch.no_grad():
            for b in m.blocks:
                b.skip_gain.normal_()
    m.train()
    m(torch.randn(8, 3, 16, 16))  # populate per-interval BN statistics
    m.eval()
    net = resnet_from_continuousnet(m).eval()
    x = torch.randn(4, 3, 16, 16)
    assert torch.equal(m(x), net(x))
    with pytest.raises(ValueError, match="manifest"):
        resnet_from_continuousnet(m.manifest("rk4_classic"))


def test_model_refine_doubles_block_parameters_and_keeps_output():
    torch.manual_seed(2)
    m = small(n_basis=1, scheme="rk4_classic").double().eval()
    blocks_before = sum(count_parameters(b) for b in m.blocks)
    total_before = m.n_parameters()
    x = torch.randn(2, 3, 8, 8, dtype=torch.float64)
    y = m(x)
    m.refine()
    assert sum(count_parameters(b) for b in m.blocks) == 2 * blocks_before
    assert m.n_parameters() == total_before + blocks_before
    assert m.manifestation == [("rk4_classic", 2)] * 3
    with m.manifested(n_steps=1):
        assert torch.equal(m(x), y)


def test_model_manifest_and_project():
    m = small(n_basis=4)
    m.manifest("rk4_38", (1, 2, 3))
    assert m.manifestation == [("rk4_38", 1), ("rk4_38", 2), ("rk4_38", 3)]
    m.project(2)
    assert [b.n_basis for b in m.blocks] == [2, 2, 2] and m.manifestation[0] == ("rk4_38", 2)
    with pytest.raises(ValueError, match="3 OdeBlocks"):
        m.manifest(n_steps=(1, 2))


def test_state_dict_from_another_configuration_is_refused():
    a, b = small(n_basis=2), small(n_basis=4)
    with pytest.raises(ValueError, match="n_basis"):
        b.load_state_dict(a.state_dict())
    b.project(2)
    b.load_state_dict(a.state_dict())  # same configuration now


# ----------------------------------------------------------------------------- issue 52: config, errors, optimizers
import json  # noqa: E402
import warnings  # noqa: E402

from torch import nn  # noqa: E402

from cnet_lib import OdeBlock, PreActResidual  # noqa: E402
from cnet_lib.core.odeblock import StaleOptimizerWarning  # noqa: E402


def _trained_a_little(model: ContinuousNet) -> ContinuousNet:
    """Non-zero skip gains and BatchNorm statistics, so that every part of the model shows in its output."""
    torch.manual_seed(1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(2):
        opt.zero_grad()
        nn.functional.cross_entropy(model(torch.randn(4, 3, 8, 8, dtype=torch.float64)), torch.tensor([0, 1, 2, 3])).backward()
        opt.step()
    return model


def _changed(name: str, model: ContinuousNet) -> ContinuousNet:
    if name == "refined":
        model.refine()
    elif name == "manifested":
        model.manifest(["rk4_38", "midpoint", "heun"], [3, 5, 2])
    elif name == "adaptive":
        model.manifest("dopri5", rtol=1e-4, atol=1e-5)
    elif name == "projected":
        model.refine().project([1, 2, 3], basis="piecewise_linear", n_steps=[2, 3, 4])
    elif name == "legendre_rk4":
        model.project(2, basis="legendre", n_steps=6).manifest("rk4_classic")
    return model


@pytest.mark.parametrize("name", ["refined", "manifested", "adaptive", "projected", "legendre_rk4"])
def test_config_and_state_dict_rebuild_the_same_computation(name):
    """Issue 52: ContinuousNet(**m.config()) + load_state_dict computes what m computes (before, config() left out the
    scheme and N_t and the rebuilt model ran Euler, with no message)."""
    torch.manual_seed(0)
    m = _trained_a_little(ContinuousNet(channels=(4, 8, 8), n_basis=2, scheme="rk4_classic").double())
    m = _changed(name, m).eval()
    config = m.config()
    assert json.loads(json.dumps(config)) == config, "plain values only"
    rebuilt = ContinuousNet(**config).double()
    rebuilt.load_state_dict(m.state_dict())
    rebuilt.eval()
    x = torch.randn(3, 3, 8, 8, dtype=torch.float64)
    torch.testing.assert_close(rebuilt(x), m(x), rtol=1e-12, atol=1e-12)
    assert rebuilt.config() == config and rebuilt.manifestation == m.manifestation


def test_odeblock_config_rebuilds_the_block():
    torch.manual_seed(0)
    block = OdeBlock(nn.Sequential(nn.Linear(3, 3), nn.Tanh()), 3, basis="legendre", scheme="rk4_38", n_steps=7,
                     epsilon=0.5, T=2.0).double()
    theta = block.theta(torch.tensor(0.5, dtype=torch.float64))  # t may be a 0-dim tensor, as f(t, x) receives it
    assert all(torch.equal(theta[k], v) for k, v in block.theta(0.5).items())
    fresh = OdeBlock(nn.Sequential(nn.Linear(3, 3), nn.Tanh()), **block.config()).double()
    fresh.load_state_dict(block.state_dict())
    x = torch.randn(4, 3, dtype=torch.float64)
    torch.testing.assert_close(fresh(x), block(x), rtol=1e-13, atol=1e-13)
    block.manifest("bosh3", rtol=1e-5, atol=1e-6, norm="rms")
    assert block.config()["rtol"] == 1e-5 and block.config()["norm"] == "rms"
    again = OdeBlock(nn.Sequential(nn.Linear(3, 3), nn.Tanh()), **block.config()).double()
    again.load_state_dict(block.state_dict())
    torch.testing.assert_close(again(x), block(x), rtol=1e-13, atol=1e-13)
    assert again.tolerances == block.tolerances


def test_a_wrong_channel_count_names_the_model_or_block_and_the_shapes():
    m = small(n_basis=1)
    with pytest.raises(ValueError, match=r"\(batch, 3, height, width\).*\(2, 4, 16, 16\)"):
        m(torch.randn(2, 4, 16, 16))
    with pytest.raises(ValueError, match="unsqueeze"):
        m(torch.randn(3, 16, 16))
    block = OdeBlock(PreActResidual(4), 2)
    with pytest.raises(RuntimeError, match=r"OdeBlock: its residual R failed on a state of shape \(2, 5, 8, 8\).*"
                                           r"bn1.weight, has shape \(4,\)"):
        block(torch.randn(2, 5, 8, 8))
    m.blocks[1].residual.bn1.momentum = 0.1  # any block of a model says which one it is
    with pytest.raises(RuntimeError, match=r"ContinuousNet.blocks\[1\] \(8 channels\)"):
        m.blocks[1](torch.randn(2, 4, 8, 8))


def test_a_residual_that_changes_the_shape_is_refused_with_both_shapes():
    block = OdeBlock(nn.Linear(4, 3), 1)
    with pytest.raises(ValueError, match=r"OdeBlock: its residual R maps a state of shape \(2, 4\) to one of shape "
                                         r"\(2, 3\)"):
        block(torch.randn(2, 4))


def _block_tensors(model) -> list:
    return [p for b in model.blocks for p in b.parameters()]


@pytest.mark.parametrize("change", ["refine", "project"])
def test_an_optimizer_left_stale_warns_at_its_next_step(change):
    """Issue 52: after model.project(1) (which took no optimizer) or model.refine() without one, the old optimizer's
    steps updated none of the blocks' tensors, silently.  Now its next step warns with what to do; an optimizer passed
    along is carried over and trains every block tensor; a new optimizer built afterwards is not warned about."""
    torch.manual_seed(0)
    x, y = torch.randn(4, 3, 8, 8), torch.tensor([0, 1, 2, 3])

    def step(model, opt):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        before = [p.detach().clone() for p in _block_tensors(model)]
        opt.step()
        return sum(not torch.equal(a, p) for a, p in zip(before, _block_tensors(model))), len(before)

    model = small(n_basis=2)
    stale = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step(model, stale)
    getattr(model, change)(*([1] if change == "project" else []))
    with pytest.warns(StaleOptimizerWarning, match=rf"OdeBlock.{change}\(\).*optimizer=optimizer"):
        moved, total = step(model, stale)
    assert moved == 0 and total == 21  # 6 coefficient tensors and a skip gain per block
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        step(model, stale)  # said once per optimizer
        fresh = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        assert step(model, fresh) == (21, 21)
        getattr(model, change)(*([1] if change == "project" else []), optimizer=fresh)
        assert step(model, fresh) == (21, 21)


def test_project_carries_the_optimizer_state_like_refine():
    torch.manual_seed(0)
    model, other = small(n_basis=4, basis="legendre"), small(n_basis=4, basis="legendre")
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    adam = torch.optim.Adam(other.parameters(), lr=1e-3)
    x, y = torch.randn(4, 3, 8, 8), torch.tensor([0, 1, 2, 3])
    for m, opt in ((model, sgd), (other, adam)):
        opt.zero_grad()
        nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
    key = "conv1.weight"
    old = model.blocks[0].coefficient(key).detach().clone()
    buf = sgd.state[model.blocks[0].coefficient(key)]["momentum_buffer"].clone()
    cmap = model.blocks[0].basis.project(model.blocks[0].basis.with_n_basis(2))
    model.project(2, optimizer=sgd)
    new = model.blocks[0].coefficient(key)
    torch.testing.assert_close(new.detach(), cmap.apply(old))
    torch.testing.assert_close(sgd.state[new]["momentum_buffer"], cmap.apply(buf))
    assert all(p in sgd.state for p in _block_tensors(model))
    other.project(1, optimizer=adam)
    assert all((adam.state[p]["exp_avg_sq"] >= 0).all() for p in _block_tensors(other)), "second moments stay >= 0"
