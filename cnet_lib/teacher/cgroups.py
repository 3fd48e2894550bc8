"""Limits on a sandbox as a whole, from the kernel's control groups where the grader may make them.

:meth:`Cgroups.find` looks for a writable cgroup hierarchy with the memory and pids controllers below the
grader's own cgroup: version 2 (``memory.max``, ``memory.swap.max``, ``pids.max``, ``cgroup.kill``) where the
grader's cgroup delegates both controllers, else version 1 (``memory.limit_in_bytes``, ``pids.max``), as on a
root account of a machine with the hybrid layout.  Each sandbox gets a cgroup of its own (:meth:`Cgroups.make`),
so the memory of all its processes (the files in its ``/tmp`` included: tmpfs pages are charged to it) and the
number of its processes and threads are capped together, and an out-of-memory kill is reported.  Where no such
hierarchy is writable (an ordinary account on most desktops), :meth:`Cgroups.find` returns None and the sandbox
falls back on per-process limits (see :mod:`.sandbox`).
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

__all__ = ["Cgroups", "Cgroup"]

ROOT = Path("/sys/fs/cgroup")


def _own_paths() -> dict[str, str]:
    """``{controller or "": path}`` of this process's cgroups (``""``: the version 2 hierarchy)."""
    out = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            out[c] = path
    return out


def _writable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK)


@dataclass
class Cgroup:
    """One sandbox's cgroups (one folder per hierarchy)."""

    folders: list
    version: int

    def join_files(self) -> list[Path]:
        """The files a process writes its pid to, to enter these cgroups (before it starts the sandbox)."""
        return [f / "cgroup.procs" for f in self.folders]

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the sandbox for want of memory."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        for folder in self.folders:
            try:
                text = (folder / name).read_text()
            except OSError:
                continue
            counts = dict(ln.split() for ln in text.splitlines() if len(ln.split()) == 2)
            if int(counts.get("oom_kill", 0)) > 0:
                return True
        return False

    def kill(self) -> None:
        """SIGKILL every process in the sandbox's cgroups."""
        for folder in self.folders:
            if self.version == 2 and (folder / "cgroup.kill").exists():
                try:
                    (folder / "cgroup.kill").write_text("1")
                    continue
                except OSError:
                    pass
            for pid in _pids(folder):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def remove(self, wait: float = 5.0) -> None:
        """Remove the folders once their processes are gone (waits up to ``wait`` seconds)."""
        deadline = time.monotonic() + wait
        for folder in self.folders:
            while folder.exists():
                try:
                    folder.rmdir()
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    self.kill()
                    time.sleep(0.05)


def _pids(folder: Path) -> list[int]:
    try:
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


class Cgroups:
    """Where this grading run makes its sandboxes' cgroups: a folder ``name`` below the grader's own cgroup in each
    hierarchy used (``version`` 1 or 2)."""

    def __init__(self, parents: list, version: int):
        self.parents, self.version, self._n = parents, version, 0

    @property
    def description(self) -> str:
        return f"cgroup v{self.version} (memory, pids)"

    @classmethod
    def find(cls, name: str) -> Optional["Cgroups"]:
        """The hierarchies usable for limits (see the module doc), with the run's folder ``name`` made; None when
        none is writable."""
        own = _own_paths()
        for base in (ROOT, ROOT / "unified"):
            if "" in own and (base / "cgroup.controllers").is_file():
                mine = base / own[""].lstrip("/")
                delegated = set((mine / "cgroup.subtree_control").read_text().split()) if mine.is_dir() else set()
                if {"memory", "pids"} <= delegated and _writable(mine):
                    return cls._made([mine / name], 2)
        folders = [ROOT / c / own[c].lstrip("/") for c in ("memory", "pids") if c in own]
        if len(folders) == 2 and all(_writable(f) for f in folders):
            return cls._made([f / name for f in folders], 1)
        return None

    @classmethod
    def _made(cls, parents: list, version: int) -> Optional["Cgroups"]:
        try:
            for p in parents:
                p.mkdir(exist_ok=True)
            if version == 2:
                (parents[0] / "cgroup.subtree_control").write_text("+memory +pids")
        except OSError:
            for p in parents:
                try:
                    p.rmdir()
                except OSError:
                    pass
            return None
        return cls(parents, version)

    def make(self, memory_bytes: int, processes: int) -> Cgroup:
        """A new sandbox's cgroups, with its memory (swap included) and its processes and threads capped."""
        self._n += 1
        folders = [p / f"s{self._n}" for p in self.parents]
        for f in folders:
            f.mkdir()
        if self.version == 2:
            writes = [(folders[0], "memory.max", memory_bytes), (folders[0], "memory.swap.max", 0),
                      (folders[0], "pids.max", processes)]
        else:
            memory, pids = folders
            writes = [(memory, "memory.limit_in_bytes", memory_bytes), (memory, "memory.memsw.limit_in_bytes", memory_bytes),
                      (pids, "pids.max", processes)]
        for folder, file, value in writes:
            if (folder / file).exists():
                (folder / file).write_text(str(int(value)))
        return Cgroup(folders, self.version)

    def remove(self) -> None:
        """Remove the run's folders (their sandboxes' folders first)."""
        for parent in self.parents:
            for child in sorted(parent.glob("s*")):
                Cgroup([child], self.version).remove(wait=2.0)
            try:
                parent.rmdir()
            except OSError:
                pass
