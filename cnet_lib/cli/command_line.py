"""What every command shares: its parser, and the one handler of faults and Ctrl-C (:func:`handled`).

A command module (``cnet_lib/cli/<command>.py``) holds a one-line ``SUMMARY``, ``add_arguments(parser)``,
``run(args) -> int`` and ``INTERRUPTED`` (what a Ctrl-C leaves behind and how to go on; a command whose message
depends on its options defines ``interrupted(args)`` instead).  ``run`` raises; :func:`handled` words what it
raises, the same way for every command:

* a fault of the input, the files, the data or the machine (:data:`FAULTS`, and a command's own ``FAULTS``):
  ``error: <the message>`` on one line, exit status 1;
* a wrong combination of options (:class:`UsageError`): argparse's usage and message, exit status 2;
* Ctrl-C: the command's ``INTERRUPTED`` sentence, exit status 130.

``cnet <command>`` and ``python -m cnet_lib <command>`` (:mod:`cnet_lib.__main__`) reach the commands as
argparse sub-commands; each command's ``main(argv)`` (:func:`command_main`) runs it alone, as the tests do.
"""
from __future__ import annotations

import argparse
import sys
from types import ModuleType
from typing import Optional, Sequence

__all__ = ["FAULTS", "UsageError", "command_name", "add_command_arguments", "handled", "command_main"]

FAULTS = (ValueError, TypeError, RuntimeError, OSError, MemoryError)
"""What a command says in one line: bad input, a busy, damaged or unwritable folder, a full disk, damaged data,
running out of memory (each library error derives from one of these, or is listed in the command's ``FAULTS``)."""


class UsageError(Exception):
    """Options that do not go together: said as argparse says a wrong option (usage, then the message; status 2)."""


def command_name(module: ModuleType) -> str:
    """The command's name: its module's (``cnet_lib.cli.train`` -> ``train``)."""
    return module.__name__.rsplit(".", 1)[1]


def add_command_arguments(parser: argparse.ArgumentParser, module: ModuleType) -> argparse.ArgumentParser:
    """``parser`` with the command's options (its ``add_arguments``), and the command and parser it runs with."""
    module.add_arguments(parser)
    parser.set_defaults(command_module=module, command_parser=parser)
    return parser


def _interrupted(module: ModuleType, args: argparse.Namespace) -> str:
    if hasattr(module, "interrupted"):
        return module.interrupted(args)
    return module.INTERRUPTED


def handled(module: ModuleType, args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run ``module.run(args)`` and word what it raises (see the module docstring); returns the exit status."""
    try:
        return module.run(args)
    except UsageError as err:
        parser.error(str(err))  # prints the usage and the message, exits with status 2
    except FAULTS + tuple(getattr(module, "FAULTS", ())) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"\n{_interrupted(module, args)}", file=sys.stderr)
        return 130


def command_main(module: ModuleType, argv: Optional[Sequence[str]] = None) -> int:
    """The command alone, as ``python -m cnet_lib <command> ...`` runs it: parse ``argv`` (default: the
    process's arguments), run, return the exit status (a wrong option exits with status 2, as argparse does)."""
    parser = argparse.ArgumentParser(prog=f"python -m cnet_lib {command_name(module)}",
                                     description=module.SUMMARY + ".")
    add_command_arguments(parser, module)
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as given, for a command that records its own line
    return handled(module, args, parser)
