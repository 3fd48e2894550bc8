"""The planned study shown as its plan demands: the plan's test first (H_I and H_R, Holm at the plan's family-wise
level, the verdict by the plan's rule), then the exploratory analyses, labelled so; and, while its record does not ship,
one sentence that says the study has not finished (no number is shown).  Formatting only: the numbers are
:func:`cnet_lib.studies.manifestation_factorial.analyse`'s, passed in."""
from __future__ import annotations

from typing import Mapping, Optional

from ...runtime.rich_text import Rich, heading, join_rich, paragraphs
from ...runtime.rows import format_table

__all__ = ["NOT_FINISHED", "report"]

NOT_FINISHED = ("The planned study has not finished: its record does not ship with this copy of the book, so none of "
                "its numbers is shown.")
"""What :func:`report` says without the study's record."""

_HYPOTHESES = {"integrator": "H_I: Euler-trained models lose more than RK4-trained ones",
               "refinement": "H_R: fixed-depth models lose more than refined ones"}


def _ci(test: Mapping) -> str:
    return f"[{test['ci'][0]:+.2f}, {test['ci'][1]:+.2f}]"


def report(record: Optional[Mapping], analysis: Optional[Mapping] = None) -> Rich:
    """The planned study of ``record`` (its shipped record, or ``None`` before it ships) with ``analysis`` (its
    ``analyse(record)``): the primary test's table, then the exploratory contrasts under a heading that says they are
    exploratory; :data:`NOT_FINISHED` alone without a record."""
    if record is None or analysis is None:
        return paragraphs([NOT_FINISHED])
    seeds = {c: len(v["seeds"]) for c, v in analysis["cells"].items()}
    primary = format_table(
        [{"name": _HYPOTHESES[k], **t} for k, t in analysis["primary"].items()],
        [("hypothesis", "name", "{}"), ("estimate (points)", "estimate", "{:+.2f}"), ("95% interval", _ci, "{}"),
         ("p", "p", "{:.2g}"), ("p, Holm", "p_holm", "{:.2g}"), ("verdict", "verdict", "{}")], left=1,
        key=("verdict",), note=f"the plan's test: the loss L of every model on the plan's three graphs, a Welch-type t "
                               f"test of each contrast of the cell means, the training seed as the unit, Holm over the "
                               f"two; {min(seeds.values())} to {max(seeds.values())} models per cell")
    ex = analysis["exploratory"]
    rows = [{"name": "interaction (EF − ER) − (RF − RR)", **ex["interaction"]},
            {"name": "accuracy: integrator", **ex["accuracy_integrator"]},
            {"name": "accuracy: refinement", **ex["accuracy_refinement"]}]
    rows += [{"name": name, "estimate": t["diff"], "ci": t["ci95"], "p": t["p"]} for name, t in ex.items()
             if " - " in name]
    exploratory = format_table(rows, [("contrast", "name", "{}"), ("estimate", "estimate", "{:+.2f}"),
                                      ("95% interval", _ci, "{}"), ("p (unadjusted)", "p", "{:.2g}")], left=1)
    return join_rich([heading("The plan's test"), primary,
                      heading("Exploratory analyses (not part of the plan's test; p values unadjusted)"), exploratory])
