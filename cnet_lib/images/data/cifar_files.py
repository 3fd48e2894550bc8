"""CIFAR's pickled files, read without running code from them and checked before use.

CIFAR-10 and CIFAR-100 ship as Python pickles (``data_batch_N``, ``test_batch``, ``batches.meta``;
``train``, ``test``, ``meta``).  A pickle may name any Python function to call while it is read, so
:func:`read_pickle` uses an unpickler that admits only what these files need: dicts, lists, ints,
strings and bytes, and numpy arrays of numbers (``numpy`` ``_reconstruct``, ``ndarray``, ``dtype``
and ``scalar``, with no object dtype, checked again once the file is read; ``_codecs.encode`` to latin-1,
which is how Python 3 writes bytes in the old protocol).  Anything else is refused before it runs, and
whatever those admitted constructors raise on a crafted file (numpy's own errors) is said as damage.

:func:`read_batch` and :func:`read_class_names` then check what was read: the keys, an ``N x 3072``
``uint8`` image array, one label per image in ``0 .. classes - 1``.  Every problem raises a
:class:`CifarFileError` with one sentence that names the file, says what is wrong with it (empty,
cut off, an HTML page or a Git LFS pointer saved in its place, code inside, a key missing, labels
out of range, a wrong shape) and what to do.
"""
from __future__ import annotations

import codecs
import errno
import os
import pickle
import stat
from pathlib import Path
from typing import Any, Union

import numpy as np

from ...runtime.records import kind_of

__all__ = ["CifarFileError", "read_pickle", "read_batch", "read_class_names", "fix_advice"]

PathLike = Union[str, os.PathLike]
IMAGE_BYTES = 3 * 32 * 32


class CifarFileError(ValueError):
    """A data file that cannot be used: the message names it, says what is wrong and what to do."""


_MULTIARRAY = getattr(getattr(np, "_core", None), "multiarray", None) or np.core.multiarray  # numpy 2, else 1


class _Refused(pickle.UnpicklingError):
    """The pickle names something beyond what CIFAR's files need."""


def _dtype(*args):
    dt = np.dtype(*args)
    if dt.hasobject:
        raise _Refused("an array of Python objects (dtype object)")
    return dt


def _encode(text, encoding="utf-8", *rest):
    if str(encoding).lower().replace("-", "").replace("_", "") not in ("latin1", "iso88591"):
        raise _Refused(f"_codecs.encode with the encoding {encoding!r}")
    return codecs.encode(text, "latin-1")


def _reconstruct(subtype, shape, dtype):
    """numpy's ``_reconstruct`` (an empty array that the pickle then fills), for plain arrays of numbers only: its
    dtype argument would otherwise make an array of objects without going through ``numpy.dtype``."""
    if subtype is not np.ndarray:
        raise _Refused(f"an array of the type {getattr(subtype, '__name__', subtype)!r}")
    _dtype(dtype)
    return _MULTIARRAY._reconstruct(subtype, shape, dtype)


_ALLOWED = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): _dtype,
    ("_codecs", "encode"): _encode,
}
for _module in ("numpy.core.multiarray", "numpy._core.multiarray"):
    _ALLOWED[(_module, "_reconstruct")] = _reconstruct
    _ALLOWED[(_module, "scalar")] = _MULTIARRAY.scalar

_PLAIN = (dict, list, tuple, str, bytes, int, float, bool, type(None), np.generic)


def _objects_inside(obj: Any) -> str:
    """What ``obj`` (as the unpickler made it) holds beyond plain values and numeric arrays, in words (``""``
    for nothing): an array's dtype can still change after ``numpy.dtype`` checked it (the pickle's BUILD), so
    every array is checked once more when the whole file has been read."""
    todo, seen = [obj], 0
    while todo:
        item = todo.pop()
        seen += 1
        if seen > 1_000_000:
            return "more than a million values (no CIFAR file holds as many objects)"
        if isinstance(item, np.ndarray):
            if item.dtype.hasobject or type(item) is not np.ndarray:
                return "an array of Python objects (dtype object)"
        elif isinstance(item, dict):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, (list, tuple)):
            todo.extend(item)
        elif not isinstance(item, _PLAIN) or (isinstance(item, np.generic) and item.dtype.hasobject):
            return f"a {type(item).__name__}"
    return ""


def _array_state(state) -> None:
    """Refuse the state of an array (``ndarray.__setstate__``) unless it is numbers: a checked dtype without
    objects and raw bytes (an array of objects would bring a list)."""
    if not (isinstance(state, tuple) and len(state) == 5 and isinstance(state[2], np.dtype)
            and isinstance(state[4], (bytes, str))) or state[2].hasobject:
        raise _Refused("an array that is not made of numbers")


class _CifarUnpickler(pickle._Unpickler):
    """An unpickler that looks up only the names in ``_ALLOWED``; any other is refused unrun.  It is pickle's
    own Python implementation (as fast on these files: they are mostly one buffer), so that every BUILD is
    checked: only an array or a dtype is filled in, an array only with numbers, and a dtype whose filled-in
    state asks for objects is refused before any array uses it."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise _Refused(f"{module}.{name}") from None

    def _load_build(self) -> None:
        if len(self.stack) < 2:
            raise pickle.UnpicklingError("BUILD without an object to fill in")
        inst, state = self.stack[-2], self.stack[-1]
        if isinstance(inst, np.ndarray):
            _array_state(state)
        elif not isinstance(inst, np.dtype):
            raise _Refused(f"a {type(inst).__name__} filled in with a state")
        pickle._Unpickler.load_build(self)
        if isinstance(inst, np.dtype) and inst.hasobject:
            raise _Refused("an array of Python objects (a dtype changed to hold them)")

    dispatch[pickle.BUILD[0]] = _load_build


def fix_advice(folder: Path) -> str:
    """What to do about a damaged file in the data folder ``folder``."""
    return (f"replace the folder {folder} with a good copy (delete it and run again to download CIFAR afresh, "
            "or copy it again from where it came)")


def _what_it_is(path: Path, head: bytes, size: int) -> str:
    """What a file that is not a pickle looks like, from its first bytes."""
    text = head.lstrip().lower()
    if text.startswith(b"version https://git-lfs"):
        return "is a Git LFS pointer, not the data (the files were cloned without `git lfs pull`)"
    if text.startswith(b"<") and (b"<html" in text or b"<!doctype" in text):
        return "is an HTML page (a login or error page was saved in place of the file)"
    return f"is not a Python pickle ({size} bytes beginning with {head[:12]!r})"


def read_pickle(path: PathLike) -> Any:
    """The object pickled in ``path``, read with the restricted unpickler (see the module docstring).

    A file that is empty, not a pickle (an HTML page, a Git LFS pointer, ...), cut off, or that
    names anything beyond dicts, lists, numbers, strings, bytes and numpy arrays raises
    :class:`CifarFileError`, one sentence naming the file and what to do."""
    path = Path(path)
    advice = fix_advice(path.parent)
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as f:  # a pipe never blocks
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise CifarFileError(f"{path} is {kind_of(st.st_mode)}, not a data file: {advice}")
            head = f.read(512)
            if st.st_size == 0:
                raise CifarFileError(f"{path} is empty (0 bytes): {advice}")
            if not head.startswith(b"\x80") and head[:1] not in (b"(", b"}", b"]"):
                raise CifarFileError(f"{path} {_what_it_is(path, head, st.st_size)}: {advice}")
            f.seek(0)
            obj = _CifarUnpickler(f, encoding="latin1").load()
        inside = _objects_inside(obj)
        if inside:
            raise _Refused(inside)
        return obj
    except CifarFileError:
        raise
    except _Refused as err:
        raise CifarFileError(f"{path} was not read: it asks for {err} while being read, which no CIFAR file does "
                             f"(it could run code), so it is not the real file: {advice}") from None
    except OSError as err:
        if err.errno == errno.EISDIR:
            raise CifarFileError(f"{path} is a folder, not a data file: {advice}") from None
        raise CifarFileError(f"{path} cannot be read ({err.strerror or err}): {advice}") from None
    except Exception as err:  # whatever the admitted constructors (numpy's) raise on a crafted or damaged file
        raise CifarFileError(f"{path} is cut off or damaged ({type(err).__name__}: {str(err)[:120]}): "
                             f"{advice}") from None


def _as_dict(obj: Any, path: Path) -> dict:
    if not isinstance(obj, dict):
        raise CifarFileError(f"{path} does not hold a CIFAR batch (a dict; it holds a {type(obj).__name__}): "
                             f"{fix_advice(path.parent)}")
    return {k.decode("latin-1") if isinstance(k, bytes) else k: v for k, v in obj.items()}


def _require(d: dict, key: str, path: Path) -> Any:
    if key not in d:
        raise CifarFileError(f"{path} lacks the key {key!r} (it has {sorted(map(str, d))}): {fix_advice(path.parent)}")
    return d[key]


def read_batch(path: PathLike, label_key: str, num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(images, labels)`` of one batch file: images ``(N, 3, 32, 32)`` uint8, labels ``(N,)`` int64,
    after checking the keys, the image array (``N x 3072`` uint8) and every label (an integer in
    ``0 .. num_classes - 1``, one per image); :class:`CifarFileError` otherwise."""
    path = Path(path)
    advice = fix_advice(path.parent)
    d = _as_dict(read_pickle(path), path)
    data = _require(d, "data", path)
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != IMAGE_BYTES:
        got = (f"a {data.dtype} array of shape {data.shape}" if isinstance(data, np.ndarray)
               else f"a {type(data).__name__}")
        raise CifarFileError(f"{path}: 'data' must be an N x {IMAGE_BYTES} array of uint8 (N images of 3 x 32 x 32), "
                             f"got {got}: {advice}")
    raw = _require(d, label_key, path)
    try:
        labels = np.asarray(raw)
    except (TypeError, ValueError):
        labels = np.asarray([], dtype=object)
    if labels.ndim != 1 or not (labels.dtype.kind in "iu" or labels.size == 0):
        raise CifarFileError(f"{path}: {label_key!r} must be a list of integer labels, got {str(raw)[:60]!r}: {advice}")
    if len(labels) != len(data):
        raise CifarFileError(f"{path} has {len(data)} images but {len(labels)} labels: {advice}")
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        bad = labels[(labels < 0) | (labels >= num_classes)][0]
        raise CifarFileError(f"{path} has the label {int(bad)}, outside 0..{num_classes - 1} ({num_classes} classes): "
                             f"{advice}")
    return data.reshape(-1, 3, 32, 32), labels.astype(np.int64)


def read_class_names(path: PathLike, names_key: str, num_classes: int) -> list[str]:
    """The class names in a meta file (``batches.meta``, ``meta``), checked: one string per class."""
    path = Path(path)
    names = _require(_as_dict(read_pickle(path), path), names_key, path)
    names = [n.decode("latin-1") if isinstance(n, bytes) else n for n in names] if isinstance(names, list) else names
    if not isinstance(names, list) or len(names) != num_classes or not all(isinstance(n, str) for n in names):
        raise CifarFileError(f"{path}: {names_key!r} must be a list of {num_classes} class names, got "
                             f"{str(names)[:60]!r}: {fix_advice(path.parent)}")
    return names
