"""The operating system's sandbox around one submission's exercise: bubblewrap (``bwrap``), the tool Flatpak
uses, with every namespace of its own.

:func:`bwrap_command` builds the command line.  Inside, the student's code sees: the Python runtime read-only
(the interpreter, the standard library, the site-packages of the environment the grader runs in and no other:
:func:`other_site_packages` are covered by an empty folder), the students' build of cnet_lib mounted where the
teacher's is installed (:mod:`.grading_library`) with the files of the exercise's absent code over the originals,
the grader's runner and the job (one file each), and a private ``/tmp`` of a fixed size; nothing else of the
teacher's disk (no home, no key folder, no submissions, no gradebook), no network (its own empty network
namespace), its own PID namespace (the grading process and every other process are invisible, and every process
the code starts dies with the sandbox), its own IPC and UTS namespaces, a new session (no terminal), no
capabilities, and an unprivileged user:

* the teacher is root (CI): bwrap runs privileged and ``setpriv`` drops the code to uid/gid 65534 (nobody) of
  the real system, with no capabilities and ``no_new_privs``, so file permissions protect as well;
* otherwise: a user namespace (``--unshare-user``) in which the code is uid 65534 without capabilities (the
  kernel sees the teacher's uid, which owns nothing visible inside) and may create no further namespaces.

In both, a system call filter (:mod:`.seccomp`) refuses every new namespace (``unshare``, ``setns``, ``clone``
with a namespace flag), System V shared memory and the kernel's keyrings, and ``/dev/shm`` is a tmpfs of the size
of ``/tmp``.  Nothing a sandbox leaves in the kernel reaches another: System V and POSIX IPC live in its IPC
namespace, abstract unix sockets in its network namespace, both gone with it; it has no cgroup file system.

:func:`find_isolation` tries both, once, and says in one sentence what to do where neither starts.
"""
from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from .seccomp import namespace_filter

__all__ = ["Isolation", "SandboxError", "find_isolation", "bwrap_command", "runtime_paths", "other_site_packages",
           "NOBODY", "REFUSAL", "UNSAFE"]

NOBODY = 65534
REFUSAL = ("grading runs every submission in an operating-system sandbox (bubblewrap), and none can start here "
           "({why}): on Debian or Ubuntu install it (sudo apt-get install bubblewrap); on macOS or Windows grade in "
           "a Linux VM or WSL 2, or in a Linux container that may create namespaces and mount /proc (docker run "
           "--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt "
           "systempaths=unconfined ...), or in a Colab runtime after "
           "!apt-get install bubblewrap; --unsafe-no-sandbox grades without one (the students' code then runs as "
           "you, and the gradebook says so)")


class SandboxError(RuntimeError):
    """No sandbox can start, or a sandbox cannot be set up; the message says why and what to do."""


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
    ``env`` in the environment, and the system call filter read from ``seccomp_fd`` (:mod:`.seccomp`)."""
    runtime = runtime_paths()
    cmd = [iso.bwrap, "--unshare-pid", "--as-pid-1", "--unshare-net", "--unshare-ipc", "--unshare-uts",
           "--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    if iso.mode == "root":
        cmd += ["--cap-add", "CAP_SETUID,CAP_SETGID"]
    else:
        cmd += ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
        cmd += ["--disable-userns"] if "--disable-userns" in iso.options else []
    cmd += _system_binds()
    # /tmp first: what is bound below lands on top of it (a checkout, a venv or the runner under /tmp stays visible)
    cmd += (["--size", str(int(tmp_bytes))] if "--size" in iso.options else []) + ["--perms", "1777", "--tmpfs", "/tmp"]
    cmd += _parents(runtime, ()) + [a for p in runtime for a in ("--ro-bind", str(p), str(p))]
    cmd += [a for p in other_site_packages() for a in ("--ro-bind", str(empty), str(p))]
    if library is not None:
        cmd += _parents([library[1]], runtime) + ["--ro-bind", str(library[0]), str(library[1])]
    cmd += [a for o in overlays for a in ("--ro-bind", str(o.source), str(o.target))]
    cmd += [a for h in hidden for a in ("--ro-bind", str(empty), str(h))]
    cmd += _parents([Path(inside) for _, inside in files], runtime)
    cmd += [a for src, inside in files for a in ("--ro-bind", str(src), inside)]
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    cmd += (["--size", str(int(tmp_bytes))] if "--size" in iso.options else []) + ["--perms", "1777", "--tmpfs", "/dev/shm"]
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
