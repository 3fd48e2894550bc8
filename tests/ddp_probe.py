"""``python -m cnet_lib`` for tests/test_distributed.py, started by torchrun as a script, with every epoch save
logged: before the command runs, the training loop's ``save_epoch`` is wrapped so that each call appends
``"<RANK> <epoch>"`` to the file ``$CNET_TEST_WRITES``; the save itself is unchanged.

    torchrun --standalone --nproc_per_node=2 tests/ddp_probe.py -- train --preset smoke --run rk4_refined ...

With ``$CNET_TEST_RACE`` (a folder) it also makes a damaged ``results.json`` race as badly as it can: a rank that
finds the file damaged (``train_state.results_problem``) waits until every other rank has found it damaged too,
or has gone past resuming without reading it (``train_loop.start_or_resume`` returned), so that ranks which would
both act on the damage act together; each call of ``set_aside`` on it appends ``"<RANK> set aside"``, and each
rank's final weights ``"<RANK> weights <SHA-256 of its state>"`` (:func:`cnet_lib.runtime.distributed.state_digest`).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from cnet_lib.images.training import train_loop, train_state
from cnet_lib.runtime.distributed import state_digest
from cnet_lib.__main__ import main

_save_epoch = train_loop.save_epoch
_results_problem = train_state.results_problem
_set_aside = train_state.set_aside
_start_or_resume = train_loop.start_or_resume
_train = train_loop._train
RANK = os.environ.get("RANK", "0")


def _log(line: str) -> None:
    with open(os.environ["CNET_TEST_WRITES"], "a", encoding="utf-8") as f:
        f.write(f"{RANK} {line}\n")


def _logged_save(out, cfg, model, state, gen, env):
    _log(str(state.history[-1]["epoch"]))
    return _save_epoch(out, cfg, model, state, gen, env)


def _race_dir() -> Path:
    return Path(os.environ["CNET_TEST_RACE"])


def _read_together(folder):
    found = _results_problem(folder)
    if found[1] is not None:  # damaged: wait for every other rank to read it too, or to have resumed without it
        (_race_dir() / f"read-{RANK}").touch()
        others = [r for r in range(int(os.environ["WORLD_SIZE"])) if str(r) != RANK]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(
                (_race_dir() / f"read-{r}").exists() or (_race_dir() / f"resumed-{r}").exists() for r in others):
            time.sleep(0.02)
    return found


def _logged_set_aside(path, *args):
    _log("set aside")
    return _set_aside(path, *args)


def _marked_resume(*args, **kwargs):
    state = _start_or_resume(*args, **kwargs)
    (_race_dir() / f"resumed-{RANK}").touch()
    return state


def _logged_train(*args, **kwargs):
    result = _train(*args, **kwargs)
    _log(f"weights {state_digest(result.model)}")
    return result


if __name__ == "__main__":
    train_loop.save_epoch = _logged_save
    if os.environ.get("CNET_TEST_RACE"):
        train_state.results_problem = _read_together
        train_state.set_aside = _logged_set_aside
        train_loop.start_or_resume = _marked_resume
        train_loop._train = _logged_train
    sys.exit(main())
