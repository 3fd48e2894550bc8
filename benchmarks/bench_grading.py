"""How long a class's grading takes: the export (copies, students' wheel, answer key) and
``python -m cnet_lib grade`` on N made-up students (half with the right answers, half with near misses,
tests/classroom.py), every chapter with exercises, each exercise in a sandbox of its own.  Writes
benchmarks/results/bench_grading.json with the machine, its load, the isolation and the sandboxes at a time.

    .venv/bin/python benchmarks/bench_grading.py            # 40 students
    .venv/bin/python benchmarks/bench_grading.py --students 10
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _timing import write_result  # noqa: E402
from classroom import NEAR_MISSES, fill, right_answers  # noqa: E402

from cnet_lib.cli.grade import main as grade  # noqa: E402
from cnet_lib.cli.student import main as export  # noqa: E402
from cnet_lib.teacher.keys import AnswerKey  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=40)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        tmp = Path(tmp)
        load_before = os.getloadavg()
        t0 = time.perf_counter()
        assert export([str(tmp / "students"), "--wheel-url", "https://course.example.edu/ml/", "--root", str(ROOT)]) == 0
        export_s = time.perf_counter() - t0
        answers = [right_answers(ROOT), {k: v[0] for k, v in NEAR_MISSES.items()}]
        copies = sorted((tmp / "students").glob("*.ipynb"))
        for i in range(args.students):
            folder = tmp / "submissions" / f"student{i:03d}"
            folder.mkdir(parents=True)
            for nb in copies:
                fill(nb, folder / nb.name, answers[i % 2])
        t0 = time.perf_counter()
        said = io.StringIO()
        with contextlib.redirect_stdout(said):
            assert grade([str(tmp / "submissions"), "--key", str(tmp / "students-key"), "--out", str(tmp / "g.csv")]) == 0
        grade_s = time.perf_counter() - t0
        exercises = len(AnswerKey.load(tmp / "students-key").exercises)  # the gradebook's other columns are not
        isolation = next(ln for ln in said.getvalue().splitlines() if ln.startswith("isolation: "))
    out = write_result("bench_grading", {
        "students": args.students, "chapters": len(copies), "exercises": exercises,
        "export_seconds": round(export_s, 1), "grade_seconds": round(grade_s, 1),
        "grade_seconds_per_student": round(grade_s / args.students, 2),
        "load_average_before": [round(v, 2) for v in load_before], "load_average_after": [round(v, 2) for v in os.getloadavg()],
        "isolation": isolation[len("isolation: "):],
        "note": "a bubblewrap sandbox per student and exercise (python and torch start in each); the export includes "
                "building the students' wheel",
    })
    print(f"export {export_s:.1f} s, grading {args.students} students {grade_s:.1f} s -> {out}")


if __name__ == "__main__":
    main()
