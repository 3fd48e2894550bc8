"""``benchmarks/bench_ci.py``: pytest's summary read as pytest prints it, a row appended without losing the
earlier ones, each row naming its machine, and the book's CI table built from the file."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_ci  # noqa: E402


@pytest.mark.parametrize("line, expected", [
    ("==== 1139 passed, 13 skipped, 2 warnings in 512.31s (0:08:32) ====",
     dict(passed=1139, failed=0, skipped=13, errors=0, pytest_seconds=512)),
    ("= 5 failed, 1120 passed, 13 skipped, 15 errors in 470.02s (0:07:50) =",
     dict(passed=1120, failed=5, skipped=13, errors=15, pytest_seconds=470)),
    ("1 error in 3.10s", dict(passed=0, failed=0, skipped=0, errors=1, pytest_seconds=3)),
])
def test_pytest_summary_reads_the_last_summary_line(line, expected):
    text = f"tests/test_a.py ....\n3 passed in 1.00s\nreal 9m1s\n{line}\n\nreal\t9m12.1s\n"
    assert bench_ci.pytest_summary(text) == expected


def test_no_summary_line_gives_no_seconds():
    assert bench_ci.pytest_summary("ERROR: could not install torch\n")["pytest_seconds"] is None


def test_a_row_is_appended_and_the_earlier_rows_stay(tmp_path):
    path = tmp_path / "ci.json"
    path.write_text(json.dumps({"benchmark": "ci", "machine": "m", "runs": [{"commit": "a"}]}))
    bench_ci.append_row(path, {"commit": "b"})
    data = json.loads(path.read_text())
    assert [r["commit"] for r in data["runs"]] == ["a", "b"] and data["machine"] == "m"
    assert [p.name for p in tmp_path.iterdir()] == ["ci.json"]  # no temporary file left


def test_the_machine_is_named_as_a_reader_names_it():
    words = bench_ci.machine_words()
    assert words.startswith("a ") and "-core " in words and "CPU (" in words and "EPYC" not in words


def test_every_ci_row_names_a_machine_and_the_book_table_shows_it_without_its_commit():
    from cnet_lib.book.measured_tables import ci_table

    data = json.loads((ROOT / "benchmarks" / "results" / "ci.json").read_text())
    for row in data["runs"]:
        assert row.get("machine", data.get("machine")), row
        assert isinstance(row["wall_seconds"], int) and row["commit"], row
    text = str(ci_table(ROOT))
    assert all(row["date"] in text for row in data["runs"])
    assert "the project's CI runner" in text
    # issue 44: the reference pages show no commit hash (the repository's history keeps them, ci.json records them)
    assert not any(row["commit"] in text for row in data["runs"]), text
