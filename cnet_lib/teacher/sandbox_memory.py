"""The memory a sandbox holds, whatever its kind, counted from outside where no cgroup counts it
(:func:`sandbox_bytes`; :mod:`.sandbox_process` sums it five times a second and stops a sandbox above its budget).

Without a cgroup the kernel charges nothing to the sandbox as a whole, and a process's resident memory
(``RssAnon``) misses what is not private and anonymous.  So the sum is, over every process of the sandbox (bwrap
and all its descendants):

* its private anonymous memory (``RssAnon``) and the shared memory it has mapped (``RssShmem``: shared anonymous
  mappings, mapped memfds, System V segments it has attached);
* every memfd it holds open (``memfd_create``: pages that need no mapping to exist), by the space they take, each
  file once;
* the files of the sandbox's own ``/tmp`` and ``/dev/shm`` (tmpfs: memory, read through ``/proc/<pid>/root``),
  each file system once.

A mapped memfd is counted twice (its mapping and its file), which only errs on the side of the budget.  System V
segments that no process has attached are refused before they can hold anything (the sandbox's system call filter,
:mod:`.seccomp`).
"""
from __future__ import annotations

import os

__all__ = ["descendants", "sandbox_bytes", "process_bytes", "held_files_bytes", "tmpfs_bytes"]


def descendants(root: int) -> list[int]:
    """``root`` and every process below it (read from ``/proc``)."""
    children: dict[int, list] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def process_bytes(pid: int) -> int:
    """A process's private anonymous memory and the shared memory it has mapped (``RssAnon + RssShmem``)."""
    total = 0
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith((b"RssAnon:", b"RssShmem:")):
                    total += int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return 0
    return total


def held_files_bytes(pids: list[int], seen: set) -> int:
    """The space of every memfd the processes hold open, each file once (``seen``: the files counted so far)."""
    total = 0
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            path = f"/proc/{pid}/fd/{fd}"
            try:
                if not os.readlink(path).startswith("/memfd:"):
                    continue
                st = os.stat(path)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def tmpfs_bytes(pids: list[int], seen: set) -> int:
    """The space used on the sandbox's own ``/tmp`` and ``/dev/shm`` (tmpfs), each file system once, none of the
    host's (``seen``: the file systems counted so far, the host's among them)."""
    total = 0
    for pid in pids:
        for where in ("tmp", "dev/shm"):
            path = f"/proc/{pid}/root/{where}"
            try:
                dev = os.stat(path).st_dev
                if dev in seen:
                    continue
                seen.add(dev)
                fs = os.statvfs(path)
            except OSError:
                continue
            total += (fs.f_blocks - fs.f_bfree) * fs.f_frsize
    return total


def _host_devices() -> set:
    out = set()
    for where in ("/tmp", "/dev/shm", "/"):
        try:
            out.add(os.stat(where).st_dev)
        except OSError:
            pass
    return out


def sandbox_bytes(pids: list[int]) -> int:
    """The memory the processes ``pids`` of one sandbox hold together (see the module doc)."""
    return (sum(process_bytes(p) for p in pids) + held_files_bytes(pids, set())
            + tmpfs_bytes(pids, _host_devices()))
