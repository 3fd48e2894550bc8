"""The rule of the manifestation verdict (issue 40): a graph judges a trained model only when it is at least as
accurate a discretisation of the model's θ(t) as its own graph (:mod:`cnet_lib.images.studies.graph_rule`)."""
from __future__ import annotations

import pytest

from cnet_lib.images.studies.graph_rule import GRAPH_KINDS, graph_kind, graphs_of_kind, trained_row


def _graph(scheme, n_steps, n_basis=4, **extra):
    return {"kind": "manifestation", "scheme": scheme, "n_steps": n_steps, "n_basis": n_basis, "accuracy": 0.5, **extra}


EULER = {"kind": "trained", "scheme": "euler", "n_steps": 4, "n_basis": 4, "accuracy": 0.8}
RK4 = {"kind": "trained", "scheme": "rk4_classic", "n_steps": 4, "n_basis": 4, "accuracy": 0.8}


@pytest.mark.parametrize("trained, scheme, n_steps, kind", [
    (EULER, "euler", 8, "valid"),  # the Euler model on a finer Euler grid: more accurate
    (EULER, "euler", 2, "coarser"),
    (EULER, "midpoint", 4, "valid"),
    (EULER, "rk4_38", 16, "valid"),
    (EULER, "rk4_classic", 6, "straddles"),  # 6 steps on 4 pieces: a step holds the jump at 1/4
    (EULER, "euler", 6, "straddles"),
    (EULER, "rk4_classic", 3, "coarser"),  # coarser first: it is no finer whatever its alignment
    (RK4, "midpoint", 8, "lower order"),
    (RK4, "euler", 16, "lower order"),
    (RK4, "rk4_38", 4, "valid"),  # the other fourth-order scheme on the trained steps
    (RK4, "rk4_classic", 12, "valid"),
    (RK4, "rk4_38", 6, "straddles"),
])
def test_each_graph_is_judged_by_the_three_conditions(trained, scheme, n_steps, kind):
    assert graph_kind(_graph(scheme, n_steps), trained) == kind


def test_per_block_steps_and_pieces_and_other_bases():
    trained = {**RK4, "n_steps": [2, 4, 4], "n_basis": [2, 4, 4]}
    assert graph_kind(_graph("rk4_classic", 4, [2, 4, 4]), trained) == "valid"
    assert graph_kind(_graph("rk4_classic", 6, [2, 4, 4]), trained) == "straddles", "6 aligns with 2 pieces, not 4"
    assert graph_kind(_graph("rk4_classic", [2, 4, 3], [2, 4, 4]), trained) == "coarser"
    hats = {**RK4, "n_steps": 2, "n_basis": 3}  # knots at 0, 1/2, 1
    assert graph_kind(_graph("rk4_38", 4, 3), hats, "piecewise_linear") == "valid"
    assert graph_kind(_graph("rk4_38", 3, 3), hats, "piecewise_linear") == "straddles"
    assert graph_kind(_graph("rk4_38", 3, 3), hats, "legendre") == "valid", "a smooth θ has no jumps to straddle"


def test_the_trained_graph_and_bad_rows():
    assert graph_kind(_graph("euler", 4, is_trained=True), EULER) == "trained"
    with pytest.raises(ValueError, match="only manifestation rows"):
        graph_kind({"kind": "identity"}, EULER)
    with pytest.raises(ValueError, match="unknown graph kind"):
        graphs_of_kind([EULER], "finer")
    with pytest.raises(ValueError, match="exactly one row of kind 'trained'"):
        trained_row([_graph("euler", 4)])
    rows = [EULER, _graph("euler", 8), _graph("rk4_classic", 6), _graph("euler", 2)]
    assert [r["n_steps"] for r in graphs_of_kind(rows, "valid")] == [8]
    assert set(GRAPH_KINDS) == {"trained", "valid", "straddles", "coarser", "lower order"}
