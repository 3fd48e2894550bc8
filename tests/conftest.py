"""Shared pytest set-up: the markers' behaviour (``pyproject.toml`` registers them).

Tests marked ``@pytest.mark.cuda`` need a CUDA GPU: elsewhere they are skipped, and the summary counts them
as skipped (``pytest -ra`` lists them).  On a GPU machine ``pytest -m cuda`` runs just those (``bash
scripts/gpu_check.sh`` does).  Tests marked ``slow`` (a whole test file's ``pytestmark``) are the slow
tier: ``pytest -m "not slow"`` leaves them out; ``bash scripts/test.sh`` (CI) runs everything.
"""
from __future__ import annotations

import pytest
import torch


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (on a GPU machine: bash scripts/gpu_check.sh)")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def class_export(tmp_path_factory):
    """A class's export as a teacher makes it, built once for the session (``python -m cnet_lib student OUTDIR
    --wheel-url URL``): ``{"copies": OUTDIR (the copies), "wheel": the students' wheel's folder beside it, "key": the
    answer key beside it}``.
    tests/test_student.py and tests/test_classroom.py share it (building the wheel takes seconds)."""
    from pathlib import Path

    from cnet_lib.cli.student import main

    root = Path(__file__).resolve().parents[1]
    base = tmp_path_factory.mktemp("class")
    out = base / "students"
    assert main([str(out), "--wheel-url", "https://course.example.edu/ml/", "--root", str(root)]) == 0
    return {"copies": out, "wheel": base / "students-wheel", "key": base / "students-key", "root": root}
