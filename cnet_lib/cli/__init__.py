"""The command lines, the top layer: ``python -m cnet_lib <command> ...`` (:mod:`cnet_lib.__main__`).

One module per command, ``cnet_lib/cli/<command>.py``, each with the same conventions: a one-line
``SUMMARY``, ``main(argv=None) -> int`` built on argparse, the environment's settings read once
(:meth:`cnet_lib.runtime.settings.Settings.from_environment`) and overridden by the options, a fault said
in one line ``error: ...`` with exit status 1 (2 for a wrong option), and 130 after Ctrl-C.
:data:`COMMANDS` names them; adding a command is adding its module here.  The teacher's commands (``student``,
``grade``, ``answers``) need :mod:`cnet_lib.teacher`, which a student's install does not carry: there they
are not listed.
"""
from __future__ import annotations

from types import ModuleType

from . import book_plan, notebook_tools, pack, robustness, ship, sweep, train

try:  # the teacher's commands: a student's wheel (python -m cnet_lib student) has neither them nor cnet_lib.teacher
    from . import answers, grade, student
except ModuleNotFoundError as err:
    if not (err.name or "").startswith(("cnet_lib.teacher", "cnet_lib.cli.")):
        raise
    answers = grade = student = None

__all__ = ["COMMANDS", "TEACHER_COMMANDS"]

TEACHER_COMMANDS = ("student", "grade", "answers")
COMMANDS: dict[str, ModuleType] = {m.__name__.rsplit(".", 1)[1]: m
                                   for m in (train, sweep, robustness, ship, book_plan, pack, student, grade,
                                             answers, notebook_tools) if m is not None}
"""Command name -> its module (with ``SUMMARY`` and ``main``), in the order ``python -m cnet_lib`` lists them."""
