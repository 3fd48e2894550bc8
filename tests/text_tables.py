"""Reading the library's text tables in tests, and the tiny ContinuousNet the table tests build."""
from __future__ import annotations

import re

import torch

from cnet_lib.core.models import ContinuousNet


def cells(text: str) -> list[list[str]]:
    """The cells of each line of a text table (columns are separated by two or more spaces)."""
    return [[c for c in re.split(r"\s{2,}", line.strip())] for line in text.splitlines() if line.strip()]


def row_of(text: str, first: str) -> list[str]:
    """The cells of the table line whose first cell is ``first``."""
    found = [c for c in cells(text) if c[0] == first]
    assert len(found) == 1, f"no single line starting with {first!r} in:\n{text}"
    return found[0]


def tiny(scheme="euler", n_basis=2, gain=0.5, seed=0, **kw) -> ContinuousNet:
    """A ContinuousNet of channels (2, 4, 4) in eval mode, every skip gain set to ``gain``."""
    torch.manual_seed(seed)
    m = ContinuousNet(channels=(2, 4, 4), n_basis=n_basis, scheme=scheme, **kw).eval()
    with torch.no_grad():
        for b in m.blocks:
            b.skip_gain.fill_(gain)
    return m
