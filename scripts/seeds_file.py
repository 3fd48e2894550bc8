"""Write a preset's seeds file from runs trained on this machine: every training seed's sweeps of the preset's
main runs and control runs (the 2 x 2 of integrator x refinement), beside the shipped seed-0 models.

    CNET_DATA_DIR=../shared/data-large python scripts/seeds_file.py cpu --seeds 0 1 2 --root RUNS
    CNET_DATA_DIR=../shared/data-large python -m cnet_lib ship cpu --restudy   # the manifests list the new file

Seed 0 is the models that ship (``cnet ship cpu`` and ``cnet ship cpu --controls``); every other seed must be
finished in ``--root`` (``trained_runs(settings, runs=[...], use_shipped=False, seed=k)``): this script trains
nothing, and stops with a sentence naming what is missing.  The GPU session writes the ``gpu`` preset's file itself
(``scripts/gpu_session.sh``); this is the same file (:mod:`cnet_lib.images.studies.seed_cached`) for a preset trained
on a CPU, without the robustness study per seed (``"robustness": null``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from cnet_lib.images import CONTROLS, image_runs, seed_record, sweep_runs, trained_runs  # noqa: E402
from cnet_lib.images.runs.run_folders import is_finished  # noqa: E402
from cnet_lib.images.runs.run_store import run_configs  # noqa: E402
from cnet_lib.images.runs.shipped import SHIPPED, shipped_run  # noqa: E402
from cnet_lib.images.studies.seed_cached import SEEDS_FILE, write_seeds_file  # noqa: E402
from cnet_lib.runtime.device import environment  # noqa: E402
from cnet_lib.runtime.settings import Settings  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("preset", choices=["smoke", "cpu", "gpu", "paper"])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--root", required=True, help="the runs folder the other seeds were trained in")
    p.add_argument("--dest", default=str(SHIPPED), help="the shipped folders (default: the package's)")
    args = p.parse_args(argv)
    settings = Settings.from_environment(preset=args.preset, runs_dir=args.root, device="cpu")
    names = list(image_runs(args.preset)) + list(CONTROLS)
    records = []
    for seed in sorted(set(args.seeds)):
        cfgs = run_configs(settings, verbose=False, overrides={"seed": seed}, controls=True)
        missing = [n for n in names if (shipped_run(cfgs[n]) is None if seed == 0
                                        else not is_finished(Path(cfgs[n].out_dir), cfgs[n]))]
        if missing:
            todo = (f"do not ship; ship them first (cnet ship {args.preset} [--controls])" if seed == 0 else
                    f"are not finished in {args.root}; train them first (trained_runs(settings, runs=[...], "
                    "use_shipped=False, seed=...))")
            print(f"seed {seed}: {', '.join(missing)} {todo}: no seeds file written")
            return 1
        runs = trained_runs(settings, runs=names, use_shipped=seed == 0, verbose=False, seed=seed)
        records.append(seed_record(runs, sweep_runs(runs, verbose=True)))
        print(f"seed {seed}: " + ", ".join(f"{n} {100 * r.final_accuracy:.2f}%" for n, r in runs.items()))
    out = write_seeds_file(Path(args.dest) / f"{args.preset}-{names[0]}" / SEEDS_FILE, records, args.preset,
                           environment("cpu"))
    print(f"wrote {out}: seeds {[r['seed'] for r in records]}; now run `python -m cnet_lib ship {args.preset} "
          "--restudy` so that the manifest lists it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
