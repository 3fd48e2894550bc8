"""Every sentence of the chapters that compares numbers agrees with the numbers it sits beside.

Two kinds (book/CONTRIBUTING.md, item 9):

* sentences whose numbers are the same in every preset (the units of a manifestation): checked here against the
  library's numbers;
* sentences whose numbers depend on the preset or on training (the speed-up of refinement, the verdicts): worded by
  the library from the numbers a chapter has just computed (:func:`cnet_lib.report.refinement_report.word_speedup`,
  the verdict modules), so they cannot disagree with them; the chapters are checked to display them.

The pendulum chapters' sentences are checked in ``tests/test_pendulum.py``.
"""
from __future__ import annotations

import re
from pathlib import Path

from cnet_lib.book.notebook_cells import cell_source, read_notebook
from cnet_lib.images.studies import theta

ROOT = Path(__file__).resolve().parents[1]


def _markdown(name: str) -> str:
    return "\n".join(cell_source(c) for c in read_notebook(ROOT / "book" / f"{name}.ipynb")["cells"]
                     if c["cell_type"] == "markdown")


def _code(name: str) -> str:
    return "\n".join(cell_source(c) for c in read_notebook(ROOT / "book" / f"{name}.ipynb")["cells"]
                     if c["cell_type"] == "code")


def test_units_claims_of_the_continuousnet_chapter():
    """"classic RK4 with N_t = M/2 costs twice the evaluations of the ResNet graph and reads every piece; with N_t = 1
    it skips pieces; the 3/8 rule ... touches every piece even at N_t = 1"."""
    assert "costs twice the evaluations of the ResNet graph" in _markdown("continuousnet")
    rows = {(r["scheme"], r["n_steps"]): r for r in theta.manifestation_reads(
        [("euler", 4), ("rk4_classic", 2), ("rk4_classic", 1), ("rk4_38", 1)], 4)}
    assert rows[("rk4_classic", 2)]["units"] == 2 * rows[("euler", 4)]["units"]
    assert sorted(rows[("rk4_classic", 2)]["pieces"]) == [0, 1, 2, 3]
    assert len(set(rows[("rk4_classic", 1)]["pieces"])) < 4 and sorted(set(rows[("rk4_38", 1)]["pieces"])) == [0, 1, 2, 3]


# --------------------------------------------------------------------------- sentences worded from the numbers
def test_the_refinement_chapter_words_its_speedup_from_the_numbers():
    assert "report.word_speedup" in Path(ROOT / "book" / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert "report.refinement_cost_table(timing" in _code("refinement_training")
    assert "Expect the measured speed-up to fall short" not in _markdown("refinement_training")


def test_no_chapter_prints_a_table():
    """Tables and verdicts are displayed (HTML that wraps to the page), never printed."""
    printed = re.compile(r"print\(\s*\"?\\?n?\"?\s*\+?\s*(?:\"\\n\"\.join\()?\s*(report|pendulum|demos)\.(format_\w+|\w+_text|"
                         r"\w+_table|word_\w+)\(")
    for nb in sorted((ROOT / "book").glob("*.ipynb")):
        hits = printed.findall(_code(nb.stem))
        assert not hits, f"{nb.name} prints a table or verdict: display it instead ({hits})"
