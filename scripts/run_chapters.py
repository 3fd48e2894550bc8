"""Execute chapters of _toc.yml top to bottom with nbclient, each in its preset, and write what happened.

Used by scripts/gpu_session.py: the pendulum chapters run in ``smoke`` (their
models are tiny and live on the CPU), the image chapters in the preset given (``gpu`` on a GPU machine).
``--pendulum-preset gpu`` runs the pendulum chapters as a Colab reader on a GPU meets them: in the ``gpu``
preset, training on the CPU (so a CPU machine times them as well as a GPU machine does).

    python scripts/run_chapters.py OUT.json IMAGE_PRESET [--only NAME ...] [--pendulum-preset P] [--save-dir DIR]

Writes ``OUT.json``: per chapter its preset, ``passed`` or ``FAILED: ...``, its seconds and the last
lines of its printed output; exit status 0 when every chapter run passed.  The file is rewritten before and
after every chapter (the chapter being executed is ``running``, with its start time), so a job stopped at a
deadline still leaves the results of the chapters it finished and names the one it was in.  ``--only`` runs some chapters
(the dry runs); the JSON then also lists ``toc`` (every chapter of _toc.yml) so a caller can check that
the full run would cover them all.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from cnet_lib.book.toc import toc_notebooks  # noqa: E402
from cnet_lib.runtime.device import default_device, environment  # noqa: E402

PENDULUM = ("how_to_use", "pendulum_integrators", "resnet_euler")
"""The chapters whose models are the pendulum's (or none): run in ``--pendulum-preset`` (``smoke``)."""


def run_one(nb_path: Path, preset: str, save_dir: Path | None) -> dict:
    """Execute one chapter in ``preset``; its status, seconds and the tail of its printed text."""
    os.environ["CNET_PRESET"] = preset
    nb = nbformat.read(nb_path, as_version=4)
    t0 = time.perf_counter()
    try:
        NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(nb_path.parent)}}).execute()
        status = "passed"
    except Exception as err:  # a failing cell: report it, go on with the next chapter
        status = f"FAILED: {type(err).__name__}: {str(err)[-800:]}"
    seconds = time.perf_counter() - t0
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                   if o.get("output_type") == "stream")
    if status == "passed" and "❌" in text:
        status = "FAILED: an exercise check failed on its own solution"
    if save_dir is not None:
        save_dir.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, save_dir / f"{nb_path.stem}.ipynb")
    return {"preset": preset, "status": status, "seconds": round(seconds, 1), "text_tail": text[-3000:]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("image_preset")
    p.add_argument("--only", nargs="+", help="chapter names (stems) to run; default: every chapter of _toc.yml")
    p.add_argument("--pendulum-preset", default="smoke", help="the preset of the pendulum chapters (default smoke)")
    p.add_argument("--save-dir", help="also write the executed notebooks there")
    args = p.parse_args(argv)
    chapters = toc_notebooks(ROOT)
    unknown = set(args.only or ()) - {nb.stem for nb in chapters}
    if unknown:
        print(f"run_chapters: no chapter {sorted(unknown)} in _toc.yml", file=sys.stderr)
        return 2
    about = {"machine": environment(default_device()), "date": time.strftime("%Y-%m-%d")}
    presets = chapter_presets(chapters, args.image_preset, args.pendulum_preset, args.only)
    results = {}
    for nb_path in (nb for nb in chapters if nb.stem in presets):
        preset = presets[nb_path.stem]
        results[nb_path.stem] = {"preset": preset, "status": "running", "seconds": 0.0, "started_unix": time.time()}
        write_results(Path(args.out), results, chapters, about)
        results[nb_path.stem] = r = run_one(nb_path, preset, Path(args.save_dir) if args.save_dir else None)
        write_results(Path(args.out), results, chapters, about)
        print(f"{nb_path.stem:28s} preset {preset:5s} {r['seconds']:7.1f} s  {r['status']}", flush=True)
    write_results(Path(args.out), results, chapters, about)
    return 0 if all(r["status"] == "passed" for r in results.values()) else 1


def chapter_presets(chapters: list, image_preset: str, pendulum_preset: str = "smoke", only=None) -> dict:
    """``{stem: preset}`` of the chapters to run, in order: the pendulum chapters (:data:`PENDULUM`) in
    ``pendulum_preset``, the others in ``image_preset``; only those named in ``only`` when given."""
    return {nb.stem: pendulum_preset if nb.stem in PENDULUM else image_preset for nb in chapters
            if not only or nb.stem in only}


def write_results(out: Path, results: dict, chapters: list, about: dict) -> None:
    """``out`` replaced atomically by the results so far, with ``about`` (the machine, the date): a reader
    never sees half a file."""
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps({"chapters": results, "toc": [nb.stem for nb in chapters], **about}, indent=1))
    os.replace(tmp, out)


if __name__ == "__main__":
    sys.exit(main())
