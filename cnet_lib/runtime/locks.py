"""One process at a time in a folder that several may share: a run folder, a data folder.

:func:`folder_lock` holds ``.<name>.lock`` beside the folder ``<name>`` with :mod:`filelock` (an
operating-system lock, which the system releases when its process ends, however it ends: a lock is
never left stale) and, while it holds it, writes who it is to ``.<name>.lock-holder`` beside it
(process id, host, what it does, since when), so that a second process can say what it waits for.
The folder itself holds only what its owner wrote.  Within one process the same folder may be
locked again (nested holds are counted, not blocked).

Two notebooks, two terminals or two machines sharing a home folder thus never write one run folder
at the same time: the second one waits, with a message, and then uses what the first one left (or,
where waiting makes no sense, stops at once with :class:`FolderBusy` saying who holds the folder).
Across machines the lock holds where the shared file system supports locks (NFS with its lock
service, SMB); on one machine it always does.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

from filelock import FileLock, Timeout

from .files import FolderNotWritable, is_write_refused, process_tag, write_problem

__all__ = ["FolderBusy", "lock_files", "folder_lock", "lock_holder"]

PathLike = Union[str, os.PathLike]

_LOCKS: dict[str, FileLock] = {}  # one FileLock per folder in this process, so nested holds are counted
_REGISTRY = threading.Lock()


class FolderBusy(RuntimeError):
    """Another process holds the folder, and this call does not wait for it."""


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def lock_files(folder: PathLike) -> tuple[Path, Path]:
    """``(lock file, holder file)`` of ``folder``: ``.<name>.lock`` and ``.<name>.lock-holder`` beside it
    (inside it for a file-system root, which has no name)."""
    folder = Path(folder).resolve()
    if not folder.name:
        return folder / ".lock", folder / ".lock-holder"
    return folder.parent / f".{folder.name}.lock", folder.parent / f".{folder.name}.lock-holder"


def _lock_for(folder: Path) -> FileLock:
    key = str(lock_files(folder)[0])
    with _REGISTRY:
        if key not in _LOCKS:
            _LOCKS[key] = FileLock(key)
        return _LOCKS[key]


def lock_holder(folder: PathLike) -> str:
    """Who holds ``folder``'s lock, in words (from its holder file): ``process 123 on host lab_7
    (training rk4_refined, since 2026-11-26 10:02:11 UTC)``, or ``another process``."""
    try:
        h = json.loads(lock_files(folder)[1].read_text())
        pid, _, host = str(h["process"]).partition("-")
        return f"process {pid} on host {host} ({h['what']}, since {h['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


def _write_holder(folder: Path, what: str) -> None:
    record = {"process": process_tag(), "what": what, "since": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    try:
        lock_files(folder)[1].write_text(json.dumps(record))
    except OSError:  # only a courtesy for whoever waits: never a reason to fail
        pass


def _not_writable(folder: Path, err: OSError, fix: str) -> FolderNotWritable:
    return FolderNotWritable(err.errno, f"cannot write to {folder} ({write_problem(err)}): {fix}")


@contextlib.contextmanager
def folder_lock(folder: PathLike, what: str, *, wait: bool = True, required: bool = True,
                say: Optional[Callable[[str], None]] = None,
                fix: str = "choose a folder you can write to") -> Iterator[bool]:
    """Hold ``folder``'s lock for the ``with`` block; yields whether it is held.

    The folder that holds the lock files (``folder``'s parent) is created when missing; ``folder``
    itself is not.  When another process holds the lock: with ``wait`` (the default) ``say``
    (default: a line on stderr) tells who holds it and what this process waits to do (``what``),
    and the call blocks until the lock is free (Ctrl-C stops waiting); without ``wait`` a
    :class:`FolderBusy` error says who holds it.  When the lock file cannot be created (no
    permission, a read-only file system): ``required`` raises :class:`FolderNotWritable`, whose
    message ends with ``fix`` (what to do); otherwise the block runs without the lock and the
    context yields ``False`` (reading a folder nobody can write needs no lock).
    """
    folder = Path(folder)
    say = say or _say
    lock = None
    try:
        lock_files(folder)[0].parent.mkdir(parents=True, exist_ok=True)
        lock = _lock_for(folder)
        nested = lock.is_locked
        try:
            lock.acquire(timeout=0)
        except Timeout:
            holder = lock_holder(folder)
            if not wait:
                raise FolderBusy(f"{folder} is in use by {holder}") from None
            say(f"{folder} is in use by {holder}; waiting for it to finish before {what} (Ctrl-C stops waiting).")
            started = time.monotonic()
            lock.acquire()
            say(f"{folder} is free after {time.monotonic() - started:.0f} s; {what} now.")
    except OSError as err:
        if not is_write_refused(err):
            raise
        if required:
            raise _not_writable(folder, err, fix) from None
        lock = None
    if lock is None:  # the lock cannot be created here, and it is not required
        yield False
        return
    if not nested:
        _write_holder(folder, what)
    try:
        yield True
    finally:
        if not nested:
            try:
                lock_files(folder)[1].unlink()
            except OSError:
                pass
        lock.release()
