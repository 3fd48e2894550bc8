"""A submission's files read as data, whatever they are: nothing in them runs, nothing blocks, nothing is followed.

* :func:`read_regular` opens a file without following a symbolic link and without blocking (a FIFO, a socket or
  a device is refused, not read), and reads at most a cap;
* :func:`notebooks_in` gives the notebooks of one ``.ipynb`` file or of every ``.ipynb`` in a ``.zip`` (read from
  memory: an encrypted entry, an unknown compression method, damaged or truncated data is that entry's problem);
* :func:`read_notebook_data` turns a notebook's bytes into plain data the grader can rely on: a ``metadata``
  dict and a list of cells, each ``{"cell_type": str, "source": str}`` (a source given as a list of strings is
  joined; one of any other type, or text that is not Unicode, is replaced and said).

Every fault is a sentence in ``problems`` (the student's flag), never an exception that stops the run.
"""
from __future__ import annotations

import errno
import io
import json
import os
import stat
import zipfile
import zlib
from pathlib import Path

__all__ = ["MAX_NOTEBOOK_BYTES", "MAX_ZIP_BYTES", "MAX_NOTEBOOKS_IN_ZIP", "read_regular", "notebooks_in",
           "read_notebook_data", "file_kind"]

MAX_NOTEBOOK_BYTES = 50 * 2**20
MAX_ZIP_BYTES = 100 * 2**20
MAX_NOTEBOOKS_IN_ZIP = 40
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"))


def file_kind(mode: int) -> str:
    """What a file of ``mode`` is, in words (``"a regular file"``, ``"a FIFO"``, ...)."""
    return next((words for test, words in _KINDS if test(mode)), "a regular file" if stat.S_ISREG(mode) else "a special file")


def read_regular(path: Path, cap: int) -> bytes:
    """The bytes of the regular file ``path`` (at most ``cap``); ValueError saying why for anything else (a link,
    a FIFO, a device, a file over the cap)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise ValueError("is a symbolic link: refused (hand in the file itself)") from None
        raise ValueError(f"cannot be opened ({os.strerror(err.errno) if err.errno else err})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"is {file_kind(mode)}, not a file: refused")
        chunks, size = [], 0
        while size <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > cap:
            raise ValueError(f"is larger than {cap // 2**20} MB: not read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _text(value, where: str, problems: list) -> str:
    """A cell's source as text: a string, or a list of strings joined; anything else is said and left empty;
    text that is not Unicode (a lone surrogate) has it replaced."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = "".join(value)
    if not isinstance(value, str):
        problems.append(f"{where}: its source is not text ({type(value).__name__}): read as empty")
        return ""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        problems.append(f"{where}: holds text that is not Unicode (a lone surrogate): replaced")
        value = value.encode("utf-8", errors="replace").decode("utf-8")
    return value


def read_notebook_data(data: bytes, where: str, problems: list = None) -> dict:
    """A notebook from its bytes as plain data (see the module doc), or ValueError saying what is wrong;
    ``problems`` gets what was repaired."""
    problems = [] if problems is None else problems
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"{where} is larger than {MAX_NOTEBOOK_BYTES // 2**20} MB")
    try:
        nb = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError, MemoryError) as err:
        raise ValueError(f"{where} is not a notebook ({type(err).__name__})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError(f"{where} is not a notebook (no list of cells)")
    metadata = nb.get("metadata")
    if not isinstance(metadata, dict):
        if metadata is not None:
            problems.append(f"{where}: its metadata are not a mapping ({type(metadata).__name__}): ignored")
        metadata = {}
    cells = []
    for i, cell in enumerate(nb["cells"]):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            problems.append(f"{where}: cell {i + 1} is not a cell: ignored")
            continue
        cells.append({"cell_type": cell["cell_type"], "source": _text(cell.get("source", ""), f"{where}: cell {i + 1}", problems)})
    return {"metadata": metadata, "cells": cells}


def _zip_fault(err: Exception) -> str:
    text = str(err).lower()
    if isinstance(err, RuntimeError) and ("encrypt" in text or "password" in text):
        return "is encrypted: hand in a zip without a password"
    if isinstance(err, NotImplementedError):
        return "is compressed with a method the grader does not read: zip it again with the usual (deflate)"
    if isinstance(err, (zlib.error, EOFError, zipfile.BadZipFile, OSError)):
        return f"is damaged ({str(err) or type(err).__name__}): zip it again"
    return f"could not be read ({type(err).__name__}: {err})"


def _zip_notebooks(path: Path, problems: list) -> list[tuple[str, dict]]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(read_regular(path, MAX_ZIP_BYTES)))
    except ValueError as err:
        problems.append(f"{path.name} {err}")
        return []
    except Exception as err:  # noqa: BLE001 - any archive the zip reader refuses, however it refuses
        problems.append(f"{path.name} {_zip_fault(err)}")
        return []
    out = []
    with zf:
        for info in zf.infolist():
            name = info.filename
            if not name.endswith(".ipynb") or name.startswith("__MACOSX") or "/." in "/" + name:
                continue
            if len(out) >= MAX_NOTEBOOKS_IN_ZIP:
                problems.append(f"{path.name}: more than {MAX_NOTEBOOKS_IN_ZIP} notebooks; the rest not read")
                break
            where = f"{path.name}:{name}"
            if info.file_size > MAX_NOTEBOOK_BYTES:
                problems.append(f"{where} is larger than {MAX_NOTEBOOK_BYTES // 2**20} MB: not read")
                continue
            try:
                out.append((where, read_notebook_data(zf.read(info), where, problems)))
            except ValueError as err:
                problems.append(str(err))
            except Exception as err:  # noqa: BLE001 - an entry the zip reader cannot decompress, however it fails
                problems.append(f"{where} {_zip_fault(err)}")
    return out


def notebooks_in(path: Path, problems: list) -> list[tuple[str, dict]]:
    """``(where, notebook)`` of an ``.ipynb`` file or of every ``.ipynb`` inside a ``.zip`` (see the module doc);
    what cannot be read goes to ``problems``."""
    if path.name.endswith(".zip"):
        return _zip_notebooks(path, problems)
    try:
        return [(path.name, read_notebook_data(read_regular(path, MAX_NOTEBOOK_BYTES), path.name, problems))]
    except ValueError as err:
        text = str(err)
        problems.append(text if text.startswith(path.name) else f"{path.name} {text}")
    return []
