"""Every chapter notebook listed in _toc.yml runs top to bottom (nbmake, ``CNET_PRESET=smoke``).

The notebooks run in a fresh kernel with the book/ folder as working directory, exactly as the
book build runs them.  ``CNET_DATA_DIR`` defaults to the offline copy ``../shared/data`` when it
exists (see ``smoke_data.smoke_env`` in this folder).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from smoke_data import smoke_env

from cnet_lib.book.project import toc_notebooks

pytestmark = pytest.mark.slow  # runs every chapter through nbmake

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = toc_notebooks(ROOT)
CELL_TIMEOUT_S = 600  # per cell; the smoke preset needs seconds


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_smoke_preset(nb_path, monkeypatch):
    from nbmake.nb_run import NotebookRun

    for key, value in smoke_env().items():
        if os.environ.get(key) != value:
            monkeypatch.setenv(key, value)
    result = NotebookRun(nb_path, default_timeout=CELL_TIMEOUT_S).execute()
    if result.error is not None:
        pytest.fail(
            f"{nb_path.name}: cell {result.error.failing_cell_index} failed: {result.error.summary}\n\n{result.error.trace}",
            pytrace=False,
        )
    outputs = [o for c in result.nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "preset: smoke" in text, "the setup cell must print the preset"
    assert "❌" not in text, f"{nb_path.name}: an exercise check fails on its own solution:\n{text}"
    assert "✅ pass" in text, f"{nb_path.name}: no exercise check ran"
