"""ContinuousNet: structure, the ResNet identity at model level, refinement, compression, checkpoints."""
import pytest
import torch

from cnet_lib import ContinuousNet, count_parameters, wide_continuous_net
from cnet_lib.core.resnet import resnet_from_continuousnet


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
