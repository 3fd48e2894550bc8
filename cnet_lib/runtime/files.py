"""Files that several processes and users share: who wrote a temporary file, a private temporary
folder, damaged files set aside (never deleted), and a failed write said in words.

* :func:`process_tag` names this process (``<pid>-<host>``); temporary files carry it, so a clean-up
  can tell its own leftovers and those of a process that has ended from another's unfinished file
  (:func:`written_by_a_gone_process`).
* :func:`private_temp_dir` is a folder under the system's temporary directory that only this user
  can write (``<tmp>/cnet_lib-<uid>``, mode 0700): one another user planted is never used.
* :func:`set_aside` renames a damaged file to ``<name>.damaged-<time>``, next to where it was (a checkpoint of
  another run: ``<name>.other-config-<time>``).
* :func:`write_problem` says why a write failed (a full disk, no permission, a read-only file
  system) and :class:`FolderNotWritable` is the error for a folder that refuses writes;
  :func:`check_writable` makes a folder and checks it takes files, :func:`check_creatable` checks that it
  could be made and written while making nothing.
* :func:`shown_path` is a path as messages show it: ``~/...`` under the home folder, ``<tmp>/...`` under
  the system's temporary directory (a built book never shows the machine it was built on).

Also here: one process at a time in a folder that several may share (:func:`folder_lock`).
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import socket
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

from filelock import FileLock, Timeout

from .records import DamagedRecord, kind_of, load_json, write_record

__all__ = ["FolderNotWritable", "NO_SPACE", "REFUSED", "write_problem", "is_write_refused", "check_writable",
           "check_creatable", "process_tag", "written_by_a_gone_process", "set_aside", "private_temp_dir",
           "shown_path", "FolderBusy", "LockFileError", "lock_files", "folder_lock", "lock_holder"]


PathLike = Union[str, os.PathLike]

NO_SPACE = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})
"""errno values of a full disk (or an exhausted quota)."""
REFUSED = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
"""errno values of a folder that refuses writes (permissions, read-only file system)."""


class FolderNotWritable(OSError):
    """A folder this process must write to (a lock, a checkpoint, a cache) refuses writes; the
    message (``FolderNotWritable(errno, message)``) names the folder and says what to do."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


def write_problem(err: OSError) -> str:
    """Why a write failed, in words: ``"the disk is full"``, ``"no permission to write there"``,
    ``"the file system is read-only"``, else the system's own words."""
    if err.errno in NO_SPACE:
        return "the disk is full"
    if err.errno == errno.EROFS:
        return "the file system is read-only"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "no permission to write there"
    return err.strerror or str(err)


def is_write_refused(err: BaseException) -> bool:
    """Whether ``err`` is a write refused by permissions or a read-only file system."""
    return isinstance(err, OSError) and err.errno in REFUSED


def check_writable(folder: PathLike, fix: str = "choose a folder you can write to") -> Path:
    """Create ``folder`` if needed and make sure a file can be created in it (a probe file, removed
    at once); a folder that refuses writes raises :class:`FolderNotWritable` naming it, why, and
    ``fix`` (what to do).  Returns the folder."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _probe(folder)
    except OSError as err:
        if not is_write_refused(err):
            raise
        raise FolderNotWritable(err.errno, f"cannot write to {folder} ({write_problem(err)}): {fix}") from None
    return folder


def _probe(folder: Path) -> None:
    """Create a file in ``folder`` and remove it at once (raises the :class:`OSError` of a refused write)."""
    fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-probe-")
    os.close(fd)
    os.unlink(probe)


def check_creatable(folder: PathLike, fix: str = "choose a folder you can write to") -> None:
    """Make sure ``folder`` can be written, or made, while creating nothing: a probe file is created and removed
    at once in ``folder`` when it exists, else in the nearest folder above it that exists.  A folder that refuses
    writes raises :class:`FolderNotWritable` naming ``folder``, why, and ``fix``; anything else in the way (a file
    where a folder should be) is left for the write itself to say.  What fails here has made no folder and
    left no file (:func:`check_writable` makes the folder)."""
    folder = Path(folder)
    here = folder.absolute()
    while not os.path.lexists(here) and here.parent != here:
        here = here.parent
    if not here.is_dir():
        return
    try:
        _probe(here)
    except OSError as err:
        if not is_write_refused(err):
            raise
        raise FolderNotWritable(err.errno, f"cannot write to {folder} ({write_problem(err)}): {fix}") from None


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", socket.gethostname())[:40] or "host"


def process_tag() -> str:
    """``<pid>-<host>`` of this process (host reduced to letters, digits and ``_``)."""
    return f"{os.getpid()}-{_host()}"


def _pid_alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill(pid, 0) would signal the process there: never judged gone
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: another user's live process
        return True
    return True


def written_by_a_gone_process(tag: str) -> bool:
    """Whether the process of a :func:`process_tag` is this one, or has ended on this host.  A tag
    of another host, or one that cannot be read, is never judged gone (its file is left alone)."""
    pid, _, host = tag.partition("-")
    if not pid.isdigit() or host != _host():
        return False
    return int(pid) == os.getpid() or not _pid_alive(int(pid))


def set_aside(path: PathLike, why: str = "damaged") -> Path:
    """Rename ``path`` to ``<name>.<why>-<YYYYmmdd-HHMMSS>`` beside it (``why``: ``damaged`` by default;
    ``-2``, ``-3``, ... when that name is taken); returns the new path.  Nothing is deleted, and a link is
    renamed, never followed."""
    path = Path(path)
    base = path.with_name(f"{path.name}.{why}-{time.strftime('%Y%m%d-%H%M%S')}")
    aside, k = base, 1
    while os.path.lexists(aside):
        k += 1
        aside = base.with_name(f"{base.name}-{k}")
    path.rename(aside)
    return aside


def _is_private(folder: Path) -> bool:
    """A real folder (not a link) owned by this user that no one else can write."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def private_temp_dir(name: str = "cnet_lib") -> Path:
    """A folder only this user can write, under the system's temporary directory.

    ``<tmp>/<name>-<uid>``, created with mode 0700.  An existing folder of that name is used only
    when it is a real folder owned by this user and writable by no one else; otherwise (another
    user created it first, or it is a link) a fresh folder is made with :func:`tempfile.mkdtemp`,
    so nothing another user could write is ever read.  Where the system has no user ids (Windows),
    the temporary directory is already the user's own: ``<tmp>/<name>``.
    """
    tmp = Path(tempfile.gettempdir())
    if not hasattr(os, "getuid"):
        folder = tmp / name
        folder.mkdir(exist_ok=True)
        return folder
    folder = tmp / f"{name}-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    if _is_private(folder):
        return folder
    return Path(tempfile.mkdtemp(prefix=f"{name}-{os.getuid()}-"))


def shown_path(path: PathLike) -> str:
    """``path`` as a message shows it: ``~/...`` when it lies under the home folder, ``<tmp>/...`` under
    the system's temporary directory (``tempfile.gettempdir()``), else unchanged.  Messages printed in a
    chapter end up in the published book; this keeps the builder's folders out of it."""
    p = Path(path)
    for root, name in ((Path(tempfile.gettempdir()), "<tmp>"), (Path.home(), "~")):
        try:
            rest = p.resolve().relative_to(root.resolve()) if p.is_absolute() else None
        except (ValueError, OSError, RuntimeError):
            continue
        if rest is not None:
            return name if str(rest) == "." else f"{name}/{rest.as_posix()}"
    return str(path)


# One process at a time in a folder that several may share: a run folder, a data folder.
#
# :func:`folder_lock` holds ``.<name>.lock`` beside the folder ``<name>`` with :mod:`filelock` (an
# operating-system lock, which the system releases when its process ends, however it ends: a lock is
# never left stale) and, while it holds it, writes who it is to ``.<name>.lock-holder`` beside it
# (process id, host, what it does, since when), so that a second process can say what it waits for.
# The folder itself holds only what its owner wrote.  Within one process the same folder may be
# locked again (nested holds are counted, not blocked).
#
# The holder record is written and read as anyone who can write the folder around may have left it
# (:mod:`cnet_lib.runtime.records`): whatever is at its name (a file, a link, a named pipe) is removed, never
# followed or opened, and the record created afresh; it is read without following a link or blocking, at most
# 4 KiB.  A link or a folder in the lock file's place (no process can hold a lock through either) is set aside,
# ``.<name>.lock.damaged-<time>``, with a sentence; a lock file another user owns and this one cannot write is
# named with its owner and what to do.
#
# Two notebooks, two terminals or two machines sharing a home folder thus never write one run folder
# at the same time: the second one waits, with a message, and then uses what the first one left (or,
# where waiting makes no sense, stops at once with :class:`FolderBusy` saying who holds the folder).
# Across machines the lock holds where the shared file system supports locks (NFS with its lock
# service, SMB); on one machine it always does.

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
