"""One process at a time in a folder that several may share: a run folder, a data folder.

:func:`folder_lock` holds ``.<name>.lock`` beside the folder ``<name>`` with :mod:`filelock` (an
operating-system lock, which the system releases when its process ends, however it ends: a lock is
never left stale) and, while it holds it, writes who it is to ``.<name>.lock-holder`` beside it
(process id, host, what it does, since when), so that a second process can say what it waits for.
The folder itself holds only what its owner wrote.  Within one process the same folder may be
locked again (nested holds are counted, not blocked).

The holder record is written and read as anyone who can write the folder around may have left it
(:mod:`cnet_lib.runtime.records`): whatever is at its name (a file, a link, a named pipe) is removed, never
followed or opened, and the record created afresh; it is read without following a link or blocking, at most
4 KiB.  A link or a folder in the lock file's place (no process can hold a lock through either) is set aside,
``.<name>.lock.damaged-<time>``, with a sentence; a lock file another user owns and this one cannot write is
named with its owner and what to do.

Two notebooks, two terminals or two machines sharing a home folder thus never write one run folder
at the same time: the second one waits, with a message, and then uses what the first one left (or,
where waiting makes no sense, stops at once with :class:`FolderBusy` saying who holds the folder).
Across machines the lock holds where the shared file system supports locks (NFS with its lock
service, SMB); on one machine it always does.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

from filelock import FileLock, Timeout

from .files import FolderNotWritable, is_write_refused, process_tag, set_aside, write_problem
from .records import DamagedRecord, kind_of, load_json, write_record

__all__ = ["FolderBusy", "LockFileError", "lock_files", "folder_lock", "lock_holder"]

PathLike = Union[str, os.PathLike]

_LOCKS: dict[str, FileLock] = {}  # one FileLock per folder in this process, so nested holds are counted
_REGISTRY = threading.Lock()


class FolderBusy(RuntimeError):
    """Another process holds the folder, and this call does not wait for it."""


class LockFileError(OSError):
    """The lock file of a folder is something that cannot be a lock file (a link, a folder) and cannot be
    set aside; the message names it and says what to do."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


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
    (training rk4_refined, since 2026-11-26 10:02:11 UTC)``, or ``another process``.

    The record is read as anyone may have written it: never through a link, never blocking on a pipe, at
    most 4 KiB, its fields shortened."""
    try:
        h = load_json(lock_files(folder)[1], HOLDER_LIMIT)
        pid, _, host = str(h["process"]).partition("-")
        return f"process {pid[:12]} on host {host[:40]} ({str(h['what'])[:80]}, since {str(h['since'])[:30]})"
    except (OSError, DamagedRecord, KeyError, TypeError, IndexError):
        return "another process"


HOLDER_LIMIT = 4096
"""The size limit of a holder record (its own are under 200 bytes)."""


def _write_holder(folder: Path, what: str) -> None:
    """Write the holder record, replacing whatever is there (a link or a pipe is removed, never followed or
    opened: :func:`cnet_lib.runtime.records.write_record`); this process holds the lock, so it owns the name."""
    record = {"process": process_tag(), "what": what, "since": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    try:
        write_record(lock_files(folder)[1], json.dumps(record))
    except OSError:  # only a courtesy for whoever waits: never a reason to fail
        pass


def _owner(uid: int) -> str:
    try:
        import pwd

        return f"user {pwd.getpwuid(uid).pw_name}"
    except (ImportError, KeyError):
        return f"the user of id {uid}"


def _not_writable(folder: Path, err: OSError, fix: str) -> FolderNotWritable:
    """The sentence for a lock that cannot be created; a lock file another user owns is named as such."""
    lock = lock_files(folder)[0]
    try:
        st = os.lstat(lock)
    except OSError:
        st = None
    mine = os.geteuid() if hasattr(os, "geteuid") else None
    if st is not None and mine is not None and st.st_uid != mine and err.errno in (errno.EACCES, errno.EPERM):
        return FolderNotWritable(err.errno, (
            f"cannot lock {folder}: its lock file {lock} belongs to {_owner(st.st_uid)} and you cannot write it. Ask "
            f"them (or whoever keeps this server) to delete it or to make it writable for your group (chmod g+w; a "
            f"shared folder wants umask 002), or {fix}"))
    return FolderNotWritable(err.errno, f"cannot write to {folder} ({write_problem(err)}): {fix}")


def _set_aside_lock_file(folder: Path, say: Callable[[str], None]) -> bool:
    """When ``folder``'s lock file is a link or a folder (no process can hold a lock through either), rename it
    ``<name>.damaged-<time>`` and say so; True when that was done.  One that cannot be renamed raises
    :class:`LockFileError`; anything else is left alone (False)."""
    lock = lock_files(folder)[0]
    try:
        mode = os.lstat(lock).st_mode
    except OSError:
        return False
    if not (stat.S_ISLNK(mode) or stat.S_ISDIR(mode)):
        return False
    try:
        aside = set_aside(lock)
    except OSError as err:
        raise LockFileError(err.errno, (
            f"cannot lock {folder}: its lock file {lock} is {kind_of(mode)}, not a lock file, and cannot be moved "
            f"aside ({write_problem(err)}); ask whoever can write {lock.parent} to delete it, then run again")
        ) from None
    say(f"{lock} was {kind_of(mode)}, not a lock file (someone who can write {lock.parent} put it there): it was "
        f"moved to {aside.name}, never followed, and {folder} is locked with a new lock file.")
    return True


def _acquire(lock: FileLock, folder: Path, what: str, wait: bool, say: Callable[[str], None]) -> None:
    """Take ``lock``: at once when free; else wait for it (saying for whom) or raise :class:`FolderBusy`.  A link
    or a folder in the lock file's place is set aside first (:func:`_set_aside_lock_file`)."""
    try:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise
        except OSError:
            if not _set_aside_lock_file(folder, say):
                raise
            lock.acquire(timeout=0)
    except Timeout:
        holder = lock_holder(folder)
        if not wait:
            raise FolderBusy(f"{folder} is in use by {holder}") from None
        say(f"{folder} is in use by {holder}; waiting for it to finish before {what} (Ctrl-C stops waiting).")
        started = time.monotonic()
        lock.acquire()
        say(f"{folder} is free after {time.monotonic() - started:.0f} s; {what} now.")


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
    permission, a read-only file system, another user's lock file): ``required`` raises
    :class:`FolderNotWritable`, whose message ends with ``fix`` (what to do); otherwise the block runs
    without the lock and the context yields ``False`` (reading a folder nobody can write needs no lock).
    A link or a folder in the lock file's place is set aside first (said through ``say``); one that cannot
    be raises :class:`LockFileError`.
    """
    folder = Path(folder)
    say = say or _say
    lock = None
    try:
        lock_files(folder)[0].parent.mkdir(parents=True, exist_ok=True)
        lock = _lock_for(folder)
        nested = lock.is_locked
        _acquire(lock, folder, what, wait, say)
    except LockFileError:
        raise
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
