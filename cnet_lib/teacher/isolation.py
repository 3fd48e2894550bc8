"""The operating system's sandbox around one submission's exercise, and the grading run's cleaner.

**bubblewrap** (``bwrap``, the tool Flatpak uses), with every namespace of its own (:func:`bwrap_command`).
Inside, the student's code sees: the Python runtime read-only (the interpreter, the standard library, the
site-packages of the environment the grader runs in and no other: :func:`other_site_packages` are covered by an
empty folder), the students' build of cnet_lib mounted where the teacher's is installed (:mod:`.absent`) with the
files of the exercise's absent code over the originals, the grader's runner and the job (one file each), and a
private ``/tmp`` of a fixed size; nothing else of the teacher's disk, no network (an empty network namespace), its
own PID namespace (every process the code starts dies with the sandbox), its own IPC and UTS namespaces, a new
session, no capabilities, and an unprivileged user:

* the teacher is root (CI): bwrap runs privileged and ``setpriv`` drops the code to uid/gid 65534 (nobody) of the
  real system, with no capabilities and ``no_new_privs``, so file permissions protect as well;
* otherwise: a user namespace (``--unshare-user``) in which the code is uid 65534 without capabilities.

**The system call filter** (:func:`namespace_filter`, a classic BPF program bwrap loads with ``--seccomp FD``), in
both modes, for x86-64 and AArch64: ``unshare`` and ``setns`` get EPERM; ``clone`` with any ``CLONE_NEW*`` flag
EPERM (``fork``, threads and ``subprocess`` stay); ``clone3``, whose flags a classic filter cannot read, ENOSYS (so
the C library falls back on ``clone``); ``shmget`` EPERM (a System V segment outlives its processes, and without a
cgroup nothing counts it); ``add_key``, ``request_key`` and ``keyctl`` EPERM (a keyring belongs to a uid, not a
namespace: every sandbox of a root run is uid 65534 and would share one, issue 56); a call of another
architecture's table (x32, i386) EPERM; everything else is allowed.  Without it, as root, uid 65534 could make
user namespaces and, inside them, network and mount namespaces with every capability.  ``/dev/shm`` is a tmpfs of
the size of ``/tmp``; System V and POSIX IPC live in the sandbox's IPC namespace, abstract unix sockets in its
network namespace; it has no cgroup file system.

**Limits** (:class:`Limits`).  With cgroups (:class:`Cgroups`: version 2 where the grader's cgroup delegates the
memory and pids controllers, else version 1 as on a root account with the hybrid layout) the memory of all the
sandbox's processes (tmpfs pages included) and the number of its processes and threads are capped together by the
kernel, and an out-of-memory kill is reported.  Without them three things stand in: the runner caps each of its
processes' address space and the processes of its user (``RLIMIT_NPROC``: per user namespace for a teacher's uid,
across the machine for uid 65534 when the teacher is root, so root grades one sandbox at a time then), and the
grading process sums the memory the sandbox's processes hold, whatever its kind (:func:`sandbox_bytes`), and
counts them five times a second, and kills the sandbox above either budget.  The size of ``/tmp`` caps the disk,
and the largest file any process may write is capped as well.

**The janitor**: this file run as a program (``python -I isolation.py``, standard library only), started by
``python -m cnet_lib grade`` in a session of its own with a pipe on its standard input.  It reads paths, one a line
(the run's temporary folder, then its cgroup folders); when the pipe closes (the grader ended, however: finished,
interrupted, killed with SIGKILL) it waits for the sandboxes to die (``--die-with-parent``) and removes what is
left (:func:`clean`), so a run leaves no temporary files and no cgroups.

:func:`find_isolation` tries both modes, once, and says in one sentence what to do where neither starts.  This
module imports nothing of cnet_lib.
"""
from __future__ import annotations

import errno
import os
import platform
import shutil
import signal
import site
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

__all__ = ["Isolation", "SandboxError", "find_isolation", "bwrap_command", "runtime_paths", "other_site_packages",
           "namespace_filter", "Limits", "sandbox_environment", "Cgroups", "Cgroup", "descendants", "sandbox_bytes",
           "clean", "NOBODY", "REFUSAL", "UNSAFE", "GIB", "MIB"]

NOBODY = 65534
GIB = 2**30
MIB = 2**20
REFUSAL = ("grading runs every submission in an operating-system sandbox (bubblewrap), and none can start here "
           "({why}): on Debian or Ubuntu install it (sudo apt-get install bubblewrap); on macOS or Windows grade in "
           "a Linux VM or WSL 2, or in a Linux container that may create namespaces and mount /proc (docker run "
           "--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt "
           "systempaths=unconfined ...), or in a Colab runtime after "
           "!apt-get install bubblewrap; --unsafe-no-sandbox grades without one (the students' code then runs as "
           "you, and the gradebook says so)")


class SandboxError(RuntimeError):
    """No sandbox can start, or a sandbox cannot be set up; the message says why and what to do."""


# ----------------------------------------------------------------------------- limits
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
        """The resource limits the runner sets on itself before the student's code runs (the address space and
        the processes only where no cgroup caps the sandbox)."""
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


# ----------------------------------------------------------------------------- the system call filter
CLONE_NAMESPACES = 0x7E020000
"""CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET."""
SYSCALLS = {
    "x86_64": {"arch": 0xC000003E, "clone": 56, "unshare": 272, "setns": 308, "clone3": 435, "shmget": 29,
               "add_key": 248, "request_key": 249, "keyctl": 250},
    "aarch64": {"arch": 0xC00000B7, "clone": 220, "unshare": 97, "setns": 268, "clone3": 435, "shmget": 194,
                "add_key": 217, "request_key": 218, "keyctl": 219},
}
REFUSED = ("unshare", "setns", "shmget", "add_key", "request_key", "keyctl")
"""The calls refused with EPERM whatever their arguments."""
_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def namespace_filter(machine: Optional[str] = None) -> Optional[bytes]:
    """The filter program (see the module doc) for ``machine`` (default: this one), as bwrap reads it; None for an
    architecture it does not know (the sandbox then runs without one, and says so)."""
    arch = _MACHINES.get((machine or platform.machine()).lower())
    if arch is None:
        return None
    nr = SYSCALLS[arch]
    eperm, enosys = _ERRNO | errno.EPERM, _ERRNO | errno.ENOSYS
    refused = [nr[name] for name in REFUSED]
    n = len(refused)
    # 0-3 load and check; 4 x32; 5..4+n the refused calls; 5+n clone3; 6+n to 8+n clone and its flags; the returns.
    # A jump counts the instructions it skips: from instruction i, "to j" is j - i - 1.
    eperm_at, enosys_at, allow_at = 9 + n, 10 + n, 11 + n
    program = [
        _op(_LD_W_ABS, 4),                       # 0: A = arch
        _op(_JEQ, nr["arch"], 1, 0),             # 1: our table? skip the refusal
        _op(_RET, eperm),                        # 2: another architecture's call
        _op(_LD_W_ABS, 0),                       # 3: A = the system call's number
        _op(_JGE, 0x40000000, eperm_at - 5, 0),  # 4: x32 (x86-64) -> EPERM
    ]
    for i, number in enumerate(refused, start=5):
        program.append(_op(_JEQ, number, eperm_at - i - 1, 0))                 # 5..4+n: -> EPERM
    program += [
        _op(_JEQ, nr["clone3"], enosys_at - (5 + n) - 1, 0),                   # 5+n: -> ENOSYS
        _op(_JEQ, nr["clone"], 0, allow_at - (6 + n) - 1),                     # 6+n: clone reads its flags, else allow
        _op(_LD_W_ABS, 16),                                                    # 7+n: A = the low word of clone's flags
        _op(_JSET, CLONE_NAMESPACES, 0, 2),                                    # 8+n: a namespace flag -> EPERM, else allow
        _op(_RET, eperm),                                                      # 9+n
        _op(_RET, enosys),                                                     # 10+n
        _op(_RET, _ALLOW),                                                     # 11+n
    ]
    return b"".join(program)


# ----------------------------------------------------------------------------- bubblewrap
@dataclass(frozen=True)
class Isolation:
    """How submissions run: ``mode`` ``"root"`` (privileged bwrap, then setpriv to nobody), ``"user"`` (a user
    namespace) or ``"none"`` (``--unsafe-no-sandbox``); ``bwrap`` its path; ``options`` the optional flags this
    bwrap supports (``--size``, ``--disable-userns``)."""

    mode: str
    bwrap: str = ""
    setpriv: str = ""
    options: frozenset = field(default_factory=frozenset)

    def describe(self) -> str:
        """In words, for the gradebook and the terminal."""
        if self.mode == "none":
            return "NONE (--unsafe-no-sandbox: the students' code ran as the teacher, with the teacher's files)"
        who = "uid 65534 via setpriv" if self.mode == "root" else "uid 65534 in a user namespace"
        return f"bubblewrap ({who}; no network, own PID namespace, read-only runtime of the grader's environment only)"


UNSAFE = Isolation("none")


def runtime_paths() -> list[Path]:
    """The folders the Python runtime needs, outermost only: the interpreter's prefixes and site-packages."""
    wanted = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    wanted.add(Path(sys.executable).resolve().parent.parent)
    wanted |= {Path(p).resolve() for p in site.getsitepackages() if Path(p).is_dir()}
    wanted = {p for p in wanted if p != Path("/") and not _under(p, Path("/usr"))}
    return sorted(p for p in wanted if not any(q != p and _under(p, q) for q in wanted))


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


_SITE_GLOBS = ("lib*/python3*/site-packages", "lib*/python3*/dist-packages", "lib/python3/dist-packages",
               "local/lib*/python3*/site-packages", "local/lib*/python3*/dist-packages")


def other_site_packages() -> list[Path]:
    """The folders of Python packages that the runtime's mounts and ``/usr`` would show besides the environment
    the grader runs in (its ``sys.path``): the base interpreter's site-packages under a virtual environment, a
    distribution's ``dist-packages``.  Each holds a second copy of a library (scipy, say) in which nothing is taken
    out for an exercise, so the sandbox covers each with an empty folder."""
    own = {Path(p).resolve() for p in [*site.getsitepackages(), *sys.path] if p and Path(p).is_dir()}
    found = set()
    for root in (*runtime_paths(), Path("/usr")):
        for pattern in _SITE_GLOBS:
            for path in root.glob(pattern):
                real = path.resolve()
                if real.is_dir() and not any(_under(o, real) for o in own):  # not the environment's, nor above it
                    found.add(real)
    return sorted(found)


def _system_binds() -> list[str]:
    """``/usr`` read-only, ``/bin``, ``/lib*``, ``/sbin`` as the host has them (symbolic links or folders), and the
    dynamic linker's cache."""
    out = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            out += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            out += ["--ro-bind", str(path), str(path)]
    if Path("/etc/ld.so.cache").is_file():
        out += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    return out


def _parents(targets: Sequence[Path], bound: Sequence[Path]) -> list[str]:
    """``--dir`` (mode 0755) for every missing parent of ``targets`` outside the folders already ``bound``."""
    out, made = [], {Path("/")}
    for target in targets:
        for parent in reversed(target.parents):
            if parent in made or any(_under(parent, b) for b in bound):
                continue
            made.add(parent)
            out += ["--perms", "0755", "--dir", str(parent)]
    return out


def bwrap_command(iso: Isolation, *, library: Optional[tuple[Path, Path]], overlays: Sequence, hidden: Sequence[Path],
                  files: Sequence[tuple[Path, str]], empty: Path, tmp_bytes: int, env: dict, argv: Sequence[str],
                  seccomp_fd: Optional[int] = None) -> list:
    """The bwrap command line that runs ``argv`` in a sandbox (see the module doc): ``library`` a folder and the
    path it is mounted at, each overlay's source over its target, each ``hidden`` folder replaced by the ``empty``
    folder, ``files`` (source, path inside) read-only, a ``/tmp`` and a ``/dev/shm`` of ``tmp_bytes`` each, only
    ``env`` in the environment, and the system call filter read from ``seccomp_fd``."""
    runtime = runtime_paths()
    size = ["--size", str(int(tmp_bytes))] if "--size" in iso.options else []
    cmd = [iso.bwrap, "--unshare-pid", "--as-pid-1", "--unshare-net", "--unshare-ipc", "--unshare-uts",
           "--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    if iso.mode == "root":
        cmd += ["--cap-add", "CAP_SETUID,CAP_SETGID"]
    else:
        cmd += ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
        cmd += ["--disable-userns"] if "--disable-userns" in iso.options else []
    cmd += _system_binds()
    # /tmp first: what is bound below lands on top of it (a checkout, a venv or the runner under /tmp stays visible)
    cmd += size + ["--perms", "1777", "--tmpfs", "/tmp"]
    cmd += _parents(runtime, ()) + [a for p in runtime for a in ("--ro-bind", str(p), str(p))]
    cmd += [a for p in other_site_packages() for a in ("--ro-bind", str(empty), str(p))]
    if library is not None:
        cmd += _parents([library[1]], runtime) + ["--ro-bind", str(library[0]), str(library[1])]
    cmd += [a for o in overlays for a in ("--ro-bind", str(o.source), str(o.target))]
    cmd += [a for h in hidden for a in ("--ro-bind", str(empty), str(h))]
    cmd += _parents([Path(inside) for _, inside in files], runtime)
    cmd += [a for src, inside in files for a in ("--ro-bind", str(src), inside)]
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    cmd += size + ["--perms", "1777", "--tmpfs", "/dev/shm"]
    cmd += ["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []
    cmd += ["--chdir", "/tmp", "--clearenv"] + [a for k, v in sorted(env.items()) for a in ("--setenv", k, str(v))]
    drop = [iso.setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--"] if iso.mode == "root" else []
    return cmd + ["--", *drop, *argv]


def _probe(iso: Isolation, workdir: Path) -> Optional[str]:
    """None when ``iso`` starts a sandbox, with its system call filter, in which Python runs as uid 65534 with
    nothing of ``workdir`` visible; else why not (bwrap's own words)."""
    check = ("import os, sys; assert os.getuid() == 65534, os.getuid(); "
             f"assert not os.path.exists({str(workdir)!r}); print('ok')")
    program = namespace_filter()
    read, write = os.pipe() if program is not None else (None, None)
    cmd = bwrap_command(iso, library=None, overlays=(), hidden=(), files=(), empty=workdir, tmp_bytes=2**20,
                        env={"PATH": "/usr/bin:/bin"}, argv=[sys.executable, "-I", "-S", "-c", check], seccomp_fd=read)
    try:
        if write is not None:
            os.write(write, program)
            os.close(write)
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, pass_fds=(read,) if read else ())
    except (OSError, subprocess.TimeoutExpired) as err:
        return str(err)
    finally:
        if read is not None:
            os.close(read)
    if out.returncode == 0 and out.stdout.strip() == "ok":
        return None
    return (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[-1][:300]


def _options(bwrap: str) -> frozenset:
    """The optional flags this bwrap knows (``--size`` from 0.7, ``--disable-userns`` from 0.8)."""
    try:
        text = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(o for o in ("--size", "--disable-userns") if o in text)


def find_isolation(workdir: Path, unsafe: bool = False) -> Isolation:
    """The sandbox this machine can start (see the module doc), tried in ``workdir``; :data:`UNSAFE` when
    ``unsafe``; SandboxError with :data:`REFUSAL` when none starts."""
    if unsafe:
        return UNSAFE
    bwrap = shutil.which("bwrap")
    if bwrap is None or not sys.platform.startswith("linux"):
        raise SandboxError(REFUSAL.format(why="bwrap is not installed" if sys.platform.startswith("linux")
                                          else f"{sys.platform} is not Linux"))
    options, setpriv = _options(bwrap), shutil.which("setpriv")
    tries = ([Isolation("root", bwrap, setpriv, options)] if os.geteuid() == 0 and setpriv else [])
    tries.append(Isolation("user", bwrap, "", options))
    reasons = []
    for iso in tries:
        why = _probe(iso, Path(workdir))
        if why is None:
            return iso
        reasons.append(f"{iso.mode}: {why}")
    raise SandboxError(REFUSAL.format(why="; ".join(reasons)))


# ----------------------------------------------------------------------------- cgroups
CGROUP_ROOT = Path("/sys/fs/cgroup")


def _own_cgroups() -> dict[str, str]:
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


def _kill_cgroup(folder: Path) -> None:
    """SIGKILL every process of the cgroup ``folder`` (``cgroup.kill`` where version 2 has it)."""
    if (folder / "cgroup.kill").exists():
        try:
            (folder / "cgroup.kill").write_text("1")
            return
        except OSError:
            pass
    try:
        pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _remove_cgroup(folder: Path, wait: float) -> None:
    """Remove the cgroup ``folder`` once its processes are gone, killing them, for up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while folder.exists():
        try:
            folder.rmdir()
        except OSError:
            _kill_cgroup(folder)
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)


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
            _kill_cgroup(folder)

    def remove(self, wait: float = 5.0) -> None:
        """Remove the folders once their processes are gone (waits up to ``wait`` seconds)."""
        for folder in self.folders:
            _remove_cgroup(folder, wait)


class Cgroups:
    """Where this grading run makes its sandboxes' cgroups: a folder ``name`` below the grader's own cgroup in each
    hierarchy used (``version`` 1 or 2)."""

    def __init__(self, parents: list, version: int):
        self.parents, self.version, self._n = parents, version, 0

    @classmethod
    def find(cls, name: str) -> Optional["Cgroups"]:
        """The hierarchies usable for limits (see the module doc), with the run's folder ``name`` made; None when
        none is writable (the sandbox then falls back on per-process limits and the watchdog)."""
        own = _own_cgroups()
        for base in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
            if "" in own and (base / "cgroup.controllers").is_file():
                mine = base / own[""].lstrip("/")
                delegated = set((mine / "cgroup.subtree_control").read_text().split()) if mine.is_dir() else set()
                if {"memory", "pids"} <= delegated and _writable(mine):
                    return cls._made([mine / name], 2)
        folders = [CGROUP_ROOT / c / own[c].lstrip("/") for c in ("memory", "pids") if c in own]
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
                _remove_cgroup(child, 2.0)
            try:
                parent.rmdir()
            except OSError:
                pass


# ----------------------------------------------------------------------------- memory counted from outside
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


def _process_bytes(pid: int) -> int:
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


def _memfd_bytes(pids: list[int]) -> int:
    """The space of every memfd the processes hold open, each file once."""
    total, seen = 0, set()
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


def _tmpfs_bytes(pids: list[int]) -> int:
    """The space used on the sandbox's own ``/tmp`` and ``/dev/shm`` (tmpfs), each file system once, none of the
    host's."""
    total, seen = 0, set()
    for where in ("/tmp", "/dev/shm", "/"):
        try:
            seen.add(os.stat(where).st_dev)
        except OSError:
            pass
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


def sandbox_bytes(pids: list[int]) -> int:
    """The memory the processes ``pids`` of one sandbox (bwrap and all its descendants) hold together, where no
    cgroup counts it: over every process its private anonymous memory and the shared memory it has mapped (shared
    anonymous mappings, mapped memfds, attached System V segments), every memfd held open (pages that need no
    mapping to exist), and the files of the sandbox's own ``/tmp`` and ``/dev/shm`` (read through
    ``/proc/<pid>/root``).  A mapped memfd counts twice, which only errs on the side of the budget; System V
    segments no process has attached are refused by the system call filter before they can hold anything."""
    return sum(_process_bytes(p) for p in pids) + _memfd_bytes(pids) + _tmpfs_bytes(pids)


# ----------------------------------------------------------------------------- the janitor
def clean(paths: list[str], wait: float = 10.0) -> None:
    """Remove the folder ``paths[0]`` and the cgroup folders ``paths[1:]`` (children first), retrying up to
    ``wait`` seconds while processes in them end."""
    deadline = time.monotonic() + wait
    folder, cgroups = (paths[0] if paths else ""), [Path(c) for c in paths[1:]]
    while True:
        if folder and os.path.lexists(folder):
            shutil.rmtree(folder, ignore_errors=True)
        for c in cgroups:
            if c.is_dir():
                for child in sorted(p for p in c.iterdir() if p.is_dir()):
                    _remove_cgroup(child, 0.0)
                _remove_cgroup(c, 0.0)
        if not (folder and os.path.lexists(folder)) and not any(c.is_dir() for c in cgroups):
            return
        if time.monotonic() > deadline:
            return
        time.sleep(0.1)


def _janitor() -> int:
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    clean([line.strip() for line in sys.stdin if line.strip()])
    return 0


if __name__ == "__main__":
    sys.exit(_janitor())
