"""Run the planned manifestation factorial (``analysis_plan.md``), resumably, then write its record:

    python -m cnet_lib.studies.manifestation_factorial --root RUNS --data-dir DATA [--hours H] [--record FILE]

``DATA`` contains ``cifar-10-batches-py`` with the 45,000 + 5,000 split of the plan.  Interrupt it at any time and
run the same command again: finished runs are kept, a run in progress continues from its last epoch.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from . import collect, train_and_evaluate

__all__ = ["main"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m cnet_lib.studies.manifestation_factorial", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", required=True, help="the folder that keeps the runs")
    p.add_argument("--data-dir", required=True, help="the folder that contains cifar-10-batches-py")
    p.add_argument("--threads", type=int, default=1, help="CPU threads per run (default 1)")
    p.add_argument("--hours", type=float, default=None, help="start no new run after this many hours")
    p.add_argument("--record", default=None, help="write the study's record (all evaluated runs) to this file")
    args = p.parse_args(argv)
    deadline = time.time() + 3600 * args.hours if args.hours else None
    train_and_evaluate(args.root, args.data_dir, threads=args.threads, deadline=deadline)
    if args.record:
        Path(args.record).write_text(json.dumps(collect(args.root), indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
