"""Small records in folders that others may write: read without following a link, blocking or exhausting
memory, and written without following a link.

A runs folder shared on a teaching server can hold whatever anyone who can write it put there: a symbolic
link where a record is expected (a write through it would overwrite the link's target), a named pipe (an
ordinary open blocks on it forever), a device, a file of gigabytes, or JSON nested so deeply that parsing it
exhausts Python's recursion limit.  So:

* :func:`read_record` opens with ``O_NOFOLLOW | O_NONBLOCK`` (a link is refused, a pipe or a device never
  blocks), checks with ``fstat`` that it holds a regular file of at most ``limit`` bytes, and reads that much
  (:func:`open_regular` opens a file so, for a caller that copies it);
* :func:`load_json` parses it, and a file nested too deeply (``RecursionError``), too large for the memory
  left (``MemoryError``), cut off or not JSON raises :class:`DamagedRecord`, whose message says which, in words;
* :func:`write_record` replaces whatever is at the path (a file, a link, a pipe: unlinked, never opened) by a
  new file created with ``O_CREAT | O_EXCL | O_NOFOLLOW``, so a link planted between the two steps makes the
  write fail instead of following it.
"""
from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any, Union

__all__ = ["DamagedRecord", "RECORD_LIMIT", "kind_of", "open_regular", "read_record", "load_json", "write_record"]

PathLike = Union[str, os.PathLike]
RECORD_LIMIT = 64 << 20
"""The default size limit of a record (64 MiB): the largest cache the studies write is well under 1 MB."""

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISLNK, "a symbolic link"),
          (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))


class DamagedRecord(ValueError):
    """A record that cannot be used; the message says why in words, without the path (the caller names it)."""


def kind_of(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words: ``"a file"``, ``"a folder"``, ``"a symbolic link"``, ..."""
    for test, words in _KINDS:
        if test(mode):
            return words
    return "a file" if stat.S_ISREG(mode) else "not a regular file"


def _size_words(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB" if n >= 1 << 20 else f"{n} bytes"


def open_regular(path: PathLike) -> int:
    """A read-only file descriptor of the regular file ``path`` (the caller closes it), opened without following
    a link or blocking.  A link, a folder, a pipe or a device at ``path`` raises :class:`DamagedRecord` (nothing
    is read through it); a missing file :class:`FileNotFoundError`, any other failure its :class:`OSError`."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except OSError as err:
        if err.errno == errno.ELOOP or (err.errno in (errno.EISDIR, errno.ENXIO) and os.path.lexists(path)):
            kind = kind_of(os.lstat(path).st_mode)
            raise DamagedRecord(f"it is {kind}, not a file (nothing was read through it)") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise DamagedRecord(f"it is {kind_of(mode)}, not a file (nothing was read from it)")
    return fd


def read_record(path: PathLike, limit: int = RECORD_LIMIT) -> bytes:
    """The bytes of the regular file ``path``, read without following a link or blocking (:func:`open_regular`).

    A link, a folder, a pipe or a device at ``path``, or a file over ``limit`` bytes, raises
    :class:`DamagedRecord`; a missing file raises :class:`FileNotFoundError`, and any other failure to open
    or read it its :class:`OSError`."""
    fd = open_regular(path)
    try:
        st = os.fstat(fd)
        if st.st_size > limit:
            raise DamagedRecord(f"it holds {_size_words(st.st_size)}, more than such a file ever does (at most "
                                f"{_size_words(limit)})")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:  # it grew while being read
            raise DamagedRecord(f"it grew past {_size_words(limit)} while being read")
        return data
    finally:
        os.close(fd)


def load_json(path: PathLike, limit: int = RECORD_LIMIT) -> Any:
    """The JSON value in the file ``path`` (:func:`read_record`, then parsed).  A file that is not a regular
    file, too large, not UTF-8, cut off or not JSON, nested too deeply, or too large for the memory left raises
    :class:`DamagedRecord` saying which; a missing file :class:`FileNotFoundError`."""
    data = read_record(path, limit)
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise DamagedRecord("it is nested too deeply to be read (no file of this library is)") from None
    except MemoryError:
        raise DamagedRecord(f"it could not be read in the memory left ({_size_words(len(data))})") from None
    except UnicodeDecodeError:
        raise DamagedRecord("it is not text (not UTF-8)") from None
    except ValueError as err:
        raise DamagedRecord(f"it is cut off or not JSON ({str(err)[:80]})") from None


def write_record(path: PathLike, text: str, mode: int = 0o644) -> None:
    """Write ``text`` to a new file at ``path``: whatever was there (a file, a link, a pipe) is unlinked, never
    opened, and the file is created with ``O_CREAT | O_EXCL | O_NOFOLLOW``.  Raises :class:`OSError` when
    that cannot be done (a folder in the way, no permission, something created there meanwhile)."""
    path = Path(path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(text.encode("utf-8"))
