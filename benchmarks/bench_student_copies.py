"""What a student needs to work through the copies on their own machine, measured: every student copy run to its end
in a fresh virtual environment that holds the students' wheel (not the teacher's library), with its stubs and with
the book's solutions in its exercise cells, on the student's default preset (``cpu`` without a GPU; ``--preset``
chooses another) with the data folder a course hands out (``--data``, e.g. a small copy of CIFAR-10), then with
its stubs and no data at all.  Writes benchmarks/results/student_copies.json: each run's seconds, whether it reached
its end, what its checks said and which notes it printed (a small copy used whole, fake data), the disk the library
and its dependencies take, the data folder and what the chapters wrote, the machine and its load.

    .venv/bin/python benchmarks/bench_student_copies.py --data ../shared/data
    .venv/bin/python benchmarks/bench_student_copies.py --data ../shared/data --keep /tmp/solved   # keep the runs

The virtual environment gets this environment's packages (torch, numpy, ...) by a path file, offline, and the
wheel without dependencies; the disk a student needs for them is measured from their installed files
(:func:`dependency_bytes`).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _timing import write_result  # noqa: E402
from classroom import fill, right_answers  # noqa: E402

from cnet_lib.book.project import toc_notebooks  # noqa: E402
from cnet_lib.cli.student import main as export  # noqa: E402

RUN = r'''
import json, re, sys, time
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
path, out = sys.argv[1], sys.argv[2]
nb = nbformat.read(path, as_version=4)
client = NotebookClient(nb, timeout=1800, kernel_name="python3", resources={"metadata": {"path": sys.argv[3]}})
error, started = None, time.perf_counter()
try:
    client.execute()
except CellExecutionError as err:
    error = re.sub(r"\x1b\[[0-9;]*m", "", str(err))[-3000:]
seconds = time.perf_counter() - started
nbformat.write(nb, out)
text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
print(json.dumps({"seconds": round(seconds, 1), "error": error, "text": text}))
'''


def dependency_bytes(name: str = "cnet-lib") -> dict:
    """``{distribution: bytes of its installed files}`` of ``name`` and everything it requires (extras left out)."""
    seen, todo, out = set(), [name], {}
    while todo:
        dist_name = re.split(r"[ ;<>=!~\[(]", todo.pop(), maxsplit=1)[0].strip().lower().replace("_", "-")
        if not dist_name or dist_name in seen:
            continue
        seen.add(dist_name)
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            continue
        files = [dist.locate_file(f) for f in dist.files or ()]
        out[dist.metadata["Name"]] = sum(p.stat().st_size for p in files if p.is_file())
        todo += [r for r in dist.requires or () if "extra ==" not in r]
    return out


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file()) if Path(folder).exists() else 0


def student_venv(tmp: Path, wheel: Path) -> Path:
    """A fresh virtual environment with ``wheel`` installed and this environment's packages on a path file."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "teacher_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True)
    found = subprocess.run([str(python), "-c", "import cnet_lib, importlib.util; print(cnet_lib.__file__, "
                            "importlib.util.find_spec('cnet_lib.teacher'))"], capture_output=True, text=True,
                           check=True, cwd=tmp).stdout.split()
    assert found[0].startswith(str(venv)) and found[1] == "None", found
    return python


def run_copy(python: Path, notebook: Path, out: Path, home: Path, data: Path, preset: str) -> dict:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "CNET_DATA_DIR": str(data), "OMP_WAIT_POLICY": "PASSIVE",
           "LANG": "C.UTF-8", **({"CNET_PRESET": preset} if preset else {})}
    done = subprocess.run([str(python), "-c", RUN, str(notebook), str(out), str(notebook.parent)], env=env,
                          capture_output=True, text=True, cwd=notebook.parent)
    if done.returncode != 0:
        return {"seconds": None, "error": done.stderr[-3000:], "reached_end": False}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    text = result.pop("text")
    preset_said = re.search(r"^preset: (\w+)", text, re.M)
    return {**result, "reached_end": result["error"] is None, "preset": preset_said.group(1) if preset_said else None,
            "passed": text.count("✅ pass"), "failed": text.count("❌ fail"), "not_done": text.count("❌ not done yet"),
            "small_copy_note": "fewer than the" in text and "the chapter uses all" in text,
            "fake_data": "Using FAKE data" in text}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("CNET_DATA_DIR", "")),
                    help="the folder that holds cifar-10-batches-py (a course's copy)")
    ap.add_argument("--preset", default="", help="CNET_PRESET for the runs (default: none, the student's default)")
    ap.add_argument("--chapters", nargs="*", default=None, help="default: every chapter")
    ap.add_argument("--keep", type=Path, default=None, help="copy the executed notebooks here")
    args = ap.parse_args()
    load_before = os.getloadavg()
    chapters = args.chapters or [p.stem for p in toc_notebooks(ROOT)]
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-student-copies-") as tmp:
        tmp = Path(tmp)
        assert export([str(tmp / "students"), "--wheel-url", "https://course.example.edu/ml/", "--root", str(ROOT)]) == 0
        (wheel,) = (tmp / "students-wheel").glob("*.whl")
        python = student_venv(tmp, wheel)
        solved, executed, home, nodata = tmp / "solved", tmp / "executed", tmp / "home", tmp / "no-data"
        for folder in (solved, executed, home, nodata):
            folder.mkdir()
        answers = right_answers(ROOT)
        for chapter in chapters:
            fill(tmp / "students" / f"{chapter}.ipynb", solved / f"{chapter}.ipynb", answers)
        plan = [(c, "stubs", tmp / "students", args.data) for c in chapters]
        plan += [(c, "solved", solved, args.data) for c in chapters]
        plan += [(c, "stubs, no data", tmp / "students", nodata) for c in chapters]
        for chapter, kind, folder, data in plan:
            out = executed / f"{kind.replace(', ', '-').replace(' ', '-')}-{chapter}.ipynb"
            result = run_copy(python, folder / f"{chapter}.ipynb", out, home, data, args.preset)
            runs.append({"chapter": chapter, "kind": kind, **result})
            print(f"{chapter:26s} {kind:15s} {result['seconds']} s, end reached: {result['reached_end']}", flush=True)
        written = folder_bytes(home)
        if args.keep:
            shutil.copytree(executed, args.keep, dirs_exist_ok=True)
        deps = dependency_bytes()
        wheel_bytes = wheel.stat().st_size
    totals = {kind: round(sum(r["seconds"] or 0 for r in runs if r["kind"] == kind), 1)
              for kind in ("stubs", "solved", "stubs, no data")}
    out = write_result("student_copies", {
        "preset": args.preset or "the default", "data": str(args.data), "data_bytes": folder_bytes(args.data),
        "runs": runs, "every_run_reached_its_end": all(r["reached_end"] for r in runs), "seconds_by_kind": totals,
        "minutes_solved": round(totals["solved"] / 60, 1),
        "wheel_bytes": wheel_bytes, "dependency_bytes": dict(sorted(deps.items(), key=lambda kv: -kv[1])),
        "dependency_gigabytes": round(sum(deps.values()) / 1e9, 2), "written_bytes": written,
        "written_megabytes": round(written / 1e6, 1),
        "load_average_before": [round(v, 2) for v in load_before], "load_average_after": [round(v, 2) for v in os.getloadavg()],
        "note": "each copy run by nbclient in a fresh virtual environment holding the students' wheel; 'written' is "
                "what the runs left in the student's home folder (caches of the runs folder, data downloads)",
    })
    print(f"-> {out}")


if __name__ == "__main__":
    main()
