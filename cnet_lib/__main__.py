"""``cnet <command> [options]`` (the console script) or ``python -m cnet_lib <command> [options]``: every command
line of the library (:mod:`cnet_lib.cli`), as argparse sub-commands.

``cnet`` (or ``--help``) lists the commands, one line each; ``cnet <command> --help`` shows a command's options.
Every command's faults and Ctrl-C are said the same way (:func:`cnet_lib.cli.command_line.handled`).  Under
``torchrun`` put ``--`` before the command (``torchrun --nproc_per_node=8 -m cnet_lib -- train --preset paper
--run rk4_refined``): torchrun reads every option it can match by prefix, and ``--run`` is one of its own
(``--run-path``).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

from .cli import COMMANDS
from .cli.command_line import add_command_arguments, handled

__all__ = ["main", "usage", "program"]


def _prog() -> str:
    return "cnet" if os.path.basename(sys.argv[0] or "") == "cnet" else "python -m cnet_lib"


def usage() -> str:
    """The list of commands, one line each."""
    width = max(map(len, COMMANDS))
    lines = [f"usage: {_prog()} <command> [options]   ({_prog()} <command> --help for its options)", "", "commands:"]
    lines += [f"  {name:{width}s}  {module.SUMMARY}" for name, module in COMMANDS.items()]
    return "\n".join(lines)


def program() -> argparse.ArgumentParser:
    """The parser: one sub-command per command of :data:`cnet_lib.cli.COMMANDS`, with its options."""
    parser = argparse.ArgumentParser(prog=_prog(), description="ContinuousNet: the book's command lines.")
    commands = parser.add_subparsers(dest="command", metavar="<command>")
    for name, module in COMMANDS.items():
        if hasattr(module, "run"):
            add_command_arguments(commands.add_parser(name, help=module.SUMMARY, description=module.SUMMARY + "."),
                                  module)
        else:  # a command that still parses its own options: listed here, run by main(argv)
            commands.add_parser(name, help=module.SUMMARY, add_help=False)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command named by the first argument with the rest; returns its exit status (the list of
    commands and 0 without one or with ``--help``; 2 for an unknown command or a wrong option)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--"]:  # torchrun ... -m cnet_lib -- train --run ...: "--" keeps torchrun from reading --run
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if argv[0] not in COMMANDS:
        print(f"error: unknown command {argv[0]!r}; the commands are {', '.join(COMMANDS)}\n\n{usage()}", file=sys.stderr)
        return 2
    module = COMMANDS[argv[0]]
    if not hasattr(module, "run"):
        return module.main(argv[1:])
    try:
        args = program().parse_args(argv)
    except SystemExit as done:  # a command's --help (0), a wrong option (2)
        return int(done.code or 0)
    args.argv = argv[1:]  # as given, for a command that records its own line
    try:
        return handled(module, args, args.command_parser)
    except SystemExit as done:  # a combination of options that does not go together (2)
        return int(done.code or 0)


if __name__ == "__main__":
    sys.exit(main())
