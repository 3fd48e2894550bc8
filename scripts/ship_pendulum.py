"""Ship a preset's pendulum study with the book: every ODE-Net of the study trained at once (on the device
measured faster here) and saved as ``cnet_lib/shipped/pendulum/<preset>-<hash>.pt``, in the format of a reader's
own (:mod:`cnet_lib.pendulum.trained_models`: keyed on the whole frozen config, so a changed preset never loads a
stale study; tests/test_pendulum_batched.py fails until the preset's study is shipped again).  An older file of
the same preset is removed.

    python scripts/ship_pendulum.py gpu      # about half a minute on 2 CPU cores

The chapters load the shipped study in that preset (``use_shipped=True``, the default of
``pendulum.train_models``), so that a reader of the ``gpu`` preset without a GPU does not train it on the CPU.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from cnet_lib import pendulum  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("preset", choices=["smoke", "cpu", "gpu", "paper"])
    args = p.parse_args(argv)
    cfg = pendulum.config_for(args.preset)
    configs = pendulum.study_configs(cfg)
    t0 = time.perf_counter()
    fits = pendulum.obtain_study(cfg, configs, use_shipped=False)
    key = pendulum.study_key(cfg, [(f.scheme, f.dt_data, f.n_iters) for f in fits])
    out = pendulum.SHIPPED_PENDULUM / f"{cfg.name}-{pendulum.study_hash(key)}.pt"
    for old in pendulum.SHIPPED_PENDULUM.glob(f"{cfg.name}-*.pt"):
        if old != out:
            old.unlink()
            print(f"removed the older {old.name}")
    pendulum.save_study(out, key, fits)
    print(f"{len(fits)} ODE-Nets of the '{cfg.name}' preset trained on {fits[0].device} in "
          f"{time.perf_counter() - t0:.1f} s, shipped as {out.relative_to(ROOT)} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
