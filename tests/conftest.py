"""Shared pytest set-up: the ``cuda`` marker.

Tests marked ``@pytest.mark.cuda`` need a CUDA GPU: elsewhere they are skipped, and the summary
counts them as skipped (``pytest -ra`` lists them).  On a GPU machine ``pytest -m cuda`` runs just
those (``bash scripts/gpu_check.sh`` does).
"""
from __future__ import annotations

import pytest
import torch


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a CUDA GPU; skipped (and counted as skipped) without one")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (on a GPU machine: bash scripts/gpu_check.sh)")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)
