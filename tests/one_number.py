"""One number per model (issue 40): where the built book quotes a trained model's accuracy on its own graph.

A model's accuracy on its own graph is the one its training measured (:attr:`StudyRun.final_accuracy`, which the
sweeps reproduce); a study that evaluates the model again on a subset or in another arithmetic gets another figure,
and the page must say why beside it ("as trained: ..." in the same sentence or the table's note,
:func:`cnet_lib.images.runs.run_loading.as_trained_note`).  :func:`own_accuracy_mentions` finds every such quotation in a
built page: sentences "<model> 82.4% clean" / "<model>: 82.3% on its own graph", and table rows that start with a
model's label and show it on its own graph ("own: ...", "float32", the sweep summary's and the paper table's columns).
"""
from __future__ import annotations

import re
from typing import NamedTuple

from bs4 import BeautifulSoup

from cnet_lib.runtime.rich_text import RUN_LABELS

LABELS = {label: run for run, label in RUN_LABELS.items()}
EXPLAINED = "as trained:"
SENTENCE = re.compile(r"(" + "|".join(re.escape(label) for label in LABELS) + r"):? (\d+(?:\.\d+)?)% "
                      r"(?:clean|on its own graph)")
OWN_COLUMNS = ("accuracy", "here (%)")  # with a row of the model on its own graph
OWN_HEADERS = ("own graph (%)",)  # every row is the model on its own graph


class Mention(NamedTuple):
    run: str
    percent: float
    where: str
    explained: bool


def _value(text: str) -> float | None:
    text = text.strip().rstrip("%")
    try:
        v = float(text)
    except ValueError:
        return None
    return 100 * v if v <= 1 else v


def own_accuracy_mentions(html: str) -> list[Mention]:
    """Every quotation of a model's accuracy on its own graph in a built page."""
    soup = BeautifulSoup(html, "html.parser")
    out = []
    for p in soup.find_all("p"):
        text = " ".join(p.get_text(" ").split())
        for m in SENTENCE.finditer(text):
            out.append(Mention(LABELS[m[1]], float(m[2]), text[:160], EXPLAINED in text.lower()))
    for table in soup.select("table.cnet-table"):
        heads = [" ".join(th.get_text(" ").split()) for th in table.select("thead th")]
        box = table.find_parent(class_="cnet-scroll")
        note_el = box.find_next_sibling("p") if box is not None else None
        note = " ".join(note_el.get_text(" ").split()) if note_el is not None and "cnet-note" in (note_el.get("class") or []) \
            else ""
        for tr in table.select("tbody tr"):
            cells = [" ".join(td.get_text(" ").split()) for td in tr.find_all("td")]
            if not cells or cells[0] not in LABELS:
                continue
            own_row = any(c.startswith("own") or c == "float32" for c in cells[1:3]) or "here (%)" in heads \
                or "own graph" in heads
            cols = [i for i, h in enumerate(heads) if h in OWN_HEADERS or (own_row and h in OWN_COLUMNS)]
            for i in cols:
                v = _value(cells[i]) if i < len(cells) else None
                if v is not None:
                    out.append(Mention(LABELS[cells[0]], v, " | ".join(cells)[:160], EXPLAINED in note.lower()))
    return out


def unexplained(mentions: list[Mention], trained: dict) -> list[Mention]:
    """The mentions whose figure is not the model's accuracy as trained (``trained``: run -> %, compared at one
    decimal) and that say nothing of why."""
    return [m for m in mentions if not m.explained and m.run in trained and f"{m.percent:.1f}" != f"{trained[m.run]:.1f}"]


def trained_accuracies(html: str) -> dict:
    """run -> % of the runs table (:func:`cnet_lib.book.runs_table`: its row "held-out accuracy", one column
    per model) of a built page."""
    soup = BeautifulSoup(html, "html.parser")
    for table in soup.select("table.cnet-table"):
        heads = [" ".join(th.get_text(" ").split()) for th in table.select("thead th")]
        for tr in table.select("tbody tr"):
            cells = [" ".join(td.get_text(" ").split()) for td in tr.find_all("td")]
            if cells and cells[0] == "held-out accuracy":
                return {LABELS[h]: _value(c) for h, c in zip(heads[1:], cells[1:]) if h in LABELS}
    return {}
