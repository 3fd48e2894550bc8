"""The command lines, the top layer: ``python -m cnet_lib <command> ...`` (:mod:`cnet_lib.__main__`).

One module per command, ``cnet_lib/cli/<command>.py``, each with the same conventions: a one-line
``SUMMARY``, ``main(argv=None) -> int`` built on argparse, the environment's settings read once
(:meth:`cnet_lib.runtime.settings.Settings.from_environment`) and overridden by the options, a fault said
in one line ``error: ...`` with exit status 1 (2 for a wrong option), and 130 after Ctrl-C.
:data:`COMMANDS` names them; adding a command is adding its module here.
"""
from __future__ import annotations

from types import ModuleType

from . import book_plan, notebook_tools, robustness, ship, student, sweep, train

__all__ = ["COMMANDS"]

COMMANDS: dict[str, ModuleType] = {m.__name__.rsplit(".", 1)[1]: m
                                   for m in (train, sweep, robustness, ship, book_plan, student, notebook_tools)}
"""Command name -> its module (with ``SUMMARY`` and ``main``), in the order ``python -m cnet_lib`` lists them."""
