"""``python -m cnet_lib <command> [options]``: every command line of the library (:mod:`cnet_lib.cli`).

``python -m cnet_lib`` (or ``--help``) lists the commands, one line each; ``python -m cnet_lib <command>
--help`` shows a command's options.  Under ``torchrun`` put ``--`` before the command
(``torchrun --nproc_per_node=8 -m cnet_lib -- train --preset paper --run rk4_refined``): torchrun reads
every option it can match by prefix, and ``--run`` is one of its own (``--run-path``).
"""
from __future__ import annotations

import sys
from typing import Optional, Sequence

from .cli import COMMANDS

__all__ = ["main", "usage"]


def usage() -> str:
    """The list of commands, one line each."""
    width = max(map(len, COMMANDS))
    lines = ["usage: python -m cnet_lib <command> [options]   (python -m cnet_lib <command> --help for its options)",
             "", "commands:"]
    lines += [f"  {name:{width}s}  {module.SUMMARY}" for name, module in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command named by the first argument with the rest; returns its exit status (the list of
    commands and 0 without one or with ``--help``; 2 for an unknown one)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:  # torchrun ... -m cnet_lib -- train --run ...: "--" keeps torchrun from reading --run
        args = args[1:]
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"error: unknown command {name!r}; the commands are {', '.join(COMMANDS)}\n\n{usage()}", file=sys.stderr)
        return 2
    return COMMANDS[name].main(rest)


if __name__ == "__main__":
    sys.exit(main())
