"""Bases: exact pieces, one-sided limits, refinement that keeps θ(t), L2 projection."""
from fractions import Fraction

import numpy as np
import pytest
import torch

from cnet_lib import Legendre, PiecewiseConstant, PiecewiseLinear, make_basis

ALL = [PiecewiseConstant, PiecewiseLinear, Legendre]


def test_piecewise_constant_exact_pieces_and_limits():
    b = PiecewiseConstant(3)
    assert b.weights(Fraction(2, 3), side=1) == ((2, 1.0),)
    assert b.weights(Fraction(2, 3), side=-1) == ((1, 1.0),)
    assert b.weights(0, side=1) == ((0, 1.0),)
    assert b.weights(1, side=-1) == ((2, 1.0),)
    assert b.weights(1, side=1) == ((2, 1.0),)  # clamped at the end of the span
    # the float trap: on a float32 time grid (as torchdiffeq builds it), t_2 = 2/3 times
    # M = 3 is just below 2, so int(t * M) reads piece 1 in the third step; exact tau reads 2
    t2 = float(torch.linspace(0, 1, 4, dtype=torch.float32)[2])
    assert int(t2 * 3) == 1
    assert b.weights(Fraction(2, 3), side=1) == ((2, 1.0),)
    assert b.weights(Fraction(1, 3), side=1) == ((1, 1.0),)


def test_hat_weights_interpolate_and_sum_to_one():
    b = PiecewiseLinear(5)  # nodes 0, 1/4, 1/2, 3/4, 1
    assert b.weights(Fraction(1, 4)) == ((1, 1.0),)
    assert b.weights(Fraction(3, 8)) == ((1, 0.5), (2, 0.5))
    assert b.weights(1) == ((4, 1.0),)
    taus = np.linspace(0, 1, 101)
    assert np.allclose(b.matrix(taus).sum(1), 1.0)


def test_legendre_values():
    b = Legendre(4)
    x = 0.3  # tau = (x + 1) / 2
    w = dict(b.weights(Fraction(x) / 2 + Fraction(1, 2)))
    p = [1, x, (3 * x * x - 1) / 2, (5 * x**3 - 3 * x) / 2]
    assert np.allclose([w[i] for i in range(4)], p, atol=1e-15)


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("m", [1, 2, 3, 8])
def test_refine_keeps_theta(cls, m):
    basis = cls(m)
    fine, cmap = basis.refine()
    assert fine.n_basis == (2 * m - 1 if cls is PiecewiseLinear and m > 1 else 2 * m)
    torch.manual_seed(m)
    coeffs = torch.randn(m, 4, dtype=torch.float64)
    new = cmap.apply(coeffs)
    taus = [Fraction(k, 97) for k in range(98)]
    for tau in taus:
        for side in (-1, 1):
            old_val = sum(w * coeffs[b] for b, w in basis.weights(tau, side))
            new_val = sum(w * new[b] for b, w in fine.weights(tau, side))
            if cls is PiecewiseConstant:
                assert torch.equal(old_val, new_val)  # bit for bit
            else:
                assert torch.allclose(old_val, new_val, atol=1e-14)


def test_piecewise_constant_refinement_is_a_bitwise_copy():
    coeffs = torch.tensor([[-0.0, float("nan")], [1.5, -2.25]])
    _, cmap = PiecewiseConstant(2).refine()
    new = cmap.apply(coeffs)
    assert torch.equal(new[0].view(torch.int32)[0:1], coeffs[0].view(torch.int32)[0:1])  # -0.0 kept
    assert torch.isnan(new[1, 1]) and torch.equal(new[2], coeffs[1]) and torch.equal(new[3], coeffs[1])


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_projection_of_refined_basis_recovers_coefficients(cls, m):
    basis = cls(m)
    fine, cmap = basis.refine()
    coeffs = torch.randn(m, 3, dtype=torch.float64)
    back = fine.project(basis).apply(cmap.apply(coeffs))
    assert torch.allclose(back, coeffs, atol=1e-12)


def test_projection_is_the_l2_best_fit():
    # project hats with 9 nodes onto 3 pieces: each piece gets the mean of θ over it
    fine, coarse = PiecewiseLinear(9), PiecewiseConstant(3)
    coeffs = torch.linspace(0.0, 8.0, 9, dtype=torch.float64)[:, None] ** 2
    proj = fine.project(coarse).apply(coeffs)[:, 0]
    t = np.linspace(0, 1, 300001)
    theta = np.interp(t, np.linspace(0, 1, 9), coeffs[:, 0].numpy())
    means = [theta[(t >= j / 3) & (t < (j + 1) / 3)].mean() for j in range(3)]
    assert np.allclose(proj.numpy(), means, rtol=1e-4)


def test_bad_bases():
    with pytest.raises(ValueError, match="n_basis"):
        PiecewiseConstant(0)
    with pytest.raises(TypeError, match="n_basis"):
        PiecewiseConstant(2.0)
    with pytest.raises(ValueError, match="unknown basis"):
        make_basis("chebyshev", 3)
    with pytest.raises(ValueError, match="tau"):
        PiecewiseConstant(2).weights(Fraction(3, 2))


def test_steps_align_with_every_break_point_in_exact_arithmetic():
    """A step grid aligns with θ's pieces when every break point is a step boundary (issue 40's valid graphs)."""
    assert [n for n in range(1, 17) if PiecewiseConstant(4).steps_align(n)] == [4, 8, 12, 16]
    assert [n for n in range(1, 13) if PiecewiseConstant(6).steps_align(n)] == [6, 12]
    assert [n for n in range(1, 9) if PiecewiseLinear(3).steps_align(n)] == [2, 4, 6, 8]  # knots at 0, 1/2, 1
    assert all(PiecewiseLinear(1).steps_align(n) and Legendre(5).steps_align(n) for n in range(1, 7))
    # refinement keeps θ, and the refined pieces need the finer grid: N_t = M still aligns, N_t = M / 2 no longer
    fine, _ = PiecewiseConstant(4).refine()
    assert fine.steps_align(8) and not fine.steps_align(4)
    for bad in (0, -2, 2.0, True, "4"):
        with pytest.raises(ValueError, match="n_steps must be an int >= 1"):
            PiecewiseConstant(4).steps_align(bad)


def test_the_stages_of_an_aligned_step_read_one_piece_and_a_straddling_step_reads_two():
    """What alignment buys: with the left limit at c = 1, every stage of an aligned RK4 step reads the piece of its
    own step; a step over a jump of θ reads two pieces (the case the verdict leaves out)."""
    from cnet_lib.core.integrate import stage_positions

    basis = PiecewiseConstant(4)

    def pieces(n_steps):
        out = {}
        for p in stage_positions("rk4_classic", n_steps):
            out.setdefault(p.k, set()).update(b for b, _ in basis.weights(p.tau, p.side))
        return out

    assert all(len(s) == 1 for s in pieces(8).values()) and all(len(s) == 1 for s in pieces(4).values())
    assert any(len(s) == 2 for s in pieces(6).values())
