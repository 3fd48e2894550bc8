"""The numbers of the published book (the ``gpu`` preset, :data:`cnet_lib.book.project.PUBLISHED_PRESET`) that a
page states without a cell to glue them from (the introduction), computed the way the chapters compute them, from
what ships with the book.  (Every chapter glues its numbers from its own cells; each study's test file checks them:
``tests/test_pendulum.py``, ``tests/test_robustness.py``, ``tests/test_manifestation.py``,
``tests/test_continuousnet.py``, ``tests/test_refinement.py``, ``tests/test_adaptive.py``.)

``tests/test_prose_numbers.py`` checks that every number such a page states is one of these, formatted as the
prose prints it.  Everything here is read from the shipped study files, so the numbers are the same on every machine.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from cnet_lib import images
from cnet_lib.book.project import PUBLISHED_PRESET
from cnet_lib.studies import robustness
from smoke_data import smoke_settings

ROOT = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=None)
def settings(runs_dir: str):
    return smoke_settings(preset=PUBLISHED_PRESET, runs_dir=Path(runs_dir))


@lru_cache(maxsize=None)
def image_numbers(runs_dir: str) -> dict:
    """The image models in the published preset: the number of held-out images their studies measured on."""
    runs = images.trained_runs(settings(runs_dir), verbose=False)
    r = robustness.judge(robustness.run(runs, verbose=False), "rk4_refined", "euler_fixed")
    return {"n_test": f"{r.n:,}"}
