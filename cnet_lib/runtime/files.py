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
"""
from __future__ import annotations

import errno
import os
import re
import socket
import stat
import tempfile
import time
from pathlib import Path
from typing import Union

__all__ = ["FolderNotWritable", "NO_SPACE", "REFUSED", "write_problem", "is_write_refused", "check_writable",
           "check_creatable", "process_tag", "written_by_a_gone_process", "set_aside", "private_temp_dir", "shown_path"]

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
