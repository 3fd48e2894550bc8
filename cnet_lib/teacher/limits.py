"""What one sandbox may use (:class:`Limits`) and the environment it starts with (:func:`sandbox_environment`).

With cgroups (:mod:`.cgroups`) the memory (every process's, and the files of the sandbox's ``/tmp``) and the
number of processes and threads are capped for the sandbox as a whole by the kernel.  Without them three things
stand in: the runner caps each of its processes' address space at the sandbox's memory and the processes of its
user (``RLIMIT_NPROC``: counted per user namespace for a teacher's uid, and for uid 65534 across the machine when
the teacher is root, so root grades one sandbox at a time then); and the grading process sums the private memory
of the sandbox's processes and counts them five times a second, and kills the sandbox above either budget
(:mod:`.sandbox_process`).  The size of ``/tmp`` (a tmpfs) caps the disk in every case, and the largest file any
process may write is capped as well.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits", "sandbox_environment", "GIB", "MIB"]

GIB = 2**30
MIB = 2**20


@dataclass(frozen=True)
class Limits:
    """One sandbox's limits: ``time_limit`` seconds for the student's code (from the moment it starts),
    ``memory_bytes`` for all its processes (its ``/tmp`` included), ``processes`` (threads count), ``tmp_bytes``
    of ``/tmp``, ``file_bytes`` for any one file, and ``startup_limit`` seconds to load torch and the library."""

    time_limit: float = 60.0
    memory_bytes: int = 2 * GIB
    processes: int = 64
    tmp_bytes: int = 256 * MIB
    file_bytes: int = 256 * MIB
    startup_limit: float = 120.0

    def __post_init__(self) -> None:
        if not self.time_limit > 0:
            raise ValueError(f"the time limit must be > 0 seconds, got {self.time_limit}")
        if self.memory_bytes < 512 * MIB:
            raise ValueError(f"a sandbox needs at least 512 MiB of memory (torch alone takes 300), got "
                             f"{self.memory_bytes / MIB:.0f} MiB")
        if self.processes < 8 or self.tmp_bytes < MIB or self.file_bytes < MIB:
            raise ValueError("a sandbox needs at least 8 processes, 1 MiB of /tmp and files of 1 MiB")

    def runner_limits(self, cgroup: bool) -> dict:
        """The resource limits the runner sets on itself before the student's code runs (see the module doc)."""
        out = {"file_bytes": self.file_bytes, "cpu_seconds": int(self.time_limit) + 30, "files": 256}
        if not cgroup:
            out["address_space"] = self.memory_bytes
            out["processes"] = self.processes
        return out

    def describe(self, cgroup: bool) -> str:
        """In words, for the gradebook and the terminal."""
        memory = f"{self.memory_bytes / GIB:g} GiB of memory for the sandbox"
        return (f"{self.time_limit:g} s, {memory}, {self.processes} processes, /tmp of {self.tmp_bytes // MIB} MiB, "
                f"files of {self.file_bytes // MIB} MiB" + (" (cgroup)" if cgroup else " (rlimits and a watchdog)"))


def sandbox_environment() -> dict:
    """The whole environment of a sandbox: nothing of the teacher's, one thread, no GPU, its own /tmp as home."""
    return {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE", "CUDA_VISIBLE_DEVICES": "",
            "MPLBACKEND": "Agg"}
