"""Measured numbers come from the files their measurements wrote: every ``{measured}`` quote and
``{measured-table}`` of the book's pages resolves to a file of ``benchmarks/results/`` (or a shipped study), the
tables say which file, machine and date, and a quote of something that does not exist is refused."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cnet_lib.book.measured_tables import TABLES, WORDED, quoted
from cnet_lib.book.measurements import SHIPPED_TABLES
from cnet_lib.book.notebook_cells import cell_source, read_notebook
from cnet_lib.book.project import toc_files
from cnet_lib.book import measurements as M

ROOT = Path(__file__).resolve().parents[1]
ROLE = re.compile(r"\{measured\}`([^`]+)`")
DIRECTIVE = re.compile(r"^```\{measured-table\}\s+(\S+)", re.M)


def _pages() -> dict[str, str]:
    """Every page of _toc.yml as text (a notebook's markdown cells)."""
    out = {}
    for entry in toc_files(ROOT):
        md, nb = ROOT / f"{entry}.md", ROOT / f"{entry}.ipynb"
        if md.is_file():
            out[entry] = md.read_text(encoding="utf-8")
        elif nb.is_file():
            out[entry] = "\n".join(cell_source(c) for c in read_notebook(nb)["cells"] if c["cell_type"] == "markdown")
    return out


def test_every_quote_and_table_of_the_pages_resolves():
    """Every ``{measured}`` quote is a value of its file in the format it asks for, and every
    ``{measured-table}`` a table of :data:`TABLES` that names its files; all problems at once."""
    problems, quotes, tables = [], 0, set()
    for page, text in _pages().items():
        for spec in ROLE.findall(text):
            quotes += 1
            try:
                said = quoted(spec, ROOT)
            except (OSError, KeyError, ValueError) as err:
                problems.append(f"{page}: {{measured}}`{spec}`: {err}")
                continue
            if not said.strip():
                problems.append(f"{page}: {{measured}}`{spec}` quotes nothing")
        for name in DIRECTIVE.findall(text):
            tables.add(name)
            if name not in TABLES:
                problems.append(f"{page}: no measured table {name!r}")
    assert not problems, "\n".join(problems)
    assert quotes >= 10 and len(tables) >= 10, "the Reference pages read their numbers from the files"
    unused = set(TABLES) - tables
    assert not unused, f"tables no page shows: {sorted(unused)}"


def test_each_table_says_where_its_numbers_come_from():
    """A results table's note names its files (a shipped study's table is the chapter's own, from the study that
    ships beside the models); every table renders as HTML."""
    problems = []
    for name, build in TABLES.items():
        table = build(ROOT)
        if not (table.strip() and ("<table" in table.html or "<p" in table.html)):
            problems.append(f"{name}: empty")
        if name not in SHIPPED_TABLES and name not in WORDED and "benchmarks/results/" not in table:
            problems.append(f"{name}: its note names no file of benchmarks/results/")
        if name in WORDED and "read from" not in table:
            problems.append(f"{name}: its note does not say in words where its numbers are read from")
        if name == "shipped_models" and "cnet_lib/shipped/" not in table:
            problems.append(f"{name}: its note names no manifest")
    assert not problems, "\n".join(problems)


def test_a_quote_of_what_does_not_exist_is_refused(tmp_path):
    (tmp_path / M.RESULTS).mkdir(parents=True)
    (tmp_path / M.RESULTS / "demo.json").write_text(json.dumps({"a": {"b": [1.5, 2.25]}, "machine": {"cpu_count": 2}}))
    assert quoted("demo.json:a.b.1|.1f", tmp_path) == "2.2" and quoted("demo.json:a.b.0|x", tmp_path) == "1.50×"
    assert quoted("demo.json:machine|machine", tmp_path) == "a 2-core CPU"
    with pytest.raises(KeyError, match="demo.json has no 'c'"):
        quoted("demo.json:a.c", tmp_path)
    with pytest.raises(FileNotFoundError, match="never typed"):
        quoted("nothing.json:a", tmp_path)
    assert M.machine_words({"cpu_count": 2, "platform": "Linux-x86_64"}) == "a 2-core x86_64 CPU"
    assert M.machine_words({"device": "cuda:0", "device_name": "NVIDIA H100 80GB HBM3"}) == "an H100"
    assert M.machine_words({"cuda": "NVIDIA H200"}) == "an H200" and M.machine_words({"cuda": "12.1"}).endswith("CPU")
    (tmp_path / "cnet_lib" / "shipped" / "demo-run").mkdir(parents=True)
    (tmp_path / "cnet_lib" / "shipped" / "demo-run" / "results.json").write_text(json.dumps({"final_test_acc": 0.8228}))
    assert quoted("shipped/demo-run/results.json:final_test_acc|.0%", tmp_path) == "82%"
    with pytest.raises(FileNotFoundError, match="cnet ship"):
        quoted("shipped/demo-run/manifest.json:train_seconds", tmp_path)


def test_a_page_quotes_the_shipped_models_training_time_in_words():
    """``{measured}`training:<preset>``` is how long training the preset's image models takes, measured from the
    records that ship with them, with the machine; the introduction's table of presets says it so."""
    from cnet_lib.book.measured_tables import WORDS

    assert quoted("training:gpu") == M.training_words("gpu") and "H100" in quoted("training:gpu")
    assert quoted("training:cpu") == M.training_words("cpu") and "measured" in quoted("training:cpu")
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    assert "{measured}`training:cpu`" in intro and "{measured}`training:gpu`" in intro and set(WORDS) == {"training"}


def test_the_readme_is_a_front_page():
    """At most 200 lines; the measured numbers are the book's (no table of results, no dated measurement)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), "dates of measurements belong to the files and CHANGELOG.md"
    assert not re.search(r"\d+(\.\d+)? (s|ms|min)\b", text), "no measured time: the book's Measurements page has them"
