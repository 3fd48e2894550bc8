"""JSON caches that survive damage: read when whole and current, rebuilt otherwise, kept when unwritable.

A cache (a sweep, a robustness study, the θ snapshots of a run) is a JSON file computed from
something else.  :func:`read_cache` returns it only when it parses and passes its check (for a
keyed cache: it records the very key it was computed from); a file that is cut off, not JSON, nested
too deeply, too large, of an older format, or not a file at all (a link, a pipe, a folder: read
without following or blocking, :func:`cnet_lib.runtime.records.load_json`) is renamed
``<name>.damaged-<time>`` (kept, never deleted), one sentence says so, and the caller computes it
again.  :func:`write_cache` writes atomically; when the folder refuses (read-only, full disk) one
sentence says that the results are used for this session only, and nothing computed is lost.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Union

from .checkpoint import CheckpointSaveError, atomic_write_text
from .files import set_aside, write_problem
from .records import DamagedRecord, load_json

__all__ = ["plain", "read_cache", "keyed", "write_cache"]

PathLike = Union[str, os.PathLike]


def _print(text: str) -> None:
    print(text, flush=True)


def plain(value: Any) -> Any:
    """``value`` as JSON gives it back (tuples become lists): what a cached key is compared with."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def keyed(key: Mapping, *fields: str) -> Callable[[Any], Optional[str]]:
    """A check for :func:`read_cache`: the cache is a dict whose ``"key"`` is ``key`` and which has
    every one of ``fields``."""
    want = plain(dict(key))

    def check(obj: Any) -> Optional[str]:
        if not isinstance(obj, dict):
            return f"it holds a {type(obj).__name__}, not a cache"
        if plain(obj.get("key")) != want:
            return "it was computed from something else, or by an older version (its key differs)"
        missing = [f for f in fields if f not in obj]
        return f"it lacks {', '.join(missing)} (an older format)" if missing else None

    return check


def read_cache(path: PathLike, what: str, check: Callable[[Any], Optional[str]],
               say: Callable[[str], None] = _print) -> Optional[Any]:
    """The parsed JSON at ``path`` when it is whole and ``check(obj)`` finds nothing wrong (returns
    ``None``); ``None`` when there is no file.  A damaged or older-format file is set aside
    (``<name>.damaged-<time>``) with one sentence through ``say`` naming ``what`` and the file, and
    ``None`` is returned, so that the caller computes it again."""
    path = Path(path)
    if not os.path.lexists(path):
        return None
    try:
        obj = load_json(path)
        problem = check(obj)
    except DamagedRecord as err:
        problem = str(err)
    except OSError as err:
        problem = f"it cannot be read ({err.strerror or err})"
    except RecursionError:
        problem = "it is nested too deeply to be read (no file of this library is)"
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as err:
        problem = f"it is not in the expected format ({type(err).__name__}: {str(err)[:80]})"
    if problem is None:
        return obj
    try:
        aside = set_aside(path)
        where = f"it was moved to {aside.name} (kept) and is computed again"
    except OSError as err:
        where = f"it cannot be moved aside ({write_problem(err)}), so it is computed again for this session only"
    say(f"{what}: {path} cannot be used: {problem}; {where}.")
    return None


def write_cache(path: PathLike, text: str, what: str, say: Callable[[str], None] = _print) -> bool:
    """Write ``text`` to ``path`` atomically; True when written.  When the folder refuses (read-only,
    no permission, a full disk) one sentence through ``say`` says so and what to do, and False is
    returned: the caller keeps its results for this session."""
    try:
        atomic_write_text(path, text)
        return True
    except CheckpointSaveError as err:
        say(f"{what}: could not be saved in {path} ({write_problem(err)}), so it is used for this session only and "
            "computed again next time; to keep it, set CNET_RUNS_DIR to a folder you can write to (or free some "
            "space).")
        return False
