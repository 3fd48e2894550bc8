"""A submission's files read as data, whatever they are, in a process of their own: nothing in them runs, nothing
blocks, nothing is followed, and nothing one student hands in can exhaust the grading process.

The grading process never parses a student's file itself.  :func:`read_files` starts this file as a program
(``python -I submission_files.py``, the standard library only) for one student's files; the program caps its own
address space (:data:`READ_MEMORY`), reads the files and writes each notebook it read as one JSON line, then the
problems; the grading process reads those lines up to a size cap and stops the program at its deadline
(:data:`READ_SECONDS`).  A program that runs out of time or memory, or dies however it dies, costs that student
what it had not read yet and a sentence, never the run (issue 56: a zip of 0.45 MB, a million non-cells in each of
its 40 notebooks, stopped the whole class's grading).

What the program reads, and how much:

* :func:`read_regular` opens a file without following a symbolic link and without blocking (a FIFO, a socket or
  a device is refused, not read), and reads at most a cap;
* :func:`notebooks_in` gives the notebooks of one ``.ipynb`` file or of every ``.ipynb`` in a ``.zip`` (read from
  memory: an encrypted entry, an unknown compression method, damaged or truncated data is that entry's problem),
  each with the time it was saved (the zip entry's time stamp, else the file's modification time);
* :func:`read_notebook_data` turns a notebook's bytes into plain data the grader can rely on: a ``metadata``
  dict holding at most the student copy's chapter, and the notebook's code cells, each ``{"cell_type": "code",
  "source": str}`` (a source given as a list of strings is joined; one of any other type, or text that is not
  Unicode, is replaced and said), at most :data:`MAX_CELLS` of them;
* at most :data:`MAX_READ_BYTES` of notebooks per submission, :data:`MAX_NOTEBOOK_PROBLEMS` sentences per
  notebook and :data:`MAX_PROBLEMS` per submission: the rest is counted in one sentence.

Every fault is a sentence in ``problems`` (the student's flag), never an exception that stops the run.
"""
from __future__ import annotations

import errno
import io
import json
import os
import select
import stat
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path
from typing import Optional

__all__ = ["MAX_NOTEBOOK_BYTES", "MAX_ZIP_BYTES", "MAX_NOTEBOOKS_IN_ZIP", "MAX_CELLS", "MAX_READ_BYTES",
           "MAX_NOTEBOOK_PROBLEMS", "MAX_PROBLEMS", "READ_SECONDS", "READ_MEMORY", "read_regular", "notebooks_in",
           "read_notebook_data", "read_submission", "read_files", "bounded_problems", "file_kind"]

MAX_NOTEBOOK_BYTES = 50 * 2**20
MAX_ZIP_BYTES = 100 * 2**20
MAX_NOTEBOOKS_IN_ZIP = 40
MAX_CELLS = 1000
"""Cells of one notebook the grader reads (the book's chapters have under 40)."""
MAX_READ_BYTES = 200 * 2**20
"""Bytes of notebooks (unzipped) read for one submission (the book's eight chapters: 0.2 MB without outputs)."""
MAX_NOTEBOOK_PROBLEMS = 10
MAX_PROBLEMS = 30
READ_SECONDS = 30.0
"""Seconds one submission's reading may take, its files here and its cells in the grading process together."""
READ_MEMORY = 2 * 2**30
"""Bytes of address space of the program that reads one submission's files."""
MAX_LINES_BYTES = 64 * 2**20
"""What the grading process reads of that program's output."""
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"))


def file_kind(mode: int) -> str:
    """What a file of ``mode`` is, in words (``"a regular file"``, ``"a FIFO"``, ...)."""
    return next((words for test, words in _KINDS if test(mode)), "a regular file" if stat.S_ISREG(mode) else "a special file")


def bounded_problems(problems: list, cap: int = MAX_PROBLEMS, where: str = "") -> list:
    """``problems`` with at most ``cap`` sentences, the rest counted in one more."""
    if len(problems) <= cap:
        return list(problems)
    return list(problems[:cap]) + [f"{where + ': ' if where else ''}and {len(problems) - cap:,} more problems like "
                                   "these (not listed)"]


class _Budget:
    """Bytes of notebooks one submission may still read (:data:`MAX_READ_BYTES`)."""

    def __init__(self, total: int = MAX_READ_BYTES):
        self.left = total

    def take(self, n: int, where: str, problems: list) -> bool:
        if n > self.left:
            problems.append(f"{where}: not read: the submission's notebooks hold more than "
                            f"{MAX_READ_BYTES // 2**20} MB (look at it)")
            return False
        self.left -= n
        return True


def read_regular(path: Path, cap: int) -> tuple[bytes, float]:
    """The bytes of the regular file ``path`` (at most ``cap``) and its modification time; ValueError saying why
    for anything else (a link, a FIFO, a device, a file over the cap)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise ValueError("is a symbolic link: refused (hand in the file itself)") from None
        raise ValueError(f"cannot be opened ({os.strerror(err.errno) if err.errno else err})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"is {file_kind(info.st_mode)}, not a file: refused")
        chunks, size = [], 0
        while size <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > cap:
            raise ValueError(f"is larger than {cap // 2**20} MB: not read")
        return b"".join(chunks), info.st_mtime
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


def _metadata(metadata, where: str, problems: list) -> dict:
    """What the grader reads of a notebook's metadata: the student copy's chapter, if it says one."""
    if not isinstance(metadata, dict):
        if metadata is not None:
            problems.append(f"{where}: its metadata are not a mapping ({type(metadata).__name__}): ignored")
        return {}
    copy = metadata.get("cnet_student_copy")
    if isinstance(copy, dict) and isinstance(copy.get("chapter"), str) and len(copy["chapter"]) < 200:
        return {"cnet_student_copy": {"chapter": copy["chapter"]}}
    return {}


def read_notebook_data(data: bytes, where: str, problems: list = None) -> dict:
    """A notebook from its bytes as plain data (see the module doc), or ValueError saying what is wrong;
    ``problems`` gets what was repaired or left out (at most :data:`MAX_NOTEBOOK_PROBLEMS` sentences)."""
    own: list = []
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"{where} is larger than {MAX_NOTEBOOK_BYTES // 2**20} MB")
    try:
        nb = json.loads(data.decode("utf-8"))
    except MemoryError:
        raise ValueError(f"{where} needs more memory to read than the grader gives a submission") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ValueError(f"{where} is not a notebook ({type(err).__name__})") from None
    del data
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError(f"{where} is not a notebook (no list of cells)")
    metadata = _metadata(nb.get("metadata"), where, own)
    cells, items = [], nb["cells"]
    if len(items) > MAX_CELLS:
        own.append(f"{where}: holds {len(items):,} cells; only the first {MAX_CELLS:,} read (look at it)")
    for i, cell in enumerate(items[:MAX_CELLS]):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            own.append(f"{where}: cell {i + 1} is not a cell: ignored")
        elif cell["cell_type"] == "code":
            cells.append({"cell_type": "code", "source": _text(cell.get("source", ""), f"{where}: cell {i + 1}", own)})
    if problems is not None:
        problems += bounded_problems(own, MAX_NOTEBOOK_PROBLEMS, where)
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


def _entry_time(info: zipfile.ZipInfo, fallback: float) -> float:
    try:
        return time.mktime((*info.date_time, 0, 0, -1))
    except (OverflowError, ValueError):
        return fallback


def _zip_notebooks(path: Path, problems: list, budget: _Budget):
    try:
        data, mtime = read_regular(path, MAX_ZIP_BYTES)
        zf = zipfile.ZipFile(io.BytesIO(data))
    except ValueError as err:
        problems.append(f"{path.name} {err}")
        return
    except Exception as err:  # noqa: BLE001 - any archive the zip reader refuses, however it refuses
        problems.append(f"{path.name} {_zip_fault(err)}")
        return
    n = 0
    with zf:
        for info in zf.infolist():
            name = info.filename
            if not name.endswith(".ipynb") or name.startswith("__MACOSX") or "/." in "/" + name:
                continue
            if n >= MAX_NOTEBOOKS_IN_ZIP:
                problems.append(f"{path.name}: more than {MAX_NOTEBOOKS_IN_ZIP} notebooks; the rest not read")
                break
            n += 1
            where = f"{path.name}:{name}"
            if info.file_size > MAX_NOTEBOOK_BYTES:
                problems.append(f"{where} is larger than {MAX_NOTEBOOK_BYTES // 2**20} MB: not read")
                continue
            if budget.left <= 0:
                budget.take(1, where, problems)
                break
            try:
                with zf.open(info) as entry:
                    raw = entry.read(MAX_NOTEBOOK_BYTES + 1)  # the size the entry claims is not trusted
                if not budget.take(len(raw), where, problems):
                    break
                yield where, read_notebook_data(raw, where, problems), _entry_time(info, mtime)
            except ValueError as err:
                problems.append(str(err))
            except MemoryError:
                problems.append(f"{where} needs more memory to read than the grader gives a submission")
            except Exception as err:  # noqa: BLE001 - an entry the zip reader cannot decompress, however it fails
                problems.append(f"{where} {_zip_fault(err)}")


def notebooks_in(path: Path, problems: list, budget: Optional[_Budget] = None):
    """``(where, notebook, saved)`` of an ``.ipynb`` file or of every ``.ipynb`` inside a ``.zip`` (see the module
    doc), one at a time; what cannot be read goes to ``problems``."""
    budget = _Budget() if budget is None else budget
    if path.name.endswith(".zip"):
        yield from _zip_notebooks(path, problems, budget)
        return
    try:
        data, mtime = read_regular(path, MAX_NOTEBOOK_BYTES)
        if budget.take(len(data), path.name, problems):
            yield path.name, read_notebook_data(data, path.name, problems), mtime
    except ValueError as err:
        text = str(err)
        problems.append(text if text.startswith(path.name) else f"{path.name} {text}")
    except MemoryError:
        problems.append(f"{path.name} needs more memory to read than the grader gives a submission")


def read_submission(paths: list, out=None) -> tuple[list, list]:
    """The notebooks of one submission's ``paths`` as ``[where, notebook, saved]`` and its problems (at most
    :data:`MAX_PROBLEMS`); with ``out`` (a binary stream), each notebook is also written to it as one JSON line as
    soon as it is read, then ``{"problems": [...]}``."""
    notebooks, problems, budget = [], [], _Budget()
    for path in paths:
        for found in notebooks_in(Path(path), problems, budget):
            if out is not None:
                out.write(json.dumps({"notebook": found}).encode() + b"\n")
                out.flush()
            else:
                notebooks.append(list(found))
    problems = bounded_problems(problems)
    if out is not None:
        out.write(json.dumps({"problems": problems}).encode() + b"\n")
        out.flush()
    return notebooks, problems


def _limit_memory(limit: int) -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass


def main() -> int:
    """The reading program: ``{"paths": [...], "memory": bytes}`` on its standard input."""
    request = json.loads(sys.stdin.read())
    _limit_memory(int(request.get("memory", READ_MEMORY)))
    read_submission(request["paths"], sys.stdout.buffer)
    return 0


def read_files(paths: list, seconds: float = READ_SECONDS, memory: int = READ_MEMORY) -> tuple[list, list, float]:
    """``(notebooks, problems, seconds spent)`` of one submission's ``paths``, read by the reading program (see the
    module doc) within ``seconds`` and ``memory``: what it could not read by then is a sentence in ``problems``."""
    if not paths:
        return [], [], 0.0
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-I", "-S", __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        proc.stdin.write(json.dumps({"paths": [str(p) for p in paths], "memory": memory}).encode())
        proc.stdin.close()
    except OSError:
        pass
    data, why = _read_bounded(proc, started + seconds, seconds)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    notebooks, problems, done = [], [], False
    for line in data.split(b"\n"):
        try:
            item = json.loads(line) if line else None
        except ValueError:
            item = None
        if isinstance(item, dict) and "notebook" in item:
            notebooks.append(item["notebook"])
        elif isinstance(item, dict) and "problems" in item:
            problems, done = item["problems"], True
    if not done:
        names = ", ".join(Path(p).name for p in paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        how = why or (f"it needed more than {memory / 2**30:g} GiB of memory" if proc.returncode else "it stopped")
        problems.append(f"reading {names} stopped after {len(notebooks)} notebook(s): {how}; the rest not read "
                        "(look at them)")
    return notebooks, problems, time.monotonic() - started


def _read_bounded(proc: subprocess.Popen, deadline: float, seconds: float) -> tuple[bytes, str]:
    """What ``proc`` writes until it ends, its deadline or :data:`MAX_LINES_BYTES` (and why it was cut, if it was)."""
    chunks, size, fd = [], 0, proc.stdout.fileno()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), f"reading took over {seconds:g} s"
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if not ready:
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks), ""
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_LINES_BYTES:
            return b"".join(chunks), f"the code in them is larger than the grader reads ({MAX_LINES_BYTES // 2**20} MB)"


if __name__ == "__main__":
    sys.exit(main())
