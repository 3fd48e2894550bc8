"""``python -m cnet_lib`` for tests/test_distributed.py, started by torchrun as a script, with every epoch save
logged: before the command runs, the training loop's ``save_epoch`` is wrapped so that each call appends
``"<RANK> <epoch>"`` to the file ``$CNET_TEST_WRITES``; the save itself is unchanged.

    torchrun --standalone --nproc_per_node=2 tests/ddp_probe.py -- train --preset smoke --run rk4_refined ...
"""
from __future__ import annotations

import os
import sys

from cnet_lib.__main__ import main
from cnet_lib.images.training import train_loop

_save_epoch = train_loop.save_epoch


def _logged_save(out, cfg, model, state, gen, env):
    with open(os.environ["CNET_TEST_WRITES"], "a", encoding="utf-8") as f:
        f.write(f"{os.environ.get('RANK', '0')} {state.history[-1]['epoch']}\n")
    return _save_epoch(out, cfg, model, state, gen, env)


if __name__ == "__main__":
    train_loop.save_epoch = _logged_save
    sys.exit(main())
