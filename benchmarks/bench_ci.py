"""CI as the CI runner meets it: ``bash .ci/run`` on a clean clone of a commit, timed, one row appended to
``benchmarks/results/ci.json`` (the book's *Measurements* page shows the rows).

    python benchmarks/bench_ci.py [--commit HEAD] [--note "what changed"] [--dry-run]

The clone is made in a fresh temporary folder (``git clone`` of this repository, then ``git checkout`` of the
commit), beside a link to this checkout's ``../shared`` (the offline data, where the CI runner has it), so
nothing of this working tree but its committed history is used: its set-up builds a fresh ``.venv``
as the runner's does.  Recorded: the wall seconds of the whole ``.ci/run``, pytest's own seconds and its counts
(read from pytest's last line, "N passed, K skipped ... in S s"), the machine's 1-minute load before and after,
and the exit status; the whole output goes to ``<tmp>/cnet-ci-<commit>.log``.  A failed run is recorded too (its ``failed`` count says so) and makes the exit status 1.
``--dry-run`` runs ``bash .ci/run --collect-only -q`` (the set-up, then no test runs) and writes to ``--out``
instead of the results file.  Each row names its machine (cores, architecture, AVX-512 or not): the rows come
from more than one machine.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cnet_lib.runtime.checkpoint import atomic_write_text

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "ci.json"
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|deselected|xfailed|xpassed|tests? collected)")
_SECONDS = re.compile(r" in ([\d.]+)s")


def pytest_summary(text: str) -> dict:
    """pytest's counts and seconds from its last summary line in ``text`` ("== 3 passed, 1 skipped in 4.20s ==");
    counts it does not print are ``0``, seconds ``None`` when no summary line is there."""
    lines = [ln for ln in text.splitlines() if _SECONDS.search(ln) and _COUNT.search(ln)]
    out = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0, "pytest_seconds": None}
    if not lines:
        return out
    last = lines[-1]
    for n, word in _COUNT.findall(last):
        key = "errors" if word.startswith("error") else word
        if key in out:
            out[key] = int(n)
    out["pytest_seconds"] = round(float(_SECONDS.search(last).group(1)))
    return out


def machine_words() -> str:
    """This machine as a reader names it: 'a 2-core x86_64 CPU (AVX-512, no GPU)'."""
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    vector = "AVX-512" if " avx512f" in flags else "AVX2, no AVX-512" if " avx2" in flags else "no AVX2"
    return f"a {os.cpu_count()}-core {os.uname().machine} CPU ({vector}, no GPU)"


def run_ci(commit: str, dry_run: bool) -> tuple[dict, str]:
    """Clone this repository at ``commit`` into a fresh folder and run ``bash .ci/run`` there."""
    sha = subprocess.run(["git", "rev-parse", "--short", commit], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="cnet-ci-") as tmp:
        clone = Path(tmp) / "clone"
        if (ROOT.parent / "shared").is_dir():  # the runner's checkout has the offline data at ../shared: so does this
            (Path(tmp) / "shared").symlink_to(ROOT.parent / "shared")
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "checkout", "-q", sha], cwd=clone, check=True)
        load_before = os.getloadavg()[0]
        t0 = time.monotonic()
        proc = subprocess.run(["bash", ".ci/run", *(["--collect-only", "-q"] if dry_run else [])], cwd=clone,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wall = time.monotonic() - t0
    row = {"commit": sha, "date": datetime.date.today().isoformat(), "machine": machine_words(), "wall_seconds": round(wall),
           **pytest_summary(proc.stdout), "exit_status": proc.returncode,
           "load": f"{load_before:.2f} before, {os.getloadavg()[0]:.2f} after (1-minute load average)"}
    return row, proc.stdout


def append_row(path: Path, row: dict) -> None:
    """Append ``row`` to the ``runs`` of the results file at ``path``, written atomically."""
    data = json.loads(path.read_text())
    data["runs"].append(row)
    atomic_write_text(path, json.dumps(data, indent=1) + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--commit", default="HEAD")
    p.add_argument("--note", default="")
    p.add_argument("--dry-run", action="store_true", help="collect the tests only, write to --out")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if args.dry_run and args.out == RESULTS:
        p.error("--dry-run writes to the file --out names, never to benchmarks/results/ci.json")
    row, text = run_ci(args.commit, args.dry_run)
    row["note"] = args.note
    log = Path(tempfile.gettempdir()) / f"cnet-ci-{row['commit']}.log"  # the whole output, for the failures
    log.write_text(text)
    if not args.out.is_file():
        args.out.write_text(json.dumps({"benchmark": "ci", "runs": []}))
    append_row(args.out, row)
    print("\n".join(ln for ln in text.splitlines() if ln.startswith(("FAILED ", "ERROR "))))
    print(text[-1500:])
    print(f"the whole output: {log}")
    print(json.dumps(row, indent=1))
    return 0 if row["exit_status"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
