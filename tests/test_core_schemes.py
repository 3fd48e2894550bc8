"""Butcher tableaux: exact consistency and order conditions, registry, bad names."""
from fractions import Fraction

import pytest

from cnet_lib import Tableau, get_scheme, register_scheme, scheme_names, unregister_scheme
from cnet_lib.core.schemes import rooted_trees

EXPECTED_ORDERS = {"euler": 1, "midpoint": 2, "heun": 2, "ralston": 2, "rk3": 3, "rk4_classic": 4, "rk4_38": 4}


def test_rooted_tree_counts():
    # OEIS A000081: 1, 1, 2, 4, 9, 20, 48
    assert [len(rooted_trees(n)) for n in range(1, 8)] == [1, 1, 2, 4, 9, 20, 48]


@pytest.mark.parametrize("name,order", sorted(EXPECTED_ORDERS.items()))
def test_registered_schemes_have_their_order(name, order):
    tab = get_scheme(name)
    assert tab.order == order
    assert tab.satisfies_order(order)
    assert not tab.satisfies_order(order + 1)
    for i in range(tab.stages):
        assert sum(tab.a[i]) == tab.c[i]
        assert all(tab.a[i][j] == 0 for j in range(i, tab.stages))
    assert sum(tab.b) == 1
    assert all(isinstance(v, Fraction) for v in tab.b + tab.c)


def test_rk4_variants_are_distinct_and_named():
    classic, rule38 = get_scheme("rk4_classic"), get_scheme("rk4_38")
    assert classic.c == (0, Fraction(1, 2), Fraction(1, 2), 1)
    assert rule38.c == (0, Fraction(1, 3), Fraction(2, 3), 1)
    assert rule38.b == (Fraction(1, 8), Fraction(3, 8), Fraction(3, 8), Fraction(1, 8))


def test_bare_rk4_is_refused_with_both_choices():
    with pytest.raises(ValueError) as err:
        get_scheme("rk4")
    msg = str(err.value)
    assert "rk4_classic" in msg and "rk4_38" in msg and "torchdiffeq" in msg


def test_unknown_scheme_lists_valid_names():
    with pytest.raises(ValueError) as err:
        get_scheme("rk5")
    for name in EXPECTED_ORDERS:
        assert name in str(err.value)


def test_inconsistent_tableaux_are_rejected():
    with pytest.raises(ValueError, match="sums to"):  # row sum != c
        Tableau("bad_c", 1, ((), (Fraction(1, 2),)), (Fraction(1, 2), Fraction(1, 2)), (0, 1))
    with pytest.raises(ValueError, match="sum to"):  # b does not sum to 1
        Tableau("bad_b", 1, ((),), (Fraction(1, 2),), (0,))
    with pytest.raises(ValueError, match="order-2"):  # Heun does not have order 3... and this is not order 2
        Tableau("bad_order", 2, ((), (1,)), (Fraction(3, 4), Fraction(1, 4)), (0, 1))
    with pytest.raises(ValueError, match="true order"):  # midpoint claimed as order 1
        Tableau("understated", 1, ((), (Fraction(1, 2),)), (0, 1), (0, Fraction(1, 2)))
    with pytest.raises(ValueError, match="strictly lower"):
        Tableau("implicit", 1, ((1,),), (1,), (1,))
    with pytest.raises(TypeError, match="exact"):
        Tableau("floaty", 1, ((),), (1.0,), (0,))


def test_user_tableau_can_be_registered():
    # Kutta's third-order... here: SSP-RK3 (Shu–Osher), order 3
    ssp = Tableau("ssprk3_test", 3, ((), (1,), (Fraction(1, 4), Fraction(1, 4))),
                  (Fraction(1, 6), Fraction(1, 6), Fraction(2, 3)), (0, 1, Fraction(1, 2)))
    register_scheme(ssp)
    try:
        assert get_scheme("ssprk3_test") is ssp
        assert "ssprk3_test" in scheme_names()
        with pytest.raises(ValueError, match="already registered"):
            register_scheme(ssp)
        with pytest.raises(ValueError, match="reserved"):
            register_scheme(Tableau("rk4", 1, ((),), (1,), (0,)))
    finally:
        unregister_scheme("ssprk3_test")
    assert "ssprk3_test" not in scheme_names()
    with pytest.raises(KeyError, match="no scheme named 'ssprk3_test'"):
        unregister_scheme("ssprk3_test")
