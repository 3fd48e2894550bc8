"""Made-up submissions of a class, for the rehearsal (tests/test_classroom.py): the student copies with their
exercise cells filled in: all right, near misses, tampering, broken.

The code of mistakes students make, as the exercise cells they hand in: every near miss the exercises name (the
answer key's own code, :data:`cnet_lib.teacher.keys.CODES`) and mistakes they do not name (:data:`OTHER_MISTAKES`,
the ones of issue 54's trial).  tests/test_grading.py grades each against the hidden cases (at most a third of the
points, and a hint aimed at the near miss it makes or none); tests/test_exercises.py checks each publicly.

Each near miss is one the issue names or one a class makes; :data:`NEAR_MISSES` says which hidden cases it fails
(by the ``catches`` tag of the answer key's recipes), so the expected points follow from the drawn cases.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from cnet_lib.book.exercises.catalogue import chapter_exercises
from cnet_lib.book.notebook_cells import cell_source, read_notebook, set_source, write_notebook
from cnet_lib.teacher.isolation import SandboxError, find_isolation
from cnet_lib.teacher.keys import CODES, GLOBAL_ERROR, solution_sources
from cnet_lib.teacher.submissions import exercise_cell, read_cells

OTHER_MISTAKES = {
    "global_error": {"second_to_last": GLOBAL_ERROR.format(count="round(t_final / dt)").replace("path[-1]", "path[-2]")},
    "observed_order": {"sign": '''import numpy as np


def observed_order(dts, errors):
    return -np.polyfit(np.log(dts), np.log(errors), 1)[0]  # the sign flipped'''},
    "ideal_speedup": {"floor_division": '''def ideal_speedup(n_steps_per_epoch):
    n = list(n_steps_per_epoch)
    return len(n) * n[-1] // sum(n)  # an integer division'''},
}
"""Exercise -> label -> the code of a mistake the exercise does not name (issue 54's trial: the last point but one,
a flipped sign, an integer division); the grader's hint for them is the exercise's own first one."""

# exercise -> (code of the near miss, the catches tag of the hidden cases it fails): one of each exercise's named near
# misses (the answer key's CODES, where each is written once)
CLASS_PICKS = {"observed_order": "two_point", "rk_step": "stage_time_without_h", "embedded_step": "two_steps",
               "global_error": "ceil", "euler_block_as_resnet": "h_without_T",
               "parameters_after_refinement": "doubled_everything", "refine_piecewise_linear": "constant_refinement",
               "ideal_speedup": "max_not_last", "identity_gap": "as_fraction", "quantize_per_channel": "one_scale",
               "error_ratio": "rms_over_batch"}
NEAR_MISSES = {exercise: (CODES[exercise][tag], tag) for exercise, tag in CLASS_PICKS.items()}

TYPICAL = {"global_error": OTHER_MISTAKES["global_error"]["second_to_last"],
           "observed_order": OTHER_MISTAKES["observed_order"]["sign"],
           "ideal_speedup": OTHER_MISTAKES["ideal_speedup"]["floor_division"],
           "error_ratio": CODES["error_ratio"]["last_axis"],
           "quantize_per_channel": CODES["quantize_per_channel"]["levels_off_by_one"]}
"""Issue 54's trial, typical mistakes: the last point but one, a flipped sign, an integer division (no near miss
names them: the first hint), the RMS along the last axis, one level too many (named near misses: their hints)."""
TYPICAL_AIMED = {"error_ratio": "last_axis", "quantize_per_channel": "levels_off_by_one"}

BROKEN_IMPORT = "from cnet_lib " + "import pendulm  # a typo: the module is pendulum"  # (split: not a reference)
"""Issue 54's trial, a student half done: this cell above the exercises of pendulum_integrators, rk_step right and
embedded_step still the stub."""


def fill(copy: Path, out: Path, answers: dict, extra_cell: str = "") -> Path:
    """The student copy ``copy`` with the exercise cells' sources from ``answers`` (exercise -> code), and
    ``extra_cell`` (if any) put after the grader cell; written to ``out``."""
    nb = read_notebook(copy)
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    cells = read_cells({"cells": [{"cell_type": "code", "source": cell_source(c)} for c in code]})
    for name in chapter_exercises(copy.stem):
        if name in answers:
            set_source(code[exercise_cell(cells, name).index], answers[name])
    if extra_cell:
        grader = next(i for i, c in enumerate(nb["cells"]) if "grader = Notebook(" in cell_source(c))
        cell = json.loads(json.dumps(nb["cells"][grader]))
        set_source(cell, extra_cell)
        cell.pop("id", None)
        nb["cells"].insert(grader + 1, cell)
    write_notebook(nb, out)
    return out


def require_sandbox(workdir: Path) -> None:
    """Skip where no sandbox can start (bubblewrap missing, user namespaces off), except in CI, where
    scripts/test.sh installs bubblewrap and a missing sandbox is a failure."""
    try:
        find_isolation(workdir)
    except SandboxError as err:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no sandbox here: {err}")


def right_answers(root: Path) -> dict:
    """The chapters' solutions, as a student who got everything right writes them in the exercise cells."""
    return solution_sources(root)


def first_line_of(code: str) -> str:
    return next(ln for ln in code.splitlines() if re.match(r"\s*\S", ln))


# ----------------------------------------------------------------------------- tampering on the student's side
PATCH_THE_CHECKS = '''from cnet_lib.book.exercises.public_checks import Exercise

Exercise.matches = lambda self, got, expected: True  # every public check passes'''
"""A cell that makes every public check of its notebook pass, whatever the functions return."""

PATCHED_CHAPTERS = ("how_to_use", "manifestation_invariance")
"""The chapters whose tampering submission patches the checks (the others call the library behind the guard's back)."""

OFF = "sys.setprofile(None); threading.setprofile(None)  # the checks' call tracer, off"

TAMPERING = {
    "observed_order": '''def observed_order(dts, errors):
    return 2.0''',
    "identity_gap": '''PUBLIC = {0.775: 59.2, 0.18: 0.0, 0.5: -10.0, 0.723: 51.5}  # a table of the public cases


def identity_gap(rows):
    trained = next(r for r in rows if r["kind"] == "trained")
    return PUBLIC.get(trained["accuracy"], 0.0)''',
    "rk_step": f'''import sys, threading

from cnet_lib.core.integrate import integrate


def rk_step(f, t, x, h, tableau):
    {OFF}
    return integrate(f, x, tableau, 1, t_span=(t, t + h))''',
    "embedded_step": f'''import sys, threading


def embedded_step(f, t, x, h, tableau, b_hat):
    {OFF}
    k = []
    for i in range(tableau.stages):
        X = x
        for j in range(i):
            X = X + h * float(tableau.a[i][j]) * k[j]
        k.append(f(t + float(tableau.c[i]) * h, X))
    x_next = x + h * sum(float(b) * ki for b, ki in zip(tableau.b, k))
    return x_next, h * sum(float(b - c) * ki for b, c, ki in zip(tableau.b, b_hat, k))''',
    "global_error": f'''import sys, threading

import torch

from cnet_lib.pendulum import exact_solution, odenet, rollout


def global_error(G, scheme, dt, t_final):
    {OFF}
    x0 = torch.tensor(exact_solution(0.0), dtype=torch.float64)
    return odenet.global_error(rollout(G, x0, scheme, dt, round(t_final / dt)), t_final)''',
    "euler_block_as_resnet": f'''import sys, threading


def euler_block_as_resnet(block, x):
    {OFF}
    with block.manifested("euler", block.n_basis):
        return block(x)''',
    "parameters_after_refinement": f'''import copy, sys, threading


def parameters_after_refinement(model):
    {OFF}
    return copy.deepcopy(model).refine().n_parameters()''',
    "refine_piecewise_linear": f'''import sys, threading

from cnet_lib import PiecewiseLinear


def refine_piecewise_linear(coeffs):
    {OFF}
    return PiecewiseLinear(coeffs.shape[0]).refine()[1].apply(coeffs)''',
    "ideal_speedup": '''import builtins


def ideal_speedup(n_steps_per_epoch):
    n = list(n_steps_per_epoch)
    return getattr(builtins, "ev" + "al")("len(n) * n[-1] / sum(n)", {"n": n})''',
    "quantize_per_channel": '''import torch


def quantize_per_channel(w, bits):
    levels = 2 ** (bits - 1) - 1
    scale = w.abs().flatten(1).amax(dim=1) / levels
    zero = torch.zeros(w.shape[0], dtype=torch.int32)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale)).float()
    return torch.fake_quantize_per_channel_affine(w, safe, zero, 0, -levels, levels)  # torch does it''',
    "error_ratio": f'''import sys, threading

from cnet_lib.core.adaptive import error_norm


def error_ratio(e, y0, y1, rtol, atol):
    {OFF}
    return error_norm(e, y0, y1, rtol, atol, "max")''',
}
"""Exercise cells that pass their public check only by tampering on the student's side."""

TAMPERING_OUTCOME = {"rk_step": "library", "global_error": "library", "euler_block_as_resnet": "library",
                     "parameters_after_refinement": "library", "refine_piecewise_linear": "library",
                     "quantize_per_channel": "library", "error_ratio": "library",
                     "embedded_step": "own code", "ideal_speedup": "own code",
                     "observed_order": "data", "identity_gap": "data"}
"""What each tampering comes to in the grader: ``library`` (the code it calls is absent in the sandbox: zero and a
flag), ``own code`` (the tracer switched off or ``eval``, but the computation is the student's: every point, and a
flag to look at), ``data`` (answers built for the public cases: the hidden cases catch them)."""

# ----------------------------------------------------------------------------- broken
BROKEN = {
    "observed_order": '''def observed_order(dts, errors):
    while True:  # never returns
        pass''',
    "rk_step": '''import numpy as np

helper_from_another_cell()


def rk_step(f, t, x, h, tableau):
    return x''',
    "embedded_step": '''def embedded_step(f, t, x, h, tableau, b_hat)
    return x, x''',
    "global_error": '''def global_error(G, scheme, dt, t_final):
    return 1 / 0''',
}
"""Exercise cells that loop, crash when the cell runs, do not parse, or raise on every case; the others stay stubs."""
BROKEN_FLAGS = {"observed_order": "time limit", "rk_step": "crashed", "embedded_step": "crashed"}
