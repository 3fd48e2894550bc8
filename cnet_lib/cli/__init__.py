"""The command lines, the top layer: ``cnet <command> ...`` or ``python -m cnet_lib <command> ...``
(:mod:`cnet_lib.__main__`: argparse sub-commands).

One module per command, ``cnet_lib/cli/<command>.py``, each with the same conventions
(:mod:`.command_line`, the one module here that is no command): a one-line ``SUMMARY``, its options
(``add_arguments``), ``run(args) -> int`` that raises on a fault, ``INTERRUPTED`` (what Ctrl-C leaves behind), and
``main(argv=None) -> int`` that runs it alone; the environment's settings are read once
(:meth:`cnet_lib.runtime.settings.Settings.from_environment`) and overridden by the options.  One handler
(:func:`.command_line.handled`) says a fault in one line ``error: ...`` with exit status 1 (2 for a wrong
option), and 130 after Ctrl-C.  (``grade`` still parses and handles its own; it takes the convention once the
grader's isolation, issue 29, has landed.)  :data:`COMMANDS` names them; adding a command is adding its module
here.  The teacher's commands (``student``,
``grade``, ``answers``) need :mod:`cnet_lib.teacher`, which a student's install does not carry: there they
are not listed.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from . import book_plan, notebook_tools, pack, robustness, ship, sweep, train

__all__ = ["COMMANDS", "TEACHER_COMMANDS"]

TEACHER_COMMANDS = ("student", "grade", "answers")


def _teacher_commands() -> list[ModuleType]:
    """The teacher's command modules, or none in a student's wheel (``python -m cnet_lib student``), which has
    neither them nor :mod:`cnet_lib.teacher`.  (``importlib`` rather than ``from . import``: a missing submodule
    then raises ModuleNotFoundError naming it, not an ImportError that reads like a circular import.)"""
    try:
        return [importlib.import_module(f"{__name__}.{name}") for name in TEACHER_COMMANDS]
    except ModuleNotFoundError as err:
        if not (err.name or "").startswith(("cnet_lib.teacher", f"{__name__}.")):
            raise
        return []


COMMANDS: dict[str, ModuleType] = {m.__name__.rsplit(".", 1)[1]: m
                                   for m in (train, sweep, robustness, ship, book_plan, pack, *_teacher_commands(),
                                             notebook_tools)}
"""Command name -> its module (with ``SUMMARY`` and ``main``), in the order ``python -m cnet_lib`` lists them."""
