"""The grader's sandbox: its command line (every namespace unshared, nobody's uid, the runtime of the grader's
environment only), the refusal where none can start and the unsafe mode said and recorded, one sandbox per job that
spoils only itself; then the attacks of issue 29 on the grader, each a submission (tests/attacks.py) graded by
``python -m cnet_lib grade`` in one run with the outcome it must get, and the grader itself killed mid-run.

* computed names, ``exec`` of base64, ``__import__`` by string, torch's own fake quantization and interpolation:
  what they reach is absent in the sandbox, so zero and a flag naming it;
* a rate evaluated behind its counter: there is no uncounted copy to call, so the count is 2s and the cases fail;
* the library's own code pasted in: its points (it is right) and a similarity flag for the teacher;
* reading the key (by its path, through ``/proc``), the answer key, the grade process's environment, the teacher's
  notebooks, another student's notebook; writing into her folder, the key folder, the installed library, the
  gradebook; the network: nothing is there to read or write, and the victim graded next gets every point;
* a detached process that outlives its cell to rewrite the gradebook, a cell that kills every process it can see
  and litters ``/tmp``: it dies with its sandbox, and the next job is untouched;
* memory in several processes, processes, disk: capped for the sandbox as a whole, by cgroups and, where the
  grader may make none, by per-process limits and a watchdog;
* the way out flooded (a result of 40 MiB, a rate sent requests and never read): that exercise only;
* the grader killed (SIGKILL, SIGTERM): the students graded so far stay in the gradebook, no temporary folder,
  cgroup or sandbox process is left, and ``--resume`` grades the rest.
"""
from __future__ import annotations

import csv
import math
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from attacks import ATTACKERS, CHAINS_REACH, MEMORY, PROCESSES, PROCESSES_HELD, ZERO_AND_LIBRARY_FLAG, cell, flood_zip
from classroom import fill, require_sandbox, right_answers
from hostile_class import EXTRA_CELLS, MEMFD, NAMES, NAMESPACES, RUN_ATTACKERS, hand_in_files

from cnet_lib.book.exercises.catalogue import chapter_exercises
from cnet_lib.book.exercises import EXERCISES
from cnet_lib.cli.grade import main as grade
from cnet_lib.teacher.absent import installed_package
from cnet_lib.teacher.grading import feedback_name
from cnet_lib.teacher.keys import AnswerKey, expected_outputs, hidden_cases, solution_sources
from cnet_lib.teacher.sandbox import Job, Limits, Sandbox
from cnet_lib.teacher import isolation, sandbox

ROOT = Path(__file__).resolve().parents[1]
MARK = "424242"
VICTIM = ("parameters_after_refinement", "refine_piecewise_linear", "ideal_speedup")


# ----------------------------------------------------------------------------- the sandbox itself
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


def test_numbers_in_the_limits_are_checked():
    with pytest.raises(ValueError, match="512 MiB"):
        Limits(memory_bytes=2**20)
    assert math.isclose(Limits().memory_bytes / 2**30, 2.0)


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


def test_the_sandbox_survives_a_crash_and_keeps_exercises_apart(tmp_path):
    """Each job is a sandbox of its own: one that dies, one that patches a built-in, one that loops and one that
    prints without end spoil only themselves, and the clean one beside them is right."""
    require_sandbox(tmp_path)
    cases = EXERCISES["ideal_speedup"].public()
    right = "def ideal_speedup(n):\n    n = list(n)\n    return len(n) * n[-1] / sum(n)"
    cells = {"crash": "import os\ndef ideal_speedup(n):\n    os._exit(7)",
             "patch": "import builtins\nbuiltins.sum = lambda v: 1\n" + right, "clean": right,
             "loop": "def ideal_speedup(n):\n    while True:\n        pass",
             "print": 'def ideal_speedup(n):\n    while True:\n        print("x" * 2**20)'}
    with Sandbox(tmp_path / "work", Limits(time_limit=3, tmp_bytes=64 * 2**20)) as box:
        done = {job.key: o for job, o in box.run_many(Job("ideal_speedup", c, cases, key=k) for k, c in cells.items())}
    assert done["crash"].status == "crashed" and "exit status 7" in done["crash"].detail, done["crash"]
    assert done["patch"].status == done["clean"].status == "ok"
    assert done["patch"].result["cases"] != done["clean"].result["cases"], "the patch spoils its own outputs"
    assert done["clean"].result["cases"][0]["value"] == 1.2, "and nothing of the other jobs'"
    assert done["loop"].status == "timeout" and 3 <= done["loop"].seconds < 10
    printed = done["print"]
    assert printed.status == "ok" and ("No space left" in printed.result["cases"][0]["error"]
                                       or "File too large" in printed.result["cases"][0]["error"]), printed
    assert len(printed.output) <= 4000 and printed.output.startswith("x")


# ----------------------------------------------------------------------------- the attack run (issue 29)
def _listen() -> tuple[socket.socket, list]:
    """A TCP server on 127.0.0.1 that records every connection."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    got: list = []

    def accept():
        while True:
            try:
                got.append(server.accept())
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return server, got


def _snapshot(folder: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def attacked(class_export, tmp_path_factory):
    """Every attacker, the run's attackers (tests/hostile_class.py) and a victim graded in one run of the command
    (8 s per exercise, 1 GiB, /tmp of 64 MiB), then the same command with --resume."""
    base = tmp_path_factory.mktemp("attacks")
    require_sandbox(base)
    copies, key = class_export["copies"], class_export["key"]
    subs, out = base / "submissions", base / "grades" / "gradebook.csv"
    server, connections = _listen()
    values = {"KEY": key, "SUBMISSIONS": subs, "GRADEBOOK": out, "FEEDBACK": out.with_name("gradebook-feedback"),
              "LIBRARY": installed_package(), "REPO": ROOT, "PORT": server.getsockname()[1], "MARK": MARK}
    for attacker, chapters in {**ATTACKERS, **RUN_ATTACKERS}.items():
        for chapter, cells in chapters.items():
            (subs / attacker).mkdir(parents=True, exist_ok=True)
            fill(copies / f"{chapter}.ipynb", subs / attacker / f"{chapter}.ipynb",
                 {name: cell(code, values) for name, code in cells.items()}, EXTRA_CELLS.get((attacker, chapter), ""))
    (subs / "victim").mkdir()
    fill(copies / "refinement_training.ipynb", subs / "victim" / "refinement_training.ipynb", right_answers(ROOT))
    files = hand_in_files(subs, copies / "how_to_use.ipynb", subs / "victim" / "refinement_training.ipynb")
    _third_round(subs, copies)
    keys_before = _sandbox_keys()
    before = {"victim": _snapshot(subs / "victim"), "key": _snapshot(key)}
    library_files = set(installed_package().rglob("*"))
    started = time.perf_counter()
    code = grade([str(subs), "--key", str(key), "--out", str(out), "--time-limit", "8", "--memory", "1", "--disk", "64"])
    seconds = time.perf_counter() - started
    time.sleep(1.5)  # past the detached process's `sleep 1.x`, had it survived (it started seconds before the end)
    server.close()
    rows = {r["feedback"]: r for r in csv.DictReader(out.open(encoding="utf-8"))}
    first = out.read_bytes()
    resumed = subprocess.run([sys.executable, "-m", "cnet_lib", "grade", str(subs), "--key", str(key), "--out", str(out),
                              "--resume"], capture_output=True, text=True, timeout=300)
    return {"code": code, "rows": rows, "feedback": values["FEEDBACK"], "key": AnswerKey.load(key), "subs": subs,
            "before": before, "library_files": library_files, "connections": connections, "out": out,
            "seconds": seconds, "key_dir": key, "files": files, "resumed": resumed, "first": first,
            "keys": (keys_before, _sandbox_keys())}


HONEST = ("how_to_use", "pendulum_integrators")
"""The chapters the honest control hands in right (the victim hands in refinement_training)."""


def _third_round(subs: Path, copies: Path) -> None:
    """Issue 56's students whose files are the attack, and an honest control: a 0.45 MB zip of 40 notebooks each of
    a million non-cells (or 200,000 cells whose source is 0); a browser's duplicate, the older one wrong."""
    answers = right_answers(ROOT)
    (subs / "honest").mkdir()
    for chapter in HONEST:
        fill(copies / f"{chapter}.ipynb", subs / "honest" / f"{chapter}.ipynb", answers)
    (subs / "r_flood.zip").write_bytes(flood_zip())
    (subs / "s_duplicate").mkdir()
    older, newer = subs / "s_duplicate" / "how_to_use.ipynb", subs / "s_duplicate" / "how_to_use (1).ipynb"
    fill(copies / "how_to_use.ipynb", older, {"observed_order": "def observed_order(dts, errors):\n    return 1.0"})
    fill(copies / "how_to_use.ipynb", newer, answers)
    os.utime(older, (time.time() - 3600, time.time() - 3600))


def _sandbox_keys() -> dict:
    """``{uid: keys}`` of the kernel's keys held by users other than root (/proc/key-users), the sandboxes' among
    them."""
    try:
        lines = Path("/proc/key-users").read_text().splitlines()
    except OSError:
        return {}
    return {int(ln.split(":")[0]): int(ln.split()[1]) for ln in lines if int(ln.split(":")[0]) != 0}


def _row(attacked, student: str) -> dict:
    return attacked["rows"][feedback_name(student)]


def _flags(row: dict, name: str) -> list[str]:
    return [f for f in row["flags"].split(" | ") if f.startswith(name + ": ")]


def _feedback(attacked, student: str) -> str:
    return (attacked["feedback"] / feedback_name(student)).read_text(encoding="utf-8")


def test_the_run_grades_every_attacker_and_the_victim(attacked):
    everyone = set(ATTACKERS) | set(RUN_ATTACKERS) | set(attacked["files"]) | {"victim", "honest", "r_flood", "s_duplicate"}
    assert attacked["code"] == 0 and set(attacked["rows"]) == {feedback_name(s) for s in everyone}
    assert all("bubblewrap" in r["isolation"] for r in attacked["rows"].values())
    print(f"\nattack run: {attacked['seconds']:.1f} s")


def test_what_the_attacks_reach_is_absent(attacked):
    for student, name in sorted(ZERO_AND_LIBRARY_FLAG):
        row = _row(attacked, student)
        assert float(row[name]) == 0, (student, name, row[name])
        assert any(f.startswith(f"{name}: library: calls ") for f in _flags(row, name)), (student, name, row["flags"])
    text = _feedback(attacked, "b_torch")
    assert "torch's aten::_fake_quantize_learnable_per_channel_affine is not available" in text
    assert "torch's aten::upsample_linear1d.vec is not available" in text
    assert "numpy.lib._function_base_impl.interp is not available" in text


def test_a_rate_cannot_be_evaluated_behind_its_counter(attacked):
    row = _row(attacked, "a_names")
    assert float(row["embedded_step"]) == 0
    found = re.search(r"rate evaluations: expected (\d+), got (\d+)", _feedback(attacked, "a_names"))
    assert found and int(found.group(2)) == 3 * int(found.group(1)), "three passes through the rate, all counted"


def test_pasted_library_code_earns_its_points_and_a_similarity_flag(attacked):
    row, key = _row(attacked, "c_paste"), attacked["key"]
    assert float(row["quantize_per_channel"]) == key.points["quantize_per_channel"]
    assert any("similarity: " in f and "robustness.study.quantize_per_channel" in f for f in _flags(row, "quantize_per_channel"))


def test_nothing_of_the_teachers_is_there_to_read_or_write(attacked):
    text = _feedback(attacked, "d_snoop")
    assert "SEEN pids [1]; grader []; read []; wrote []; uid 65534" in text, text[-1500:]
    everything = "".join(p.read_text(errors="ignore") for p in attacked["feedback"].glob("*.md"))
    assert attacked["key"].secret not in everything and attacked["key"].secret not in attacked["out"].read_text()
    assert _snapshot(attacked["subs"] / "victim") == attacked["before"]["victim"]
    assert _snapshot(attacked["key_dir"]) == attacked["before"]["key"]
    assert set(installed_package().rglob("*")) == attacked["library_files"]
    assert MARK not in attacked["out"].read_text()
    row = _row(attacked, "d_snoop")
    assert float(row["ideal_speedup"]) == 0 and "FileNotFoundError" in text, "the teacher's notebook is not there"


def test_no_network(attacked):
    text = _feedback(attacked, "d_snoop")
    assert "CONNECTED" not in text and "1.1.1.1: [Errno" in text
    assert attacked["connections"] == []


def test_a_process_that_outlives_its_cell_dies_with_the_sandbox_and_the_next_job_is_untouched(attacked):
    assert MARK not in attacked["out"].read_text() and MARK not in _feedback(attacked, "victim")
    leftover = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert f"sleep 1.{MARK}" not in leftover
    row = _row(attacked, "e_after")
    assert any(f.startswith("ideal_speedup: crashed: ") for f in _flags(row, "ideal_speedup")), row["flags"]
    victim, key = _row(attacked, "victim"), attacked["key"]
    assert all(float(victim[n]) == key.points[n] for n in VICTIM) and victim["flags"] == "", victim


def test_memory_processes_and_disk_are_capped_for_the_sandbox(attacked):
    row, text = _row(attacked, "f_hog"), _feedback(attacked, "f_hog")
    assert float(row["error_ratio"]) == 0 and float(row["global_error"]) == 0 and float(row["euler_block_as_resnet"]) == 0
    assert any("out of memory" in f for f in _flags(row, "error_ratio")), row["flags"]
    assert "processes, then [Errno 11]" in text or "more than 64 processes" in text, "the process cap"
    assert "written, then [Errno 28] No space left on device" in text or "File too large" in text, "the disk cap"


def test_the_way_out_is_bounded(attacked):
    """A result larger than the grader reads, and a rate flooded with requests that never reads a reply, cost
    their exercise only; the grading went on (the victim, graded after, has every point)."""
    row = _row(attacked, "g_flood")
    assert float(row["rk_step"]) == 0 and any("larger than the grader reads" in f for f in _flags(row, "rk_step"))
    assert float(row["embedded_step"]) == 0, row


# ----------------------------------------------------------------------------- the run itself (issue 42)
def test_no_student_stops_the_run_and_each_fault_is_a_sentence_in_its_row(attacked):
    """Malformed notebooks and zips, a FIFO, symbolic links to the victim's work: each its student's row and flag;
    the victim, graded in the same run, keeps every point; --resume then continues past all of them."""
    for student, says in attacked["files"].items():
        row = _row(attacked, student)
        assert says in row["flags"] + _feedback(attacked, student), (student, says, row["flags"])
        assert float(row["total"]) == 0, (student, row["total"])
    victim, key = _row(attacked, "victim"), attacked["key"]
    assert all(float(victim[n]) == key.points[n] for n in VICTIM) and victim["flags"] == "", victim
    resumed = attacked["resumed"]
    assert resumed.returncode == 0 and "grading the other 0" in resumed.stdout, resumed.stdout[-1500:] + resumed.stderr[-1500:]
    assert attacked["out"].read_bytes() == attacked["first"], "--resume kept every row as it was"


def test_a_rate_request_no_tensor_can_hold_is_refused_not_raised(attacked):
    row = _row(attacked, "h_rate")
    assert float(row["embedded_step"]) == 0
    assert "a request the grader does not accept" in _feedback(attacked, "h_rate")


def test_a_padded_cell_is_flagged_and_still_graded_in_bounded_time(attacked):
    row, key = _row(attacked, "l_padded"), attacked["key"]
    assert float(row["ideal_speedup"]) == key.points["ideal_speedup"], row
    unread = [f for f in _flags(row, "ideal_speedup") if "over the grader's reading cap" in f]
    assert len(unread) == 2, row["flags"]  # the exercise cell and the cell of magics above it


def test_flags_cannot_be_pushed_out(attacked):
    """Three library references first, then ctypes, os.system and eval; imports in the cell above the exercise;
    the library's code pasted with a no-op line after each statement: every finding is in the gradebook."""
    row = _row(attacked, "i_hidden")
    rk = " ".join(_flags(row, "rk_step"))
    for used in ("imports ctypes", "uses os.system", "uses eval", "uses cnet_lib.core.schemes.Tableau"):
        assert used in rk, (used, rk)
    above = " ".join(_flags(row, "refine_piecewise_linear"))
    assert "imports ctypes (code cell" in above and "importlib" in above, above
    assert int(row["flag_count"]) == len(row["flags"].split(" | ")) >= 8
    order = [f.split(": ", 2)[1] for f in row["flags"].split(" | ")]
    assert order.index("tampering") < order.index("library"), "the most serious first"
    paste = _row(attacked, "j_paste")
    assert any("similarity: " in f and "robustness.study.quantize_per_channel" in f for f in _flags(paste, "quantize_per_channel"))


def test_the_librarys_other_stage_loops_are_absent_too(attacked):
    row = _row(attacked, "k_absent")
    assert float(row["rk_step"]) == 0
    assert any("library: calls cnet_lib.pendulum.odenet.multi_scheme_rollout" in f for f in _flags(row, "rk_step"))


def test_no_namespaces_inside_the_sandbox(attacked):
    text = _feedback(attacked, "m_namespaces")
    assert "namespaces: user=-1/1 net=-1/1 mount=-1/1; unshare -Ur: 1" in text and "Operation not permitted" in text


def test_names_as_people_write_them_each_get_their_own_feedback(attacked):
    for label, name in NAMES.items():
        path = attacked["feedback"] / feedback_name(name)
        assert len(path.name.encode()) <= 84 and path.is_file(), (label, path.name)
        assert attacked["files"][name] in path.read_text(encoding="utf-8"), (label, "its own feedback")
    shown = {_row(attacked, n)["student"] for n in NAMES.values()}
    assert {"Иван", "王伟", "José", "Josè", "bob smith", "bob_smith", "'=x", "Jos\\xe9"} <= shown, shown


def test_each_run_draws_its_own_hidden_cases_and_feedback_never_shows_an_expected_value(attacked):
    """d_snoop's identity_gap returns 0.0: its feedback names where the value differs and what it was, never the
    reference's value; the row's nonce draws the same cases again, another nonce other cases."""
    row, key = _row(attacked, "d_snoop"), attacked["key"]
    assert len(row["cases"]) == 16 and len({r["cases"] for r in attacked["rows"].values()}) == 1
    cases = hidden_cases("identity_gap", key.secret, "d_snoop", row["cases"])
    assert cases != hidden_cases("identity_gap", key.secret, "d_snoop", "another run")
    text = _feedback(attacked, "d_snoop")
    assert "identity_gap" in text and "your value 0.0" in text
    for value in expected_outputs("identity_gap", cases):  # as a number of its own (not "27.0" inside "127.0.0.1")
        for shown in (repr(value), f"{value:.4g}"):
            assert not re.search(rf"(?<![\d.]){re.escape(shown)}(?!\.?\d)", text), (value, shown)


# ----------------------------------------------------------------------------- a third round (issue 56)
def test_an_honest_control_beside_the_third_rounds_attacks_gets_every_point(attacked):
    row, key = _row(attacked, "honest"), attacked["key"]
    mine = [n for chapter in HONEST for n in chapter_exercises(chapter)]
    assert mine and all(float(row[n]) == key.points[n] for n in mine) and row["flags"] == "", row


def test_a_flood_of_non_cells_costs_its_student_a_bounded_row_and_stops_no_one(attacked):
    """A 0.45 MB zip of 40 notebooks, each a million bare 0s in its list of cells (or 200,000 cells whose source is
    0): about 24 million problems before issue 56, kept in memory and written out; now a few sentences, the rest
    counted in one, a feedback file of kilobytes, and everyone else graded."""
    row = _row(attacked, "r_flood")
    flags = row["flags"].split(" | ")
    assert float(row["total"]) == 0 and 1 <= int(row["flag_count"]) <= 60 and len(row["flags"]) < 20_000, row["flag_count"]
    assert any(re.search(r"and [\d,]+ more problems", f) for f in flags), flags[-3:]
    size = (attacked["feedback"] / feedback_name("r_flood")).stat().st_size
    assert size < 30_000, size


def test_no_second_copy_of_a_library_and_no_library_that_computes_the_answer(attacked):
    """scipy's rk_step loaded from the base interpreter's scipy under another package name, and scipy.ndimage's
    linear zoom for the refinement: neither is in the sandbox (only the environment the grader chose is mounted,
    and ndimage is taken out with the interpolation routines): zero, and a flag."""
    row = _row(attacked, "n_second_copy")
    for name in ("rk_step", "refine_piecewise_linear"):
        assert float(row[name]) == 0 and _flags(row, name), (name, row[name], row["flags"])
    text = _feedback(attacked, "n_second_copy")
    assert "no second copy of scipy in reach" in text and "scipy.ndimage" in text, text[-2000:]


def test_the_audit_flags_what_an_attribute_chain_reaches(attacked):
    row, key = _row(attacked, "o_chains"), attacked["key"]
    flags = " ".join(_flags(row, "rk_step"))
    assert float(row["rk_step"]) == key.points["rk_step"], "the student's own code earns its points"
    for reached in CHAINS_REACH:
        assert f"reaches {reached}" in flags, (reached, flags)


def test_no_sandbox_reaches_the_kernel_keyring(attacked):
    """One student's sandbox stored its hidden-case inputs in the user keyring of the uid all sandboxes run as, the
    next one's read them, and the keys stayed after the run (issue 56): the system-call filter refuses the keyring
    calls, so nothing is stored, nothing read, nothing left."""
    writer, reader = _feedback(attacked, "p_keyring"), _feedback(attacked, "q_keyring")
    assert re.search(r"write add_key: -1 \(errno (1|38)\)", writer), writer[-1500:]
    assert re.search(r"read search: -1 \(errno (1|38)\)", reader) and "READ" not in reader, reader[-1500:]
    before, after = attacked["keys"]
    assert all(after.get(uid, 0) <= before.get(uid, 0) for uid in after), (before, after)


def test_of_a_browsers_duplicates_the_newer_is_graded_and_both_are_named(attacked):
    row, key = _row(attacked, "s_duplicate"), attacked["key"]
    assert float(row["observed_order"]) == key.points["observed_order"], row
    said = [f for f in row["flags"].split(" | ") if "handed in twice" in f]
    assert said and "how_to_use.ipynb" in said[0] and "how_to_use (1).ipynb" in said[0] and "newer" in said[0], said


CHANNEL_WRITER = '''import ctypes
import os
import socket

libc = ctypes.CDLL(None, use_errno=True)
IPC_CREAT = 0o1000


def ideal_speedup(n):
    said = []
    for what, call in (("msg", lambda: libc.msgget(0x4242, IPC_CREAT | 0o666)),
                       ("sem", lambda: libc.semget(0x4243, 1, IPC_CREAT | 0o666)),
                       ("shm", lambda: libc.shmget(0x4244, 4096, IPC_CREAT | 0o666)),
                       ("mq", lambda: libc.mq_open(b"/cnet-chan", os.O_CREAT | os.O_RDWR, 0o666, None))):
        ctypes.set_errno(0)
        said.append(f"{what} {call()}/{ctypes.get_errno()}")
    with open("/dev/shm/cnet-chan", "w") as f:
        f.write("x")
    try:
        os.makedirs("/sys/fs/cgroup/cnet-chan")
        said.append("cgroup MADE")
    except OSError as err:
        said.append(f"cgroup {err.errno}")
    server = socket.socket(socket.AF_UNIX)
    server.bind("\\0cnet-chan")
    server.listen()
    server.settimeout(5.0)
    try:
        server.accept()
        said.append("socket ACCEPTED")
    except OSError:
        said.append("socket alone")
    raise RuntimeError("wrote: " + "; ".join(said))'''

CHANNEL_READER = '''import ctypes
import os
import socket
import time

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
KEYCTL = {"x86_64": 250, "aarch64": 219}[os.uname().machine]


def ideal_speedup(n):
    time.sleep(1.5)  # the writer has written, and listens
    said = []
    for what, call in (("msg", lambda: libc.msgget(0x4242, 0)), ("sem", lambda: libc.semget(0x4243, 1, 0)),
                       ("shm", lambda: libc.shmget(0x4244, 4096, 0)), ("mq", lambda: libc.mq_open(b"/cnet-chan", os.O_RDWR)),
                       ("key", lambda: libc.syscall(KEYCTL, 10, -4, b"user", b"cnet-chan", 0))):
        ctypes.set_errno(0)
        said.append(f"{what} {call()}/{ctypes.get_errno()}")
    said.append(f"file {os.path.exists('/dev/shm/cnet-chan')}")
    said.append(f"sysvipc {sum(len(open(f'/proc/sysvipc/{k}').readlines()) - 1 for k in ('msg', 'sem', 'shm'))}")
    said.append(f"cgroupfs {os.path.exists('/sys/fs/cgroup')}")
    client = socket.socket(socket.AF_UNIX)
    try:
        client.connect("\\0cnet-chan")
        said.append("socket CONNECTED")
    except OSError as err:
        said.append(f"socket {err.errno}")
    raise RuntimeError("found: " + "; ".join(said))'''


def test_no_kernel_object_is_a_channel_between_sandboxes(tmp_path):
    """Issue 56: kernel objects that outlive a sandbox or are shared by uid.  A writer makes a System V message queue
    and semaphore set (and tries shared memory), a POSIX message queue, a file in /dev/shm, a cgroup, and listens on
    an abstract unix socket; a reader graded beside it (two sandboxes at a time), and again after it ended, finds
    none of them: each sandbox has its own IPC and network namespaces, /dev/shm and no cgroup file system, and the
    system-call filter refuses System V shared memory and the keyring."""
    require_sandbox(tmp_path)
    case = EXERCISES["ideal_speedup"].public()[:1]
    writer, reader = Job("ideal_speedup", CHANNEL_WRITER, case, key="writer"), Job("ideal_speedup", CHANNEL_READER, case)
    with Sandbox(tmp_path / "work", Limits(time_limit=20), jobs=2) as box:
        beside = {job.key: outcome for job, outcome in box.run_many([writer, reader])}
        after = next(outcome for _, outcome in box.run_many([reader]))
    wrote = beside["writer"].result["cases"][0]["error"]
    assert re.search(r"msg \d+/0; sem \d+/0; shm -1/1; mq \d+/0; cgroup (2|13|30)", wrote), wrote
    expected = (r"found: msg -1/2; sem -1/2; shm -1/1; mq -1/2; key -1/(1|38); file False; sysvipc 0; "
                r"cgroupfs False; socket 111")
    for outcome in (beside[None], after):
        found = outcome.result["cases"][0]["error"]
        assert re.search(expected, found), found
    if box.jobs >= 2:
        assert "socket alone" in wrote, "the reader ran beside the writer and could not connect"


LOADED_AGAIN = '''import importlib.util
import json
import sys
import types

spec = importlib.util.spec_from_file_location("again", json.__file__.replace("__init__", "encoder"))
again = importlib.util.module_from_spec(spec)
spec.loader.exec_module(again)  # a module of the environment, run a second time under another name
package = types.ModuleType("numpy_again")
package.__path__ = list(__import__("numpy").__path__)
sys.modules["numpy_again"] = package
importlib.import_module("numpy_again.version")  # a package of its own name over numpy's folder


def ideal_speedup(n_steps_per_epoch):
    n = list(n_steps_per_epoch)
    return len(n) * n[-1] / sum(n)'''


def test_a_second_copy_of_a_package_loaded_from_a_file_path_is_flagged(tmp_path):
    """Issue 56: with only the grader's environment mounted no second copy of a library is there to load, and the
    copies of the environment's own files carry the stubs; a code file run as a module under another name than its
    own is still flagged (an audit hook the cell cannot remove), beside its points."""
    from cnet_lib.teacher.grading import ExerciseGrade, finish

    require_sandbox(tmp_path)
    cases = EXERCISES["ideal_speedup"].public()
    with Sandbox(tmp_path / "work", Limits(time_limit=20)) as box:
        (job, outcome), = box.run_many([Job("ideal_speedup", LOADED_AGAIN, cases, key=("s", "ideal_speedup", 0))])
    grade = finish(ExerciseGrade("ideal_speedup", 1), job, outcome)
    copies = [f for f in grade.flags if "a second copy of a package, loaded from a file path" in f]
    assert any("json/encoder.py run as a module" in f for f in copies), grade.flags
    assert any("numpy/version.py run as a module" in f for f in copies), grade.flags
    assert all(f.startswith("tampering: ") for f in copies) and not any("/work/" in f for f in grade.flags)


# ----------------------------------------------------------------------------- the grader killed
def _class(base: Path, copies: Path) -> Path:
    """Three students: two quick ones around one whose exercise loops until its time limit."""
    subs = base / "submissions"
    answers = right_answers(ROOT)
    for student, code in (("a_quick", answers["ideal_speedup"]), ("b_loops", "def ideal_speedup(n):\n    while True:\n"
                                                                           "        pass"), ("c_quick", answers["ideal_speedup"])):
        (subs / student).mkdir(parents=True)
        fill(copies / "refinement_training.ipynb", subs / student / "refinement_training.ipynb", {"ideal_speedup": code})
    return subs


def _run(subs: Path, key: Path, out: Path, tmp: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.Popen([sys.executable, "-m", "cnet_lib", "grade", str(subs), "--key", str(key), "--out", str(out),
                             "--jobs", "1", *extra], env=env, cwd=str(tmp), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _wait_for(path: Path, text: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.is_file() and text in path.read_text():
            return
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never appeared in {path}")


def _cgroups(pid: int) -> list[str]:
    """The cgroup folders of the grading run of process ``pid`` still there."""
    found = []
    for folder, subfolders, _ in os.walk("/sys/fs/cgroup"):
        found += [os.path.join(folder, s) for s in subfolders if s.startswith(f"cnet-grade-{pid}-")]
        if folder.count(os.sep) > 6:
            subfolders[:] = []
    return found


def _left_behind(tmp: Path, pid: int) -> list:
    """What the grading run of process ``pid``, working in ``tmp``, left: its temporary folders, its sandboxes still
    running and its cgroups.  A sandbox is this run's when it or a process above it names a path in ``tmp`` (the grade
    command names the class's folder there): another test process may be grading its own class at the same time.
    ``ps -ww``: without it ps cuts each command line at 80 columns, before the path."""
    table = {}
    listing = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    for line in listing.splitlines():
        fields = line.split(None, 2)
        if len(fields) == 3:
            table[int(fields[0])] = (int(fields[1]), fields[2])

    def ours(p: int) -> bool:
        for _ in range(64):  # up the tree to init
            if p not in table:
                return False
            if f"{tmp}{os.sep}" in table[p][1]:
                return True
            p = table[p][0]
        return False

    sandboxes = [args for p, (_, args) in table.items() if "/grader/run.py" in args and ours(p)]
    return sorted(str(p) for p in tmp.glob("cnet-grade-*")) + sandboxes + _cgroups(pid)


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_killing_the_grader_keeps_what_was_graded_and_leaves_nothing(class_export, tmp_path, how):
    require_sandbox(tmp_path)
    subs, out = _class(tmp_path, class_export["copies"]), tmp_path / "gradebook.csv"
    proc = _run(subs, class_export["key"], out, tmp_path, "--time-limit", "60")
    _wait_for(out, "a_quick")
    time.sleep(1.0)  # b_loops's sandbox is running
    assert any("/grader/run.py" in x for x in _left_behind(tmp_path, proc.pid)), "the check sees this run's sandbox"
    proc.send_signal(how)
    text = proc.communicate(timeout=60)[0]
    deadline = time.monotonic() + 15
    while _left_behind(tmp_path, proc.pid) and time.monotonic() < deadline:  # the janitor cleans up after a SIGKILL
        time.sleep(0.2)
    assert _left_behind(tmp_path, proc.pid) == [], text
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [r["student"] for r in rows] == ["a_quick"] and float(rows[0]["ideal_speedup"]) == 1
    if how == signal.SIGTERM:
        assert proc.returncode == 130 and "--resume" in text, text
        resumed = _run(subs, class_export["key"], out, tmp_path, "--time-limit", "2", "--resume")
        text = resumed.communicate(timeout=120)[0]
        assert resumed.returncode == 0, text
        rows = {r["student"]: r for r in csv.DictReader(out.open(encoding="utf-8"))}
        assert sorted(rows) == ["a_quick", "b_loops", "c_quick"] and "2 students graded" in text, text
        assert float(rows["c_quick"]["ideal_speedup"]) == 1 and "time limit" in rows["b_loops"]["flags"]
        assert rows["c_quick"]["cases"] != rows["a_quick"]["cases"], "a run draws hidden cases of its own"
        assert _left_behind(tmp_path, resumed.pid) == []


def test_without_cgroups_the_sandbox_as_a_whole_is_still_capped(tmp_path, monkeypatch):
    """Where the grader may make no cgroup (an ordinary account on most desktops: a user namespace, here forced by
    saying the grader is not root), per-process limits and the grading process's watchdog cap memory, whatever
    its kind (memfds no process maps included), and processes across the sandbox's processes; and no namespace
    can be made inside."""
    require_sandbox(tmp_path)
    as_root = os.geteuid() == 0
    monkeypatch.setattr(sandbox.Cgroups, "find", classmethod(lambda cls, name: None))
    monkeypatch.setattr(isolation.os, "geteuid", lambda: 1000)
    one = {name: EXERCISES[name].public()[:1] for name in ("error_ratio", "global_error")}
    jobs = [Job("error_ratio", cell(MEMORY, {}), one["error_ratio"], key="memory"),
            Job("error_ratio", MEMFD, one["error_ratio"], key="memfd"),
            Job("error_ratio", NAMESPACES, one["error_ratio"], key="namespaces"),
            # run by root, this forced user-namespace sandbox is not held by RLIMIT_NPROC (all 300 processes start),
            # so only the grader's count, five times a second, caps them: the attack keeps them until it is counted
            Job("global_error", cell(PROCESSES_HELD if as_root else PROCESSES, {}), one["global_error"],
                key="processes")]
    with Sandbox(tmp_path / "work", Limits(time_limit=20, memory_bytes=2**30)) as box:
        assert box.cgroups is None and "(rlimits and a watchdog)" in box.describe()
        assert box.isolation.mode == "user" and "system calls filtered" in box.describe()
        done = {job.key: outcome for job, outcome in box.run_many(jobs)}
    for what in ("memory", "memfd"):
        assert done[what].status == "crashed" and "out of memory" in done[what].detail, done[what]
    processes = done["processes"]
    assert "more than 64 processes" in processes.detail or "processes, then [Errno 11]" in str(processes.result), processes
    refused = done["namespaces"].result["cases"][0]["error"]
    assert "user=-1/1 net=-1/1 mount=-1/1" in refused and "unshare -Ur: 1" in refused, refused
