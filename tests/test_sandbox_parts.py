"""The grader's sandbox piece by piece (issue 29), without starting one: what is taken out for each exercise and
how (stubs that keep a file importable), the one way out (the result's schema), the counter of a rate's
evaluations, the similarity check's calibration, the sandbox's command line, the refusal where none can start,
and the key's errors in one sentence."""
from __future__ import annotations

import csv
import importlib.util
import inspect
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from classroom import NEAR_MISSES, fill
from cnet_lib.book.exercises import EXERCISES
from cnet_lib.book.exercises.recipes import encode
from cnet_lib.cli.grade import main as grade
from cnet_lib.core import adaptive, bases, integrate, step_control
from cnet_lib.images.studies import robustness_perturbations as perturbations
from cnet_lib.teacher import isolation
from cnet_lib.teacher.absent import plan
from cnet_lib.teacher.answer_key import AnswerKey, solution_sources
from cnet_lib.teacher.grading import unfinished_stub
from cnet_lib.teacher.grading_library import GradingLibrary, installed_package
from cnet_lib.teacher.rate_server import CountedRates
from cnet_lib.teacher.result_schema import STARTED, ResultError, parse_channel, parse_result
from cnet_lib.teacher.similarity import FLAG_AT, NOTE_AT, compare
from cnet_lib.teacher.stubbing import absent_message, stub_source

ROOT = Path(__file__).resolve().parents[1]

SOURCE = '''import functools


def helper(x):
    return x + 1  # a comment that stays


def _decorate(fn):
    return functools.wraps(fn)(lambda *a: fn(*a))


@_decorate
def work(a, b=2):
    """Does the work."""
    def inner():
        return a * b
    return inner() + helper(a)


class Thing:
    def __init__(self, v):
        self.v = helper(v)

    @property
    def value(self):  # a comment that goes with its function
        return self.v


TABLE = {n: helper(n) for n in range(3)}
'''


# ----------------------------------------------------------------------------- stubs
def test_a_stubbed_function_raises_and_the_rest_of_the_file_stays():
    out = stub_source(SOURCE, lambda q: q in ("work", "Thing.value"), lambda q: f"absent {q}")
    assert out.names == ("Thing.value", "work")
    ns: dict = {}
    exec(out.source, ns)
    with pytest.raises(NotImplementedError, match="absent work"):
        ns["work"](1)
    with pytest.raises(NotImplementedError, match="absent Thing.value"):
        ns["Thing"](1).value
    assert ns["helper"](1) == 2 and ns["TABLE"] == {0: 1, 1: 2, 2: 3}
    assert "a comment that stays" in out.source and "a * b" not in out.source and "Does the work" not in out.source


def test_a_module_taken_out_whole_keeps_what_it_needs_to_import():
    out = stub_source(SOURCE, lambda q: True, lambda q: f"absent {q}", whole=True)
    assert "helper" not in out.names and "_decorate" not in out.names and "Thing.__init__" not in out.names
    assert set(out.names) == {"work", "Thing.value"}
    exec(out.source, {})


def test_what_each_exercise_takes_out():
    rk = plan("rk_step")
    assert rk.named["cnet_lib.core.integrate"] >= {"integrate", "integrate_positions", "stage_positions"}
    assert rk.named["cnet_lib.core.adaptive"] is None, "the adaptive integrator takes embedded steps too"
    assert set(rk.hidden) == {"torchdiffeq", "scipy.integrate"}
    assert "scipy.interpolate" in plan("refine_piecewise_linear").hidden
    assert plan("refine_piecewise_linear").outside.operators and plan("quantize_per_channel").outside.operators
    assert "OdeBlock.project" in plan("parameters_after_refinement").named["cnet_lib.core.odeblock"]
    assert "cnet_lib.core.schemes:get_scheme" in rk.kept, "what building the cases needs stays"
    assert not {k for k in rk.kept if k.startswith("cnet_lib.core.integrate:integrate")}, "the named code goes"
    glob = plan("global_error")
    assert {"cnet_lib.pendulum.odenet:rollout", "cnet_lib.pendulum.physics:exact_solution"} <= glob.kept


# the library's own stage loops that no exercise's list names: what issue 42 found computing rk_step's answer
BATCHED_STAGE_LOOPS = ("cnet_lib.pendulum.scheme_batches.multi_scheme_rollout", "cnet_lib.studies.adaptive.study.fixed_solves",
                       "cnet_lib.studies.adaptive.study.adaptive_solves")


def test_every_exercises_students_build_compiles_and_keeps_only_what_it_needs(tmp_path):
    """Each exercise's build: every rewritten file compiles, the library's other stage loops refuse in the step
    exercises' builds, and what the exercise needs stays (the chapters' solutions run in the sandbox: alice's
    full points in tests/test_classroom.py)."""
    library = GradingLibrary(tmp_path, installed_package())
    assert not (library.base / "teacher").exists() and not (library.base / "cli" / "grade.py").exists()
    for name in EXERCISES:
        build = library.folder(name) / "cnet_lib"
        changed = [p for p in build.rglob("*.py") if p.stat().st_ino != (library.base / p.relative_to(build)).stat().st_ino]
        assert len(changed) > 50, (name, len(changed))
        for path in changed:
            text = path.read_text(encoding="utf-8")
            compile(text, str(path), "exec")
            assert "is not available while" in text
    for name in ("rk_step", "embedded_step", "error_ratio"):
        build = library.folder(name) / "cnet_lib"
        for qualified in BATCHED_STAGE_LOOPS:
            module, function = qualified.rsplit(".", 1)
            source = (build / (module.split(".", 1)[1].replace(".", "/") + ".py")).read_text(encoding="utf-8")
            ns = {"__name__": module}
            exec(compile(source, module, "exec"), ns)
            with pytest.raises(NotImplementedError, match=f"{qualified} is not available while exercise {name} is graded"):
                ns[function](*[None] * ns[function].__code__.co_argcount)


def test_nothing_an_exercises_sandbox_keeps_computes_its_answer():
    """tests/absent_trial.py tries every function the sandbox of each exercise keeps on the exercise's hidden cases
    (by position, and as a method or property of every argument of its class): none returns the answer.  The
    control: tried the same way, the exercises' own forbidden functions are found where they compute it."""
    trial = [sys.executable, str(Path(__file__).with_name("absent_trial.py"))]
    control = subprocess.run(trial + ["--control", "quantize_per_channel", "error_ratio"], capture_output=True,
                             text=True, timeout=600)
    assert json.loads(control.stdout) == {
        "quantize_per_channel": ["cnet_lib.images.studies.robustness_perturbations.quantize_per_channel"],
        "error_ratio": ["cnet_lib.core.step_control.error_norm"]}, control.stderr[-2000:]
    kept = subprocess.run(trial, capture_output=True, text=True, timeout=600)
    found = json.loads(kept.stdout)
    assert set(found) == set(EXERCISES) and not any(found.values()), (found, kept.stderr[-2000:])


def test_the_stub_of_a_library_function_is_what_the_absent_message_says():
    source = inspect.getsource(integrate)
    out = stub_source(source, lambda q: q == "integrate", lambda q: absent_message("rk_step", f"cnet_lib.core.integrate.{q}"))
    ns: dict = {"__name__": "cnet_lib.core.integrate"}
    exec(compile(out.source, "integrate.py", "exec"), ns)
    with pytest.raises(NotImplementedError, match="this is what exercise rk_step asks you to write: "
                                                  "cnet_lib.core.integrate.integrate is not available"):
        ns["integrate"](None, None, "euler", 1)


# ----------------------------------------------------------------------------- the one way out
def _result(cases) -> bytes:
    return json.dumps({"kind": "cases", "cases": cases, "failed_imports": [], "output": ""}).encode()


def test_the_result_is_read_strictly():
    good = [{"value": encode(torch.ones(2, 3))}, {"error": "ValueError: no", "where": "line 1"}, {"value": float("nan")}]
    assert parse_channel(STARTED + _result(good) + b"\n", 3)["cases"][1]["error"] == "ValueError: no"
    tensor = encode(torch.ones(2, 3))
    bad = {
        "more cases": (_result(good), 2),
        "an unknown key": (json.dumps({"kind": "not_done", "output": "", "points": 20}).encode(), 0),
        "a tensor whose data do not fill it": (_result([{"value": {**tensor, "shape": [4, 4]}}]), 1),
        "an unknown dtype": (_result([{"value": {**tensor, "dtype": "object"}}]), 1),
        "a raw dict": (_result([{"value": {"returned": 1}}]), 1),
        "deep nesting": (_result([{"value": json.loads("{\"$\": \"list\", \"items\": [" * 40 + "]}" * 40)}]), 1),
        "a long string": (_result([{"error": "x" * 10**5, "where": ""}]), 1),
        "not JSON": (b"{'kind': 'cases'}", 1),
    }
    for what, (line, n) in bad.items():
        with pytest.raises(ResultError):
            parse_result(line, n)
            pytest.fail(what)
    for data in (b"", _result(good) + b"\n", STARTED, STARTED + _result(good), STARTED + _result(good) + b"\n" * 2,
                 STARTED + _result(good) + b"\n" + _result(good) + b"\n"):
        with pytest.raises(ResultError):
            parse_channel(data, 3)


# ----------------------------------------------------------------------------- the counter outside
def test_a_counted_rate_is_evaluated_and_counted_here():
    recipes = EXERCISES["embedded_step"].public()[:2]
    rates = CountedRates(recipes)
    assert rates and all("counted_rate" in json.dumps(r) and '"omega"' not in json.dumps(r) for r in rates.sent)
    x = torch.tensor([0.3, -0.2], dtype=torch.float64)
    reply = json.loads(rates.answer(json.dumps({"id": 0, "t": 0.5, "x": encode(x)}).encode()))
    expected = rates.rates[0].fn(0.5, x)
    assert torch.allclose(torch.tensor(reply["value"]["data"], dtype=torch.float64), expected)
    assert rates.evaluations(0) == 1 and rates.evaluations(1) == 0
    for junk in (b"{", b'{"id": 7, "t": 0, "x": 1}', json.dumps({"id": 0, "t": "now", "x": encode(x)}).encode(),
                 json.dumps({"id": 0, "t": 0, "x": encode(torch.tensor([1, 2]))}).encode()):
        assert "error" in json.loads(rates.answer(junk))
    assert rates.evaluations(0) == 1 and rates.refused == 4, "a refused request is not an evaluation"


# ----------------------------------------------------------------------------- pasted code
def test_the_similarity_check_tells_pasted_library_code_from_the_books_solutions():
    solutions = solution_sources()
    for name in EXERCISES:
        for cell in (solutions[name], NEAR_MISSES[name][0]):
            similar = compare(cell, name)
            assert similar is None or not similar.flagged, (name, similar)
    pasted = {"rk_step": inspect.getsource(integrate.integrate_positions),
              "embedded_step": inspect.getsource(adaptive._stages) + inspect.getsource(adaptive.embedded_step),
              "refine_piecewise_linear": inspect.getsource(bases.PiecewiseLinear.refine)
              + inspect.getsource(bases.CoefficientMap.apply),
              "quantize_per_channel": inspect.getsource(perturbations.quantize_per_channel),
              "error_ratio": inspect.getsource(step_control.error_norm) + inspect.getsource(step_control._scaled_norm)}
    for name, code in pasted.items():
        renamed = code.replace("x", "state").replace("h", "dt")  # renaming changes no token's kind
        for cell in (code, renamed):
            assert compare(cell, name).flagged and compare(cell, name).share >= 0.8, name
    assert 0 < NOTE_AT < FLAG_AT < 0.8


def test_an_unfinished_stub_is_decided_without_running_it():
    assert unfinished_stub('import math\n\ndef f(x):\n    """doc"""\n    raise NotImplementedError("write it")\n', "f")
    assert unfinished_stub("def f(x):\n    raise NotImplementedError\n", "f")
    for cell in ("def f(x):\n    raise NotImplementedError\nf = abs\n", "def f(x):\n    return 1\n",
                 "@decorate\ndef f(x):\n    raise NotImplementedError\n", "def g(x):\n    raise NotImplementedError\n",
                 "def f(x):\n    raise ValueError\n", "def f(x):\n    raise NotImplementedError\nfrom math import f\n"):
        assert not unfinished_stub(cell, "f"), cell


# ----------------------------------------------------------------------------- the sandbox's command line
def test_the_command_line_unshares_everything_and_drops_to_nobody(tmp_path):
    for mode in ("root", "user"):
        iso = isolation.Isolation(mode, "/usr/bin/bwrap", "/usr/bin/setpriv", frozenset({"--size", "--disable-userns"}))
        cmd = isolation.bwrap_command(iso, library=(tmp_path, installed_package()), overlays=(), hidden=[tmp_path / "h"],
                                      files=[(tmp_path / "job", "/grader/job.json")], empty=tmp_path / "e",
                                      tmp_bytes=2**20, env={"A": "1"}, argv=["python", "-I", "x"], seccomp_fd=7)
        for flag in ("--unshare-pid", "--as-pid-1", "--unshare-net", "--unshare-ipc", "--die-with-parent",
                     "--new-session", "--clearenv", "--size"):
            assert flag in cmd, (mode, flag)
        assert cmd[-3:] == ["python", "-I", "x"] and "--ro-bind" in cmd and str(installed_package()) in cmd
        assert cmd[cmd.index("--seccomp") + 1] == "7", "the system call filter, in both modes"
        shm = cmd.index("/dev/shm")
        assert cmd[shm - 5:shm] == ["--size", "1048576", "--perms", "1777", "--tmpfs"], "/dev/shm is capped as /tmp is"
        if mode == "root":
            assert "--reuid=65534" in cmd and "--no-new-privs" in cmd and "--unshare-user" not in cmd
        else:
            assert cmd[cmd.index("--uid") + 1] == "65534" and "--disable-userns" in cmd


def test_where_no_sandbox_can_start_grade_refuses_in_one_sentence(class_export, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(isolation.shutil, "which", lambda name: None)
    subs = tmp_path / "subs"
    (subs / "s").mkdir(parents=True)
    (subs / "s" / "how_to_use.ipynb").write_bytes((class_export["copies"] / "how_to_use.ipynb").read_bytes())
    assert grade([str(subs), "--key", str(class_export["key"]), "--out", str(tmp_path / "g.csv")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "bwrap is not installed" in err and "WSL" in err and "--unsafe-no-sandbox" in err
    assert not (tmp_path / "g.csv").exists()


def test_grading_without_a_sandbox_is_said_and_recorded(class_export, tmp_path, capsys):
    subs = tmp_path / "subs"
    (subs / "s").mkdir(parents=True)
    fill(class_export["copies"] / "refinement_training.ipynb", subs / "s" / "refinement_training.ipynb",
         {"ideal_speedup": solution_sources()["ideal_speedup"]})
    out = tmp_path / "g.csv"
    assert grade([str(subs), "--key", str(class_export["key"]), "--out", str(out), "--unsafe-no-sandbox"]) == 0
    assert "--unsafe-no-sandbox: the students' code runs as you" in capsys.readouterr().err
    (row,) = csv.DictReader(out.open(encoding="utf-8"))
    assert row["ideal_speedup"] == "1" and row["isolation"].startswith("NONE (--unsafe-no-sandbox")


def test_a_key_naming_an_unknown_exercise_is_one_sentence(class_export, tmp_path, capsys):
    data = json.loads((class_export["key"] / "key.json").read_text())
    data["exercises"].append("flux_capacitor")
    (tmp_path / "key.json").write_text(json.dumps(data))
    assert grade([str(tmp_path), "--key", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "flux_capacitor" in err and "Traceback" not in err
    with pytest.raises(ValueError, match="flux_capacitor"):
        AnswerKey.load(tmp_path)


def test_a_name_that_a_spreadsheet_would_run_is_written_as_text(tmp_path):
    from cnet_lib.teacher.gradebook import feedback_name, read_rows, write_gradebook
    from cnet_lib.teacher.grading import ExerciseGrade, SubmissionGrade

    names = ("=cmd|' /C calc'!A0", "ann", "'=x", "=x")
    grades = [SubmissionGrade(n, {"ideal_speedup": ExerciseGrade("ideal_speedup", 1, 1.0)}) for n in names]
    path = write_gradebook(grades, ["ideal_speedup"], tmp_path / "g.csv", "bubblewrap")
    rows = {r[0]: r for r in csv.reader(path.open(encoding="utf-8"))}
    assert {"'=cmd|' /C calc'!A0", "ann", "'=x"} <= set(rows), rows
    assert set(read_rows(path, ["ideal_speedup"])) == {feedback_name(n) for n in names}, "--resume finds each again"
    assert len({feedback_name(n) for n in names}) == 4, "'=x and =x are two students"
    assert not list(tmp_path.glob(".*.tmp")), "no temporary file left"


def test_numbers_in_the_limits_are_checked():
    from cnet_lib.teacher.limits import Limits

    with pytest.raises(ValueError, match="512 MiB"):
        Limits(memory_bytes=2**20)
    assert math.isclose(Limits().memory_bytes / 2**30, 2.0)
    assert importlib.util.find_spec("cnet_lib.teacher.sandbox") is not None


def test_a_runtime_under_tmp_is_bound_on_top_of_the_sandboxs_own_tmp(monkeypatch, tmp_path):
    """CI may check the project out under /tmp (a clean clone in /tmp/...: its .venv is the runtime). The sandbox's
    private /tmp is mounted first and the runtime, the library and the job's files on top of it; mounted last, the
    tmpfs hid them (bwrap: 'execvp /tmp/.../.venv/bin/python: No such file or directory')."""
    venv = tmp_path / "clone" / ".venv"
    monkeypatch.setattr(isolation, "runtime_paths", lambda: [venv])
    iso = isolation.Isolation("user", "/usr/bin/bwrap", "", frozenset({"--size"}))
    cmd = isolation.bwrap_command(iso, library=(tmp_path / "students", tmp_path / "clone" / "cnet_lib"), overlays=(),
                                  hidden=(), files=[(tmp_path / "job.json", "/grader/job.json")], empty=tmp_path / "empty",
                                  tmp_bytes=2**20, env={}, argv=[str(venv / "bin" / "python")])
    tmpfs = cmd.index("--tmpfs")
    assert cmd[tmpfs + 1] == "/tmp" and [cmd[i + 1] for i, a in enumerate(cmd) if a == "--tmpfs"] == ["/tmp", "/dev/shm"]
    binds = [i for i, a in enumerate(cmd) if a == "--ro-bind" and cmd[i + 2].startswith(str(tmp_path))]
    assert binds and all(i > tmpfs for i in binds), (tmpfs, [cmd[i + 2] for i in binds])


# ----------------------------------------------------------------------------- reading in bounded time (issue 42)
def test_a_cell_is_read_as_ipython_reads_it_in_linear_time():
    """The grader's reading of magics gives the tree IPython's own transformer gives, on every code cell of the book
    and on escapes of every kind; 4,000 lines of `x = !ls` (60 s for IPython's transformer, which then gives up)
    take a fraction of a second."""
    import ast
    import time

    from IPython.core.inputtransformer2 import TransformerManager

    from cnet_lib.book.cell_magics import cell_python
    from cnet_lib.book.notebook_cells import cell_source, read_notebook
    from cnet_lib.book.toc import toc_notebooks

    sources = ["!ls -la\nx = 1\n", "  %time f()\n", "if True:\n    %pip install -q \"a b\"\n", "x = !ls\nprint(x)\n",
               "y = %env HOME\n", "obj?\n", "??obj\n", "a.b??\n", "%%time\nx = 1\n", ">>> x = 1\n", "    x = 1\n    y = 2\n"]
    sources += [cell_source(c) for p in toc_notebooks() for c in read_notebook(p)["cells"] if c["cell_type"] == "code"]
    ipython = TransformerManager()
    for source in sources:
        assert ast.dump(ast.parse(cell_python(source))) == ast.dump(ast.parse(ipython.transform_cell(source))), source
    started = time.perf_counter()
    assert ast.parse(cell_python("x = !ls\n" * 4000)).body
    assert time.perf_counter() - started < 5


def test_reading_a_notebook_of_one_megabyte_cells_is_capped_and_flagged():
    """Six cells of 1 MB (padding, magics, code, functions, nesting) and two just under the cap: the reading and
    the audit of the whole notebook take seconds, each cell over the cap is flagged and not read, and the exercise
    in the padded cell is still sent to its sandbox."""
    import time

    from cnet_lib.teacher.grading import prepare
    from cnet_lib.teacher.submissions import CELL_CAP, READ_SECONDS
    from cnet_lib.teacher.submission_files import read_notebook_data
    from cnet_lib.teacher.submissions import Submission

    mb, right = 2**20, solution_sources()["ideal_speedup"]
    cells = [right + "\n# " + "x" * mb, "!ls\n" * (mb // 4), "x = !ls\n" * (mb // 8), "y = 1 + 2\n" * (mb // 10),
             "".join(f"def f{i}(a):\n    return a\n" for i in range(mb // 30)), "x = " + "-" * mb + "1",
             "!ls\n" * (CELL_CAP // 4 - 10), "z = [a for a in range(3)]\n" * (CELL_CAP // 27)]
    data = json.dumps({"cells": [{"cell_type": "code", "source": c} for c in cells], "metadata": {}}).encode()
    key = AnswerKey("s", ("refinement_training",), ("ideal_speedup",), {"ideal_speedup": 1})
    started = time.perf_counter()
    sub = Submission("padder", {"refinement_training": read_notebook_data(data, "padder.ipynb")})
    grade, jobs = prepare(sub, key, "nonce")
    seconds = time.perf_counter() - started
    print(f"\nread and audited {len(data) / mb:.1f} MB in {seconds:.2f} s ({sub.deadline.spent:.2f} s of reading)")
    flags = grade.grades["ideal_speedup"].flags
    assert sum("over the grader's reading cap" in f for f in flags) == 6, flags
    assert len(jobs) == 1 and jobs[0].cell.startswith("def ideal_speedup"), "the padded exercise still runs"
    assert sub.deadline.spent < READ_SECONDS and seconds < READ_SECONDS


def test_a_fault_of_the_graders_in_one_exercise_is_that_exercises_zero_and_flag(monkeypatch):
    """Whatever the grader itself fails on while reading one exercise, or what one sandbox returned, is that
    exercise's zero and a 'grader:' sentence; the submission's other exercises are prepared as usual."""
    from cnet_lib.teacher import grading
    from cnet_lib.teacher.sandbox_process import Outcome
    from cnet_lib.teacher.submission_files import read_notebook_data
    from cnet_lib.teacher.submissions import Submission

    right = solution_sources()
    cells = [{"cell_type": "code", "source": right[n]} for n in ("parameters_after_refinement", "ideal_speedup")]
    key = AnswerKey("s", ("refinement_training",), ("parameters_after_refinement", "ideal_speedup"),
                    {"parameters_after_refinement": 1, "ideal_speedup": 1})
    real = grading.compare
    monkeypatch.setattr(grading, "compare", lambda src, name: real(src, name) if name == "ideal_speedup" else 1 / 0)
    sub = Submission("ann", {"refinement_training": read_notebook_data(json.dumps({"cells": cells}).encode(), "a")})
    grade, jobs = grading.prepare(sub, key, "n")
    broken = grade.grades["parameters_after_refinement"]
    assert broken.points == 0 and broken.flags[-1].startswith("grader: the exercise could not be graded (ZeroDivision")
    assert [j.exercise for j in jobs] == ["ideal_speedup"]
    done = grading.finish(grade.grades["ideal_speedup"], jobs[0], Outcome("ok", result={"kind": "cases", "cases": None}))
    assert done.points == 0 and done.flags[-1].startswith("grader: what the sandbox returned could not be graded")


# ----------------------------------------------------------------------------- reading bounded in its own process (issue 56)
def test_a_flood_of_non_cells_is_read_in_bounded_time_memory_and_words(tmp_path):
    """A notebook of a million bare 0s in its list of cells (2 MB) gave a million problems, 616 MB in the grading
    process and a 55 MB feedback file; a zip of 40 of them stopped the class's run.  Now each notebook's problems
    are capped and the rest counted, its cells capped, and the submission's problems capped; the reading happens
    in a program of its own, under a memory cap, within the student's reading time (the attack run of
    tests/test_sandbox_attacks.py hands in the zip of 40 and grades the class)."""
    import time

    from attacks import flood_notebook, flood_zip
    from cnet_lib.teacher.submission_files import MAX_CELLS, MAX_NOTEBOOK_PROBLEMS, MAX_PROBLEMS
    from cnet_lib.teacher.submissions import find_submissions

    (tmp_path / "one.ipynb").write_bytes(flood_notebook(1_000_000))
    (tmp_path / "many.zip").write_bytes(flood_zip(notebooks=10))  # the attack run hands in all 40
    fill((ROOT / "book" / "how_to_use.ipynb"), tmp_path / "honest.ipynb", solution_sources())
    started = time.perf_counter()
    subs = {s.student: s for s in find_submissions(tmp_path, ["how_to_use"])}
    seconds = time.perf_counter() - started
    one, many = subs["one"].problems, subs["many"].problems
    assert one[0] == f"one.ipynb: holds 1,000,000 cells; only the first {MAX_CELLS:,} read (look at it)", one[:2]
    assert len(one) == MAX_NOTEBOOK_PROBLEMS + 2 and "and 991 more problems like these" in one[-2], one[-3:]
    assert len(many) == MAX_PROBLEMS + 1 and re.search(r"^and [\d,]+ more problems like these", many[-1]), many[-1]
    assert subs["honest"].problems == [] and list(subs["honest"].notebooks) == ["how_to_use"]
    assert seconds < 30 and subs["many"].deadline.spent < 30, seconds
    print(f"\nread a 2 MB flood, a zip of 10 floods and an honest notebook in {seconds:.1f} s")


def test_reading_one_submission_past_its_time_or_memory_is_its_own_sentence(tmp_path):
    from attacks import flood_notebook
    from cnet_lib.teacher.submission_files import read_files

    (tmp_path / "big.ipynb").write_bytes(flood_notebook(4_000_000, source_zero=True))  # 140 MB of cells: not read
    (tmp_path / "small.ipynb").write_bytes(flood_notebook(200_000, source_zero=True))
    notebooks, problems, _ = read_files([tmp_path / "small.ipynb"], memory=256 * 2**20)
    assert len(notebooks) == 1 and "reading" not in " ".join(problems), "a small one fits"
    notebooks, problems, seconds = read_files([tmp_path / "small.ipynb"] * 3, seconds=0.05)
    assert problems[-1].startswith("reading small.ipynb, small.ipynb, small.ipynb stopped after") and \
        "reading took over 0.05 s" in problems[-1] and seconds < 5, problems
    import shutil
    shutil.copy(tmp_path / "small.ipynb", tmp_path / "tiny-budget.ipynb")
    notebooks, problems, _ = read_files([tmp_path / "tiny-budget.ipynb"], memory=64 * 2**20)
    assert notebooks == [] and re.search(r"needs more memory|needed more than", " ".join(problems)), problems


def test_of_two_copies_of_a_chapter_the_newer_is_graded_and_both_are_named(tmp_path):
    """A browser saves a second download as "how_to_use (1).ipynb": graded by name order, the older one was; now
    the newer by the time each was saved (a file's modification time, a zip entry's time stamp)."""
    import os
    import time
    import zipfile

    from cnet_lib.teacher.submissions import find_submissions

    right = solution_sources()
    copy = ROOT / "book" / "how_to_use.ipynb"
    (tmp_path / "ann").mkdir()
    fill(copy, tmp_path / "ann" / "how_to_use (1).ipynb", right)
    fill(copy, tmp_path / "ann" / "how_to_use.ipynb", {"observed_order": "def observed_order(dts, errors):\n    return 1"})
    os.utime(tmp_path / "ann" / "how_to_use.ipynb", (time.time() - 60, time.time() - 60))
    (tmp_path / "bob").mkdir()
    for name, stamp, code in (("a.zip", (2026, 1, 5, 10, 0, 0), right["observed_order"]),
                              ("b.zip", (2026, 1, 4, 10, 0, 0), "def observed_order(dts, errors):\n    return 1")):
        fill(copy, tmp_path / "nb.ipynb", {"observed_order": code})
        with zipfile.ZipFile(tmp_path / "bob" / name, "w") as zf:
            zf.writestr(zipfile.ZipInfo("how_to_use.ipynb", stamp), (tmp_path / "nb.ipynb").read_bytes())
    (tmp_path / "nb.ipynb").unlink()
    subs = {s.student: s for s in find_submissions(tmp_path, ["how_to_use"])}
    for student, graded, other in (("ann", "how_to_use (1).ipynb", "how_to_use.ipynb"),
                                   ("bob", "a.zip:how_to_use.ipynb", "b.zip:how_to_use.ipynb")):
        sub = subs[student]
        assert sub.files["how_to_use"] == graded, (student, sub.files)
        assert "def observed_order(dts, errors):\n    return 1" not in json.dumps(sub.notebooks["how_to_use"])
        (said,) = [p for p in sub.problems if "handed in twice" in p]
        assert graded in said and other in said and said.endswith(f"graded {graded}, the newer"), said


def test_only_the_environment_the_grader_runs_in_is_in_the_sandbox(tmp_path, monkeypatch):
    """Issue 56: the sandbox mounted the base interpreter whole, and its own scipy with it, where nothing is taken
    out for an exercise (a cell loaded scipy's rk_step from there).  Every folder of Python packages the runtime's
    mounts and /usr would show, other than the environment's own, is covered by an empty folder."""
    base, venv = tmp_path / "base", tmp_path / "venv"
    for folder in (base / "lib" / "python3.11" / "site-packages" / "scipy", venv / "lib" / "python3.11" / "site-packages"):
        folder.mkdir(parents=True)
    own = venv / "lib" / "python3.11" / "site-packages"
    monkeypatch.setattr(isolation, "runtime_paths", lambda: [base, venv])
    monkeypatch.setattr(isolation.site, "getsitepackages", lambda: [str(own)])
    monkeypatch.setattr(isolation.sys, "path", [str(base / "lib" / "python3.11"), str(own)])
    hidden = isolation.other_site_packages()
    assert base / "lib" / "python3.11" / "site-packages" in hidden and own not in hidden
    iso = isolation.Isolation("user", "/usr/bin/bwrap", "", frozenset())
    cmd = isolation.bwrap_command(iso, library=None, overlays=(), hidden=(), files=(), empty=tmp_path / "empty",
                                  tmp_bytes=2**20, env={}, argv=["python"])
    covered = [cmd[i + 2] for i, a in enumerate(cmd) if a == "--ro-bind" and cmd[i + 1] == str(tmp_path / "empty")]
    assert str(base / "lib" / "python3.11" / "site-packages") in covered and str(own) not in covered, covered
    mounted = cmd.index(str(base))
    assert all(cmd.index(c) > mounted for c in covered), "covered after the runtime is mounted"
