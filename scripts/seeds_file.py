"""Write a preset's seeds file: every training seed's numbers for the preset's main runs and control runs (the 2 x 2
of integrator x refinement), beside the shipped seed-0 models.

    cnet ship gpu --device cuda --weights float16 --data-description "..."      # seed 0's main runs, shipped
    cnet ship gpu --controls --device cuda --weights float16 --data-description "..."
    python scripts/seeds_file.py gpu --seeds 0 1 2 --root RUNS --device cuda --train --studies
    python -m cnet_lib ship gpu --restudy --device cuda                         # the manifests list the new file

Seed 0 is the models that ship (``cnet ship``); every other seed is read from ``--root``, where
``trained_runs(settings, runs=[...], use_shipped=False, seed=k)`` trains it.  Without ``--train`` this script
trains nothing and stops with a sentence naming what is missing; with it, it trains (or resumes, epoch by epoch)
what is missing, so a stopped command continues where it stopped when run again.  ``--studies`` adds each seed's
robustness and adaptive-step studies of the main runs (``"robustness": null`` without them), which the book's
claims over seeds read.  The file is :mod:`cnet_lib.studies.runner`'s.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from cnet_lib.images import CONTROLS, image_runs, trained_runs  # noqa: E402
from cnet_lib.images.runs.image_presets import is_finished  # noqa: E402
from cnet_lib.images.runs.run_store import run_configs  # noqa: E402
from cnet_lib.images.runs.shipped import SHIPPED, shipped_run  # noqa: E402
from cnet_lib.studies.runner import SEEDS_FILE, seed_record, write_seeds_file  # noqa: E402
from cnet_lib.runtime.device import environment  # noqa: E402
from cnet_lib.runtime.settings import Settings  # noqa: E402
from cnet_lib.studies import adaptive, manifestation, robustness  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("preset", choices=["smoke", "cpu", "gpu", "paper"])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--root", required=True, help="the runs folder the other seeds are trained in")
    p.add_argument("--dest", default=str(SHIPPED), help="the shipped folders (default: the package's)")
    p.add_argument("--device", default="cpu", help="e.g. cpu, cuda")
    p.add_argument("--train", action="store_true", help="train (or resume) the seeds that are not finished in --root")
    p.add_argument("--studies", action="store_true", help="each seed's robustness and adaptive-step studies too")
    args = p.parse_args(argv)
    settings = Settings.from_environment(preset=args.preset, runs_dir=args.root, device=args.device)
    main_runs = list(image_runs(args.preset))
    names = main_runs + list(CONTROLS)
    records = []
    for seed in sorted(set(args.seeds)):
        cfgs = run_configs(settings, verbose=False, overrides={"seed": seed}, controls=True)
        missing = [n for n in names if (shipped_run(cfgs[n]) is None if seed == 0
                                        else not args.train and not is_finished(Path(cfgs[n].out_dir), cfgs[n]))]
        if missing:
            todo = (f"do not ship; ship them first (cnet ship {args.preset} [--controls])" if seed == 0 else
                    f"are not finished in {args.root}; train them first (--train)")
            print(f"seed {seed}: {', '.join(missing)} {todo}: no seeds file written")
            return 1
        runs = trained_runs(settings, runs=names, use_shipped=seed == 0, verbose=args.train, seed=seed)
        main = {n: runs[n] for n in main_runs}
        record = seed_record(runs, manifestation.run(runs, verbose=True), robustness.run(main) if args.studies else None,
                             adaptive.seeds_record(adaptive.run(main)) if args.studies else None)
        records.append(record)
        print(f"seed {seed}: " + ", ".join(f"{n} {100 * r.final_accuracy:.2f}%" for n, r in runs.items()))
    out = write_seeds_file(Path(args.dest) / f"{args.preset}-{names[0]}" / SEEDS_FILE, records, args.preset,
                           environment(args.device))
    print(f"wrote {out}: seeds {[r['seed'] for r in records]}; now run `python -m cnet_lib ship {args.preset} "
          "--restudy` so that the manifest lists it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
