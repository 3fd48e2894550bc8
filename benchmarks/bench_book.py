"""How long a fresh book build takes, per chapter: what the chapter cards and ``scripts/book.sh`` promise.

Builds the whole book with ``jupyter-book build . -W --keep-going`` into a fresh temporary folder (no
execution cache) with an empty runs folder (so the ``cpu`` preset loads the models that ship with the
book, as a fresh clone does, and the ``smoke`` preset trains its tiny ones), times the build, and reads
each chapter's execution time from the build's log (myst-nb's "Executed notebook in X seconds").  Writes
``benchmarks/results/bench_book-<preset>.json`` with the machine.  The ``cpu`` numbers are what
``cnet_lib.book.measurements.book_builds`` and ``cnet_lib.book.measurements.expected_build`` read
(``tests/test_chapter_cards.py`` checks the cards against this file).

    python benchmarks/bench_book.py cpu --data-dir ../shared/data-large    # ~3 min on 2 idle cores
    python benchmarks/bench_book.py smoke --data-dir ../shared/data        # ~1.5 min
    python benchmarks/bench_book.py gpu --name gpu_chapters                # on a GPU machine: the cards' GPU times
    cnet notebook_tools fix                                 # the chapters' cards read the new file

Run it on an otherwise idle machine: a book build shares the cores with nothing else then (the JSON records
the load average before and after).  ``--skip CHAPTER`` builds a chapter without executing it (its card then
says "not measured"; e.g. a chapter whose ``cpu`` study does not ship yet and would be computed for many
minutes); ``--keep DIR`` keeps the built HTML for ``python tests/book_browser.py DIR``.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import write_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = re.compile(r"book/(\w+)\.ipynb: Executed notebook in ([\d.]+) seconds")


def chapter_seconds(log: str) -> dict:
    """``{chapter: seconds}`` from a jupyter-book build log."""
    return {name: round(float(s), 1) for name, s in EXECUTED.findall(log)}


def _config_skipping(chapters: list, tmp: Path) -> Path:
    """A copy of ``_config.yml`` whose execution leaves out ``chapters`` (by notebook name)."""
    import yaml

    cfg = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    cfg.setdefault("execute", {})["exclude_patterns"] = [f"*{name}.ipynb" for name in chapters]
    ext = cfg.get("sphinx", {}).get("local_extensions") or {}
    for name, folder in ext.items():  # read relative to the config file: make them absolute
        ext[name] = str(ROOT / folder)
    out = tmp / "_config.yml"
    out.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("preset", choices=["smoke", "cpu", "gpu", "paper"])
    p.add_argument("--data-dir", help="CNET_DATA_DIR for the build (the folder holding cifar-10-batches-py)")
    p.add_argument("--keep", metavar="DIR", help="copy the built HTML to DIR (e.g. for tests/book_browser.py)")
    p.add_argument("--name", help="the results file's name (default bench_book-<preset>; gpu_chapters: the times the "
                                  "chapter cards quote for a GPU, measured on one)")
    p.add_argument("--skip", metavar="CHAPTER", nargs="*", default=[],
                   help="chapters built without executing them (their times are then not measured)")
    args = p.parse_args(argv)
    exe = Path(sys.executable).with_name("jupyter-book")
    with tempfile.TemporaryDirectory(prefix="bench-book-") as tmp:
        env = dict(os.environ, CNET_PRESET=args.preset, CNET_RUNS_DIR=str(Path(tmp) / "runs"), OMP_WAIT_POLICY="PASSIVE")
        if args.data_dir:
            env["CNET_DATA_DIR"] = str(Path(args.data_dir).resolve())
        load_before = os.getloadavg()[0]
        t0 = time.perf_counter()
        cmd = [str(exe), "build", str(ROOT), "-W", "--keep-going", "--path-output", str(Path(tmp) / "out")]
        if args.skip:
            cmd += ["--config", str(_config_skipping(args.skip, Path(tmp)))]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        if args.keep and proc.returncode == 0:
            shutil.copytree(Path(tmp) / "out" / "_build" / "html", args.keep, dirs_exist_ok=True)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        print(log[-4000:], file=sys.stderr)
        print(f"error: the build failed (exit status {proc.returncode})", file=sys.stderr)
        return 1
    chapters = chapter_seconds(log)
    out = write_result(args.name or f"bench_book-{args.preset}", {
        "preset": args.preset, "build_seconds": round(seconds, 1), "chapter_seconds": chapters,
        "data_dir": args.data_dir, "runs_dir": "fresh (empty)",
        "load_average_1min": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}, "command": "jupyter-book build . -W --keep-going",
        "not_executed": args.skip})
    print(f"{args.preset}: built in {seconds:.0f} s; chapters: {chapters}\n-> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
