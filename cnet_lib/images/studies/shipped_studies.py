"""The studies that ship beside a shipped model, read on any machine, and what ran to compute them.

A study's cache key names the device type it ran on (and, for a sweep, bf16 autocast), because its numbers
can differ by a rounding from one device to another.  The ``gpu`` preset's studies were computed on a GPU; on
a machine without one, the key a chapter asks for names the CPU, so no shipped file matched and the chapter
computed the study again, silently and for many minutes (the adaptive-step study: about a quarter of an
hour on two cores).  A shipped study is the book's measurement, not a cache to rebuild:

* :func:`shipped_stand_ins` finds, beside a *shipped* run, the studies whose key is the one asked for but for
  the device and the autocast they ran with (:data:`MACHINE_FIELDS`), for the cached-study runner to read
  in its place (:func:`cnet_lib.images.studies.study_cache.cached_study`, ``also=``); the line that says
  it was loaded also says where it ran;
* :func:`announce_recompute` says, before a shipped run's study is computed after all, that it is being
  computed and for about how long, from what the shipped file took where it ran (never silently);
* where a study ran and in what arithmetic are said from its record
  (:func:`cnet_lib.images.studies.study_cache.ran_on`, :func:`~cnet_lib.images.studies.study_cache.precision`).
"""
from __future__ import annotations

import json
from typing import Mapping, Optional

from ...runtime.json_cache import plain
from ...runtime.records import DamagedRecord, load_json
from ..runs.shipped import SHIPPED
from .seed_cached import SEEDS_FILE, read_seeds_file
from .study_cache import StudyFile, precision, ran_on
from ..training.evaluation import checked_rows

__all__ = ["MACHINE_FIELDS", "shipped_stand_ins", "announce_recompute", "shipped_sweep_file", "shipped_seeds"]

MACHINE_FIELDS = ("device", "amp")
"""The fields of a study's key that say where and how it ran, not what it measured."""


def _what_it_measured(key: Mapping) -> dict:
    return {k: v for k, v in plain(dict(key)).items() if k not in MACHINE_FIELDS}


def _record(path) -> Optional[dict]:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return obj if isinstance(obj, dict) and isinstance(obj.get("key"), dict) else None


def shipped_stand_ins(run, prefix: str, key: Mapping) -> tuple:
    """The studies shipped beside ``run`` (named ``<prefix>*.json``) that measured what ``key`` asks for on
    another device or with other autocast, as :class:`StudyFile` s whose note says that the shipped numbers are
    shown; none for a run that did not ship with the book (a reader's own models are studied where they are)."""
    if not getattr(run, "shipped", False):
        return ()
    want = _what_it_measured(key)
    found = []
    for path in sorted(run.out_dir.glob(f"{prefix}*.json")):
        record = _record(path)
        if record is None or plain(record["key"]) == plain(dict(key)) or _what_it_measured(record["key"]) != want:
            continue
        found.append(StudyFile(path, record["key"], f"; shipped with the book, so its numbers are shown here rather "
                                                    f"than computed again on this machine ({precision(record)})"))
    return tuple(found)


def announce_recompute(run, prefix: str, what: str) -> None:
    """Say, before a shipped run's study is computed here after all (none of its shipped files measured what is
    asked: another grid, say), what is computed and about how long the shipped one took where it ran."""
    if not getattr(run, "shipped", False):
        return
    took = [r for r in (_record(p) for p in sorted(run.out_dir.glob(f"{prefix}*.json"))) if r]
    hint = (f"; the shipped one took {max(r.get('seconds', 0) for r in took):.0f} s on {ran_on(took[0])}, and a CPU "
            "can take many times that") if took else ""
    print(f"{what}: no study shipped with the book measured this, so it is computed now{hint}.", flush=True)


def shipped_sweep_file(preset: str, run: str) -> Optional[dict]:
    """The sweep that ships beside ``preset``'s ``run`` (``cnet_lib/shipped/<preset>-<run>/sweep-*.json``), parsed
    (its ``rows`` checked as a sweep's, :func:`cnet_lib.images.training.evaluation.checked_rows`), or ``None`` when
    that run does not ship one; a folder with several, or one that cannot be read, raises a ValueError that says to
    ship the preset again."""
    found = sorted((SHIPPED / f"{preset}-{run}").glob("sweep-*.json"))
    if not found:
        return None
    if len(found) > 1:
        raise ValueError(f"{SHIPPED / f'{preset}-{run}'} holds {len(found)} sweeps, not one: restudy the shipped "
                         f"models (cnet ship {preset} --restudy)")
    try:
        payload = load_json(found[0])
        checked_rows(payload["rows"])
    except (OSError, DamagedRecord, KeyError, TypeError, ValueError) as err:
        raise ValueError(f"the shipped sweep {found[0]} cannot be read ({err}): reinstall cnet_lib, or ship the "
                         f"preset again (cnet ship {preset})") from None
    return payload


def shipped_seeds(preset: str) -> list:
    """The records of the seeds file that ships with ``preset``'s models (``seeds.json`` beside ``rk4_refined``), one
    per training seed; none when it ships none."""
    payload = read_seeds_file(SHIPPED / f"{preset}-rk4_refined" / SEEDS_FILE)
    return list(payload["seeds"]) if payload else []
